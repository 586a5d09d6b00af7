"""phase_summary's resource columns and bottleneck label from hand-built node_seconds (Spark local).

Known answers: every node row carries constant figures, so each phase's busiest-node mean is the figure given;
the label follows sizing.rules.bottleneck, evaluated on the same values in plain Python as the cross-check.
"""

from __future__ import annotations

import pytest

from sizing import rules
from sizing.layout import RunKey
from spark_jobs import phase_summary as ps
from tests.spark_records import client_rows, frames, node_rows, phase_row

pytestmark = pytest.mark.spark

LOCAL = RunKey("c", "n2-c5.2xlarge-gp2", "increasing-intensity", "R1")
AWS = RunKey("c", "n2-c5.2xlarge-gp2", "aws-run", "R1")


def test_busiest_node_figures_missing_seconds_limits_and_bottleneck(spark):
    phases, clients, nodes = [], [], []
    for key in (LOCAL, AWS):
        for number in (1, 2):
            start = (number - 1) * 10
            phases.append(phase_row(key, number, start, 10, 2, 100))
            clients += client_rows(key, number, 0, range(start, start + 10), start + 2, target_rate=100,
                                   per_second=100)
    # local phase 1: light (none); phase 2: node b at 95 % (cpu); node a down 3 steady seconds of phase 2
    nodes += node_rows(LOCAL, 1, "a", range(0, 10), cpu_busy=0.2) + node_rows(LOCAL, 1, "b", range(0, 10),
                                                                               cpu_busy=0.3)
    nodes += node_rows(LOCAL, 2, "a", range(10, 20), cpu_busy=0.5, missing=range(14, 17))
    nodes += node_rows(LOCAL, 2, "b", range(10, 20), cpu_busy=0.95, write_bytes=50e6)
    # aws phase 1: 2900 write IOPS of gp2's 3000 (disk); phase 2: 320 MB/s each way = 2560 Mbit/s of 2500 (network)
    nodes += node_rows(AWS, 1, "a", range(0, 10), cpu_busy=0.4, target="aws", write_bytes=40e6, write_ops=2900)
    nodes += node_rows(AWS, 2, "a", range(10, 20), cpu_busy=0.4, target="aws", net_bytes=320e6, write_ops=10)
    limits = spark.createDataFrame([("n2-c5.2xlarge-gp2", 2500.0, 3000.0, 262.144)], ps.RESOURCE_LIMITS_DDL)
    summary = ps.summarise(frames(spark, "phases", phases),
                           ps.ClientRecords.of(frames(spark, "client_seconds", clients)),
                           frames(spark, "accounting", []), frames(spark, "events", []),
                           frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000),
                           node_seconds=frames(spark, "node_seconds", nodes), resource_limits=limits)
    got = {(r["scenario"], r["phase"]): r.asDict() for r in summary.collect()}
    light, hot = got[(LOCAL.scenario, 1)], got[(LOCAL.scenario, 2)]
    assert (light["cpu_busiest_node"], light["cpu_busiest_mean"], light["bottleneck"]) == ("b", 0.3, "none")
    assert (hot["cpu_busiest_node"], hot["cpu_busiest_p95"], hot["bottleneck"]) == ("b", 0.95, "cpu")
    assert hot["bottleneck_detail"].startswith("cpu: b mean 0.95")
    assert hot["disk_write_mb_s"] == pytest.approx(50.0) and hot["disk_busiest_node"] == "b"
    assert (hot["cluster_nodes"], hot["resource_nodes"], hot["resource_missing_seconds"]) == (2, 2, 3)
    # a local run has no catalog limits: a disk this busy would otherwise be judged against gp2's
    assert light["volume_iops_limit"] is None and light["resource_target"] == "local"
    disk, net = got[(AWS.scenario, 1)], got[(AWS.scenario, 2)]
    assert disk["volume_iops_limit"] == 3000.0 and disk["disk_write_iops"] == pytest.approx(2900)
    assert disk["disk_write_kb_per_op"] == pytest.approx(40e6 / 2900 / 1000)
    assert disk["bottleneck"] == "disk"
    assert net["net_peak_mbit_s"] == pytest.approx(2560.0) and net["bottleneck"] == "network"
    assert net["net_client_mb_s"] == pytest.approx(320.0)  # half of 640 MB/s in + out
    # the plain-value rule gives the same labels on the same figures
    for row in (light, hot, disk, net):
        assert rules.bottleneck(
            valid=row["valid"], alarm=bool(row["broker_alarm"]), mem_max_fraction=row["broker_mem_max_fraction"],
            busiest_cpu_mean=row["cpu_busiest_mean"], machine_cpu_mean=row["machine_cpu_busy_mean"],
            write_iops=row["disk_write_iops"], iops_limit=row["volume_iops_limit"],
            write_mb_s=row["disk_write_mb_s"], mb_s_limit=row["volume_mb_s_limit"],
            net_mbit_s=row["net_peak_mbit_s"], mbit_s_limit=row["network_limit_mbit_s"]) == row["bottleneck"]


def test_the_plain_rule_names_the_generator_first_and_guesses_nothing_without_figures():
    base = dict(alarm=False, mem_max_fraction=0.1, busiest_cpu_mean=0.99, machine_cpu_mean=1.0, write_iops=None,
                iops_limit=None, write_mb_s=None, mb_s_limit=None, net_mbit_s=None, mbit_s_limit=None)
    assert rules.bottleneck(valid=False, **base) == "generator"
    assert rules.bottleneck(valid=True, **base) == "cpu"
    assert rules.bottleneck(valid=True, **{**base, "alarm": True}) == "memory"
    idle = {**base, "busiest_cpu_mean": 0.1, "machine_cpu_mean": 0.2}
    assert rules.bottleneck(valid=True, **idle) == "none"
    assert rules.bottleneck(valid=True, resources_seen=False, **idle) is None


def test_the_catalog_limits_frame_has_every_config_and_keeps_unknown_limits_null(spark, monkeypatch):
    """Known answer: sizing.catalog.resource_limits per config of quorum-sizing-2020 (21 configs, gp2/io1/st1);
    the frame is built from pandas (no Python RDD job), where a missing limit must stay null, never NaN: the
    catalog knows every limit here, so one config's lookup is made to return none."""
    import math
    from pathlib import Path

    from sizing.catalog import ResourceLimits, resource_limits
    from sizing.spec import load_campaign

    campaign = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / "quorum-sizing-2020.yaml")
    unknown = campaign.clusters[0]

    def lookup(catalog, instance_type, volume_type, iops=None, throughput=None):
        if (instance_type, volume_type) == (unknown.instance_type, unknown.volume.type):
            return ResourceLimits(None, None, None)
        return resource_limits(catalog, instance_type, volume_type, iops, throughput)

    monkeypatch.setattr(ps, "resource_limits", lookup)  # driver-side only: the frame is built on the driver
    got = {r["config_id"]: r for r in ps.resource_limits_frame(spark, campaign).collect()}
    assert sorted(got) == sorted(c.config_id for c in campaign.clusters)
    assert got[unknown.config_id]["network_limit_mbit_s"] is None
    for shape in campaign.clusters:
        want = lookup(campaign.catalog, shape.instance_type, shape.volume.type, shape.volume.iops,
                      shape.volume.throughput_mbps)
        row = got[shape.config_id]
        for column, value in (("network_limit_mbit_s", want.network_mbit_s), ("volume_iops_limit", want.volume_iops),
                              ("volume_mb_s_limit", want.volume_mb_s)):
            assert (row[column] is None) if value is None else (row[column] == pytest.approx(value)), (column, row)
            assert row[column] is None or not math.isnan(row[column])
