"""phase_summary's resource columns and bottleneck label from hand-built node_seconds (Spark local).

Known answers: every node row carries constant figures, so each phase's busiest-node mean is the figure given;
the label follows sizing.criteria.rules.bottleneck, evaluated on the same values in plain Python as the cross-check.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

from sizing.contract.layout import RunKey
from sizing.criteria import rules
from sizing.resources.disks import VOLUME_ROLES
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.phase_summary import resources
from spark_jobs.lib.phase_summary.resources import _final_nodes
from spark_jobs.lib.s3source import ddl_to_arrow
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
    summary = summarise(spark, phases, clients, nodes, limit_row("n2-c5.2xlarge-gp2", network=2500.0,
                                                                 data=(3000.0, 262.144)))
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
    assert disk["bottleneck"] == "disk" and disk["volume_busiest_role"] == "data"
    assert disk["volume_load_share"] == pytest.approx(2900 / 3000)
    assert net["net_peak_mbit_s"] == pytest.approx(2560.0) and net["bottleneck"] == "network"
    assert net["net_client_mb_s"] == pytest.approx(320.0)  # half of 640 MB/s in + out
    # the plain-value rule gives the same labels on the same rows (what a run fixture's verdicts re-derive with)
    for row in (light, hot, disk, net):
        assert rules.phase_bottleneck(row) == row["bottleneck"]
    assert set(rules.BOTTLENECK_COLUMNS) <= set(light)


def summarise(spark, phases: list[dict], clients: list[dict], nodes: list[dict], limits: tuple):
    """phase_summary of hand-built records with one config's catalog limits (a RESOURCE_LIMITS_DDL row)."""
    phase_rows = frames(spark, "phases", phases)
    return ps.summarise(phase_rows, ps.ClientRecords.of(frames(spark, "client_seconds", clients)),
                        frames(spark, "accounting", []), frames(spark, "events", []),
                        frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000),
                        nodes=ps.NodeRecords.of(frames(spark, "node_seconds", nodes), phase_rows),
                        resource_limits=spark.createDataFrame([limits], ps.RESOURCE_LIMITS_DDL))


def limit_row(config_id: str, network: float | None = None, ebs: tuple[float, float] | tuple[None, None] = (None, None),
              **roles: tuple[float, float]) -> tuple:
    """A RESOURCE_LIMITS_DDL row: role=(iops, MB/s) for every volume the config has."""
    data = roles.get("data", (None, None))
    return (config_id, network, *data, *ebs, *(x for role in VOLUME_ROLES for x in roles.get(role, (None, None))))


def test_each_volume_meets_its_own_limit_and_the_instance_its_ebs_ceiling(spark):
    """Seed 001's layouts, known answers: a 1 TiB st1 WAL volume writing 40 MB/s (of its 40.96) is the bottleneck
    although the node's three volumes together write 70 MB/s, under a data volume's limit; and three volumes each
    well under their own limit can still meet the instance's EBS ceiling (c4.4xlarge: 250 MB/s)."""
    key = RunKey("c", "n3-c4.4xlarge-st1-1000gb-wal-segments", "pure-throughput-1q", "R1")
    phases = [phase_row(key, n, (n - 1) * 10, 10, 2, 100) for n in (1, 2)]
    clients = [r for n in (1, 2) for r in client_rows(key, n, 0, range((n - 1) * 10, n * 10), (n - 1) * 10 + 2,
                                                          target_rate=100, per_second=100)]
    nodes = node_rows(key, 1, "a", range(0, 10), cpu_busy=0.3, target="aws", write_bytes=70e6, write_ops=300,
                      volumes={"data": (10e6, 50), "segments": (20e6, 50), "wal": (40e6, 200)})
    nodes += node_rows(key, 2, "a", range(10, 20), cpu_busy=0.3, target="aws", write_bytes=240e6, write_ops=450,
                       volumes={"data": (100e6, 150), "segments": (110e6, 150), "wal": (30e6, 150)})
    st1 = (500.0, 40.96)
    summary = summarise(spark, phases, clients, nodes, limit_row(key.config_id, network=5000.0, ebs=(16000.0, 250.0),
                                                                 data=(500.0, 400.0), segments=(500.0, 400.0), wal=st1))
    got = {r["phase"]: r.asDict() for r in summary.collect()}
    wal, ebs = got[1], got[2]
    assert (wal["volume_busiest_role"], wal["bottleneck"]) == ("wal", "disk")
    assert wal["volume_load_share"] == pytest.approx(40 / 40.96)
    assert wal["ebs_load_share"] == pytest.approx(70 / 250) and wal["bottleneck_detail"].startswith(
        "disk: the wal volume at 0.98 of its own limit")
    # phase 2: each volume under NEAR_LIMIT of its own (the wal's 30 of 40.96 MB/s the nearest), together 240 of the
    # instance's 250 MB/s
    assert ebs["volume_busiest_role"] == "wal" and ebs["volume_load_share"] == pytest.approx(30 / 40.96)
    assert ebs["ebs_load_share"] == pytest.approx(240 / 250)
    assert ebs["bottleneck"] == "disk"


def test_a_local_node_in_its_envelope_is_judged_against_the_scaled_limits(spark):
    """The local scale model (issue 31): a node whose cores are not shared (its sampler read it in its cgroup and its
    loop devices) meets its envelope's limits, here a gp2 volume scaled to 300 IOPS / 26.2 MB/s: 290 write IOPS on
    the data volume is 0.97 of it (disk). The same figures from a node sharing the machine get no limit at all."""
    enveloped = RunKey("c", "n1-c5.2xlarge-gp2", "scaled", "R1")
    shared = RunKey("c", "n1-c5.2xlarge-gp2", "shared", "R1")
    phases, clients, nodes = [], [], []
    for key, quota in ((enveloped, 0.2), (shared, None)):
        phases.append(phase_row(key, 1, 0, 10, 2, 100))
        clients += client_rows(key, 1, 0, range(0, 10), 2, target_rate=100, per_second=100)
        nodes += node_rows(key, 1, "a", range(0, 10), cpu_busy=0.5, write_bytes=3e6, write_ops=290,
                           volumes={"data": (3e6, 290)}, cpu_quota_cores=quota)
    # a quiet phase: the loop device wrote nothing (0 ops, where a node sharing the machine has null)
    phases.append(phase_row(enveloped, 2, 10, 10, 2, 100))
    clients += client_rows(enveloped, 2, 0, range(10, 20), 12, target_rate=100, per_second=100)
    nodes += node_rows(enveloped, 2, "a", range(10, 20), cpu_busy=0.1, write_bytes=0.0, write_ops=0,
                       volumes={"data": (0.0, 0)}, cpu_quota_cores=0.2)
    summary = summarise(spark, phases, clients, nodes, limit_row("n1-c5.2xlarge-gp2", ebs=(1000.0, 28.75),
                                                                 data=(300.0, 26.2144)))
    rows = summary.collect()
    got = {r["scenario"]: r.asDict() for r in rows if r["phase"] == 1}
    quiet = next(r.asDict() for r in rows if r["phase"] == 2)
    assert quiet["disk_write_iops"] == 0 and quiet["disk_write_kb_per_op"] is None and quiet["bottleneck"] == "none"
    assert got["scaled"]["shared_cores"] is False and got["scaled"]["volume_iops_limit"] == 300.0
    assert got["scaled"]["volume_load_share"] == pytest.approx(290 / 300) and got["scaled"]["bottleneck"] == "disk"
    assert got["shared"]["volume_iops_limit"] is None and got["shared"]["bottleneck"] == "none"


def test_the_plain_rule_names_the_generator_first_and_guesses_nothing_without_figures():
    base = dict(alarm=False, mem_max_fraction=0.1, busiest_cpu_mean=0.99, machine_cpu_mean=1.0,
                volume_load_share=None, ebs_load_share=None, net_mbit_s=None, mbit_s_limit=None)
    assert rules.bottleneck(valid=False, **base) == "generator"
    assert rules.bottleneck(valid=True, **base) == "cpu"
    assert rules.bottleneck(valid=True, **{**base, "alarm": True}) == "memory"
    idle = {**base, "busiest_cpu_mean": 0.1, "machine_cpu_mean": 0.2}
    assert rules.bottleneck(valid=True, **idle) == "none"
    assert rules.bottleneck(valid=True, resources_seen=False, **idle) is None


def test_the_catalog_limits_frame_has_every_config_and_keeps_unknown_limits_null(spark, monkeypatch):
    """Known answer: sizing.resources.catalog.resource_limits per config of quorum-sizing-2020 (21 configs, gp2/io1/st1)
    and of disks-matter-2020 (one to three volumes per node); the frame is built from pandas (no Python RDD job), where
    a missing limit must stay null, never NaN: the catalog knows every limit here, so one config's lookup is made to
    return none."""
    import math
    from pathlib import Path

    from sizing.campaign import load_campaign
    from sizing.resources.catalog import ResourceLimits, resource_limits

    root = Path(__file__).resolve().parent.parent / "campaigns"
    campaign = load_campaign(root / "quorum-sizing-2020.yaml")
    unknown = campaign.clusters[0]

    def lookup(catalog, instance_type, volumes):
        if (instance_type, volumes["data"].type) == (unknown.instance_type, unknown.volume.type):
            return ResourceLimits(None, None, None)
        return resource_limits(catalog, instance_type, volumes)

    def config_limits(campaign, shape):  # cloud targets: sizing.campaign.envelopes.config_limits = the catalog's lookup
        return lookup(campaign.catalog, shape.instance_type, {v.role: v.volume for v in shape.volumes})

    # driver-side only: the frame is built on the driver, by phase_summary.resources
    monkeypatch.setattr(resources, "config_limits", config_limits)
    for spec in (campaign, load_campaign(root / "disks-matter-2020.yaml")):
        got = {r["config_id"]: r for r in ps.resource_limits_frame(spark, spec).collect()}
        assert sorted(got) == sorted(c.config_id for c in spec.clusters)
        for shape in spec.clusters:
            want = lookup(spec.catalog, shape.instance_type, {v.role: v.volume for v in shape.volumes})
            row = got[shape.config_id]
            for column, value in want.to_dict().items():
                name = {"network_mbit_s": "network_limit_mbit_s", "volume_iops": "volume_iops_limit",
                        "volume_mb_s": "volume_mb_s_limit"}.get(column, f"{column}_limit")
                assert (row[name] is None) if value is None else (row[name] == pytest.approx(value)), (name, row)
                assert row[name] is None or not math.isnan(row[name])
    assert got["n3-c4.4xlarge-st1-1000gb-wal"]["wal_mb_s_limit"] == pytest.approx(40 * 1000 / 1024 * 1.048576)
    assert got["n3-c4.4xlarge-st1-1000gb-wal"]["segments_mb_s_limit"] is None  # segments live on the data volume
    assert got["n3-c4.4xlarge-st1-1000gb-wal"]["ebs_mb_s_limit"] == 250.0  # c4.4xlarge: 2000 Mbit/s


def test_the_node_fold_gives_spark_sqls_own_figures_on_varied_rows(spark):
    """The node fold (per node phase where read, merged per run: fold_node_seconds, _final_nodes) against Spark
    SQL's own avg and exact percentile over the same rows, the independent counter: varied figures, null figures,
    missing seconds, warm-up and out-of-window rows, and the rows split into fold batches at an odd row."""
    rng = np.random.default_rng(7)
    phases, nodes = [], []
    for number in (1, 2):
        start = (number - 1) * 20
        phases.append(phase_row(LOCAL, number, start, 20, 4, 100))
        for node in ("a", "b", "c"):
            for row in node_rows(LOCAL, number, node, range(start, start + 22), cpu_busy=0.0,
                                 missing=range(start + 9, start + 11) if node == "b" else range(0)):
                if not row["missing"]:
                    row.update(cpu_busy=float(rng.uniform(0, 1)), disk_write_bytes_per_s=float(rng.uniform(0, 9e6)),
                               net_in_bytes_per_s=float(rng.uniform(0, 5e6)),
                               machine_cpu_busy_s=float(rng.uniform(0, 2)),
                               nic_out_bytes_per_s=None if rng.uniform() < 0.5 else float(rng.uniform(0, 9e6)))
                    if rng.uniform() < 0.1:
                        row["cpu_busy"] = None
                nodes.append(row)
    raw, phase_frame = frames(spark, "node_seconds", nodes), frames(spark, "phases", phases)
    window = phase_frame.select(*ps.PHASE_KEY, "start_s", "duration_s", "warmup_s")
    rows = raw.join(window, ps.PHASE_KEY, "left").withColumn(
        "present", F.coalesce((F.col("second") >= F.col("start_s") + F.col("warmup_s"))
                              & (F.col("second") < F.col("start_s") + F.col("duration_s")), F.lit(False))
        & ~F.col("missing"))

    def mean(column) -> F.Column:
        return F.avg(F.when(F.col("present"), column))

    expected = {(r["phase"], r["node"]): r.asDict() for r in rows.groupBy("phase", "node").agg(
        F.sum(F.col("present").cast("int")).alias("seconds"), mean(F.col("cpu_busy")).alias("cpu_mean"),
        F.percentile(F.when(F.col("present"), F.col("cpu_busy")), 0.95).alias("cpu_p95"),
        mean(F.col("machine_cpu_busy_s") / F.col("machine_cores")).alias("machine_mean"),
        (mean(F.col("disk_write_bytes_per_s")) / ps.MB).alias("write_mb_s"),
        (mean(F.col("net_in_bytes_per_s") + F.col("net_out_bytes_per_s")) / ps.MB).alias("net_mb_s"),
        (F.greatest(mean(F.coalesce("nic_in_bytes_per_s", "net_in_bytes_per_s")),
                    mean(F.coalesce("nic_out_bytes_per_s", "net_out_bytes_per_s"))) * 8 / ps.MB).alias("peak_mbit_s"),
    ).collect()}
    table = raw.select(*ps.NODE_COLUMNS).toArrow().combine_chunks()
    folded = pa.Table.from_batches(list(ps.fold_node_seconds(
        iter(table.slice(0, 61).to_batches() + table.slice(61).to_batches()), ps.phase_windows(phase_frame))))
    partials = folded.filter(pc.equal(folded.column("kind"), ps.PARTIAL)).select(
        ddl_to_arrow(ps.NODE_PARTIAL_DDL).names)
    got = {(r["phase"], r["node"]): r for r in _final_nodes(partials).to_pylist()}
    assert got.keys() == expected.keys() and len(got) == 6
    for key, want in expected.items():
        assert got[key]["cluster_nodes"] == 3 and got[key]["seconds"] == want["seconds"]
        for figure in ("cpu_mean", "cpu_p95", "machine_mean", "write_mb_s", "net_mb_s", "peak_mbit_s"):
            assert got[key][figure] == pytest.approx(want[figure], rel=1e-12), (key, figure)
    assert got[(1, "b")]["missing_seconds"] == 2 and got[(1, "a")]["seconds"] == 16  # 20 s, 4 of warm-up
