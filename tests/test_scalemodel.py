"""The local scale model's pure core (sizing/resources/scalemodel.py) and its spec field: no I/O.

Known answers come from the catalog's own figures (sizing/resources/catalog.py: vCPUs, GiB, EBS ceilings, gp2's 3 IOPS
per GiB, io1's provisioned IOPS) divided by hand here, never from the module under test.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from sizing.campaign import load_campaign, parse_campaign
from sizing.campaign.envelopes import campaign_demand, config_envelopes, with_host_speed
from sizing.documents.fields import SpecError
from sizing.resources.cost import Volume
from sizing.resources.disks import RoleVolume
from sizing.resources.scalemodel import (
    DEFAULT_FACTORS,
    DEFAULT_MODEL,
    FACTOR_GRID,
    FITTED_MODEL,
    GIB,
    IDLE_FOOTPRINT_MIB,
    MIB,
    MIN_CORES,
    MODEL_MACHINE,
    OWN_MODEL,
    RESERVED_CORES,
    ClusterEnvelopes,
    Machine,
    NodeEnvelope,
    ScaleFactors,
    cluster_envelopes,
    envelope_problems,
    fit_problems,
    fit_shortfalls,
    measured_on,
    min_memory_mib_per_gib,
    node_envelope,
    peak_demand,
    scaled_limits,
    watermark_relative,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick():
    return load_campaign(REPO / "campaigns" / "local-quick.yaml")


def data(volume_type: str, size_gb: int | None = None, iops: int | None = None) -> tuple[RoleVolume, ...]:
    return (RoleVolume("data", Volume(volume_type, size_gb, iops, None)),)


def test_one_factor_per_resource_keeps_the_catalogs_ratios_between_instance_types(quick):
    small = node_envelope(quick.catalog, "c5.2xlarge", data("gp2"), DEFAULT_FACTORS)
    large = node_envelope(quick.catalog, "c5.4xlarge", data("gp2"), DEFAULT_FACTORS)
    # catalog: 8 vCPUs / 16 GiB and 16 vCPUs / 32 GiB; factors 0.025 cores per vCPU, 168 MiB per GiB, plus 3.10's
    # idle footprint (160 MiB) on top of each: the scaled RAM keeps the catalog's ratio, the footprint does not scale
    assert (small.cpu_cores, large.cpu_cores) == pytest.approx((0.2, 0.4))
    assert (small.memory_bytes, large.memory_bytes) == (2848 * MIB, 5536 * MIB)
    # a quota of 0.2 cores over the 20 ms period is 4 ms
    assert (small.cpu_period_us, small.cpu_quota_us, large.cpu_quota_us) == (20_000, 4_000, 8_000)
    assert (small.schedulers, large.schedulers) == (1, 1)  # under one core each: one Erlang scheduler


def test_volume_throttles_follow_the_type_and_its_size(quick):
    c = quick.catalog
    # gp2: 3 IOPS per GiB (1000 GB default: 3000; 200 GB: 600), divided by 10
    assert node_envelope(c, "c5.2xlarge", data("gp2"), DEFAULT_FACTORS).volumes[0].iops == 300
    assert node_envelope(c, "c5.2xlarge", data("gp2", 200), DEFAULT_FACTORS).volumes[0].iops == 60
    # io1: its provisioned 10,000 IOPS / 10 = 1000, which is also c5.2xlarge's EBS ceiling (10,000) / 10
    io1 = node_envelope(c, "c5.2xlarge", data("io1", 200, 10_000), DEFAULT_FACTORS).volumes[0]
    assert io1.iops == 1000 and io1.cloud_iops == 10_000
    # st1 at 1000 GB: 40 MiB/s per TiB baseline -> 40.96 MB/s, / 10 -> 4,096,000 B/s
    st1 = node_envelope(c, "c5.2xlarge", data("st1", 1000), DEFAULT_FACTORS).volumes[0]
    assert st1.bps == 4_096_000


def test_the_instances_ebs_ceiling_caps_a_faster_volume(quick):
    # io1 at 20,000 provisioned IOPS: c5.2xlarge's EBS ceiling (10,000 IOPS) binds, c5.4xlarge's (20,000) does not
    fast = data("io1", 400, 20_000)
    assert node_envelope(quick.catalog, "c5.2xlarge", fast, DEFAULT_FACTORS).volumes[0].iops == 1000
    assert node_envelope(quick.catalog, "c5.4xlarge", fast, DEFAULT_FACTORS).volumes[0].iops == 2000


def test_every_role_of_a_layout_gets_its_own_volume(quick):
    layout = (RoleVolume("data", Volume("st1", 1000, None, None)), RoleVolume("wal", Volume("io1", 200, 10_000, None)))
    envelope = node_envelope(quick.catalog, "c5.4xlarge", layout, DEFAULT_FACTORS)
    assert [(v.role, v.type) for v in envelope.volumes] == [("data", "st1"), ("wal", "io1")]
    assert envelope.volume("wal").iops == 1000 and envelope.volume("segments") is None


def test_envelopes_travel_as_json_between_terraform_and_the_tasks(quick):
    envelopes = cluster_envelopes(quick.catalog, "c5.2xlarge", data("gp2"), ScaleFactors(disk_divisor=4))
    assert ClusterEnvelopes.from_dict(envelopes.to_dict()) == envelopes
    assert envelopes.generator.cpu_quota_us == 20_000  # 1 core over a 20 ms period


def test_factors_too_small_for_a_node_are_named_with_the_factor_to_raise(quick):
    tiny = ScaleFactors(cpu_cores_per_vcpu=0.001, memory_mib_per_gib=4)
    problems = envelope_problems(node_envelope(quick.catalog, "c5.2xlarge", data("gp2"), tiny), "n1-c5.2xlarge-gp2")
    assert len(problems) == 2
    assert "cpu_cores_per_vcpu" in problems[0] and "memory_mib_per_gib" in problems[1]
    assert all(p.startswith("config n1-c5.2xlarge-gp2:") for p in problems)
    assert envelope_problems(node_envelope(quick.catalog, "c5.2xlarge", data("gp2"), DEFAULT_FACTORS), "x") == []


def test_the_envelopes_up_at_once_must_fit_the_machine_with_the_sum_they_need(quick):
    env = node_envelope(quick.catalog, "c5.2xlarge", data("gp2"), DEFAULT_FACTORS)
    clusters = {"n1": (env, 1), "n3": (env, 3)}
    two_cores = Machine(cores=2, memory_bytes=24 * GIB)
    one = peak_demand(clusters, 1, DEFAULT_FACTORS)
    # the 3-node config (0.6 cores) and its generator (1 core)
    assert one.cores == pytest.approx(1.6) and one.configs == ("n3",)
    assert fit_problems(one, two_cores) == []
    both = peak_demand(clusters, 2, DEFAULT_FACTORS)
    assert both.cores == pytest.approx(0.8 + 2.0)  # 4 nodes at 0.2 and two generators
    (problem,) = fit_problems(both, two_cores)
    assert "2.80 cores" in problem and f"{RESERVED_CORES:g} kept" in problem
    assert fit_problems(one, Machine(cores=2, memory_bytes=4 * GIB))  # 4 GiB is all reserved
    # every repeat is a cluster of its own, and the DAG may put two repeats of the 3-node config up at once
    repeated = peak_demand(clusters, 2, DEFAULT_FACTORS, repeats=3)
    assert repeated.cores == pytest.approx(1.2 + 2.0) and repeated.configs == ("n3", "n3")
    assert peak_demand(clusters, 5, DEFAULT_FACTORS, repeats=2).configs == ("n3", "n3", "n1", "n1")


def test_every_measurement_names_what_it_was_measured_on():
    assert measured_on(None, "aws") == "aws"
    assert "no scale model" in measured_on(None, "local")
    assert measured_on(DEFAULT_FACTORS, "local") == (
        "local scale model (the default model): 1 vCPU = 0.025 reference cores (uncalibrated host), 1 GiB RAM = "
        "168 MiB + the broker's "
        "idle footprint, volume IOPS and MiB/s / 10, 1 Gbps = 25 Mbit/s where each node has a link; load generator "
        "1 cores")
    calibrated = replace(DEFAULT_FACTORS, host_speed=2.0)
    assert "1 vCPU = 0.025 reference cores (host calibration: 1 core here = 2.00 reference cores)" in measured_on(
        calibrated, "local")


# ------------------------------------------------------------------------------------------ the spec field


def test_the_local_target_runs_on_the_default_scale_model_unless_it_is_off(quick):
    assert quick.scale_model == DEFAULT_FACTORS
    off = parse_campaign({**quick.raw, "scale_model": "off"}, catalog=quick.catalog)
    assert off.scale_model is None
    own = parse_campaign({**quick.raw, "scale_model": {"disk_divisor": 4}}, catalog=quick.catalog)
    assert own.scale_model == ScaleFactors(disk_divisor=4)
    assert own.spec_hash != quick.spec_hash  # a campaign measured on other factors is another campaign


@pytest.mark.parametrize("value, field", [
    ({"disk_divisor": 0}, "scale_model.disk_divisor"),
    ({"disk_divisor": "fast"}, "scale_model.disk_divisor"),
    ({"cpu_cores": 1}, "scale_model.cpu_cores"),
    ({"cpu_cores_per_vcpu": 0.001}, "scale_model"),
])
def test_bad_factors_are_refused_with_their_field(quick, value, field):
    with pytest.raises(SpecError) as err:
        parse_campaign({**quick.raw, "scale_model": value}, catalog=quick.catalog)
    assert any(p.path == field for p in err.value.problems), err.value.problems


def test_a_scale_model_on_a_cloud_target_is_refused():
    quorum = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    assert quorum.scale_model is None
    with pytest.raises(SpecError) as err:
        parse_campaign({**quorum.raw, "scale_model": {"disk_divisor": 4}}, catalog=quorum.catalog)
    assert any(p.path == "scale_model" and "local target only" in p.reason for p in err.value.problems)


def test_validate_refuses_envelopes_this_machine_cannot_hold_and_says_the_sum(tmp_path, capsys, monkeypatch):
    """Against the real machine (adapters.envelope.machine: sched_getaffinity and /proc/meminfo): a generator asking
    for one core more than the machine has cannot fit, whatever the machine. Uncalibrated (no stored calibration):
    the sums are the reference cores themselves."""
    from adapters.calibration import FILE_ENV
    from app.cli import main

    monkeypatch.setenv(FILE_ENV, str(tmp_path / "no-calibration.json"))

    cores = len(os.sched_getaffinity(0))
    spec = tmp_path / "too-big.yaml"
    raw = yaml.safe_load((REPO / "campaigns" / "local-quick.yaml").read_text())
    spec.write_text(yaml.safe_dump({**raw, "scale_model": {"generator_cores": cores + 1}}))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "scale_model:" in err and f"{cores + 1.6:.2f} cores" in err and "n3-c5.2xlarge-gp2" in err
    assert "Traceback" not in err
    assert main(["validate", str(REPO / "campaigns" / "local-quick.yaml")]) == 0
    assert "1.60 cores" in capsys.readouterr().out
    # on a calibrated host the same nodes take their reference cores' worth of this host's time (speed 2: half)
    import time

    from adapters.calibration import store, this_host
    from sizing.resources.calibration import REFERENCE_MSG_S_PER_CORE
    from tests.test_calibration import measurement

    twice = measurement(int(2 * REFERENCE_MSG_S_PER_CORE * 5), 5.0)
    store(replace(twice, fingerprint=this_host()[0], measured_at=time.time()))
    assert main(["validate", str(REPO / "campaigns" / "local-quick.yaml")]) == 0
    out = capsys.readouterr().out
    assert "1 core here = 2.00 reference cores" in out and "1.30 cores" in out, out


def test_the_bottleneck_limits_are_the_envelopes_on_the_scale_model_and_the_catalogs_elsewhere(quick):
    from sizing.campaign.envelopes import config_limits
    from sizing.resources.catalog import resource_limits

    shape = quick.clusters[0]  # c5.2xlarge, gp2 1000 GB: 3000 IOPS, 250 MiB/s; EBS 10,000 IOPS, 2300 Mbit/s
    scaled = config_limits(quick, shape)
    assert (scaled.volume_iops, scaled.volume_mb_s) == (300, pytest.approx(26.2144))
    assert (scaled.ebs_iops, scaled.ebs_mb_s) == (1000, pytest.approx(28.75))
    assert scaled.network_mbit_s is None  # no network envelope locally: never reported as near its limit
    off = parse_campaign({**quick.raw, "scale_model": "off"}, catalog=quick.catalog)
    cloud = resource_limits(quick.catalog, shape.instance_type, {v.role: v.volume for v in shape.volumes})
    assert config_limits(off, shape) == cloud and cloud.volume_iops == 3000


def test_the_memory_the_broker_is_told_is_the_scale_models_alone(quick):
    with pytest.raises(SpecError) as err:
        parse_campaign({**quick.raw, "broker_config": {"total_memory_available_override_value": 8 << 30}},
                       catalog=quick.catalog)
    assert [p.path for p in err.value.problems] == ["broker_config.total_memory_available_override_value"]
    off = {**quick.raw, "scale_model": "off", "broker_config": {"total_memory_available_override_value": 8 << 30}}
    assert parse_campaign(off, catalog=quick.catalog).scale_model is None  # without a scale model it is the user's


# ------------------------------------------------------------------------------------------ the memory rule (issue 44)


def test_the_envelope_holds_the_idle_footprint_on_top_and_the_watermark_gives_the_scaled_ram_its_cloud_share(quick):
    """By hand: c5.xlarge (8 GiB) at 168 MiB per GiB is 1344 MiB scaled; 3.10 idles at 160 MiB, 4.0 at 140 MiB."""
    # RabbitMQ's own default watermark: 0.4 on 3.10, 0.6 from 4.0 on
    for version, idle, relative in ((None, 160, 0.4), ("3.10", 160, 0.4), ("4.0", 140, 0.6)):
        env = node_envelope(quick.catalog, "c5.xlarge", data("gp2"), DEFAULT_FACTORS, version)
        assert env.memory_bytes == (1344 + idle) * MIB  # the cgroup's limit
        assert env.idle_bytes == idle * MIB
        assert env.broker_memory_bytes == pytest.approx((1344 + idle / relative) * MIB, abs=1)  # what it is told
        assert env.watermark_bytes == pytest.approx((idle + relative * 1344) * MIB, abs=2)  # its mem_limit
        assert env.watermark_bytes < env.memory_bytes  # the alarm fires inside the cgroup's limit
    # a campaign's own relative watermark: the scaled RAM's share is its, the footprint is still on top
    half = node_envelope(quick.catalog, "c5.xlarge", data("gp2"), DEFAULT_FACTORS, None,
                         {"vm_memory_high_watermark.relative": 0.5})
    assert half.watermark_bytes == pytest.approx((160 + 0.5 * 1344) * MIB, abs=2)
    # an absolute watermark is the campaign's own: the scale model sets none (and checks none)
    absolute = node_envelope(quick.catalog, "c5.xlarge", data("gp2"), DEFAULT_FACTORS, None,
                             {"vm_memory_high_watermark.absolute": "300MB"})
    assert absolute.watermark_bytes is None and absolute.memory_bytes == (1344 + 160) * MIB
    assert envelope_problems(absolute, "x") == []


def test_the_watermark_the_broker_applies_is_the_campaigns_own_or_the_default():
    assert watermark_relative({}) == 0.4 and watermark_relative({}, "4.0") == 0.6
    assert watermark_relative({"vm_memory_high_watermark.relative": 0.5}) == 0.5
    assert watermark_relative({"vm_memory_high_watermark.absolute": "300MB"}) is None


@pytest.mark.parametrize("catalog", sorted(p.stem for p in (REPO / "catalogs").glob("*.yaml")))
def test_no_idle_envelope_is_above_a_quarter_of_its_watermark_on_the_default_factors(catalog):
    """The invariant of issue 44, for every instance type of every shipped catalog and every version the local
    target runs; and the default factor is the smallest round figure that keeps it (a tenth less would not)."""
    from sizing.resources.catalog import load_catalog

    c = load_catalog(catalog)
    assert c.instances
    for name in c.instances:
        for version in (None, *IDLE_FOOTPRINT_MIB):
            env = node_envelope(c, name, data("gp2"), DEFAULT_FACTORS, version)
            assert env.idle_bytes <= 0.25 * env.watermark_bytes, (name, version)
            assert envelope_problems(env, "x") == []
    smallest = min(i.memory_gib for i in load_catalog("gcp-us-central1-2020").instances.values())
    needed = max(min_memory_mib_per_gib(smallest, v) for v in IDLE_FOOTPRINT_MIB)
    assert needed <= DEFAULT_FACTORS.memory_mib_per_gib < 1.1 * needed


def test_an_envelope_too_small_for_the_idle_footprint_is_refused_with_the_factor_to_raise(quick):
    """c5.xlarge at 64 MiB per GiB (the factor before issue 44): 512 MiB scaled, a 160 + 205 MiB watermark: 0.44."""
    env = node_envelope(quick.catalog, "c5.xlarge", data("gp2"), ScaleFactors(memory_mib_per_gib=64))
    (problem,) = envelope_problems(env, "n1-c5.xlarge-gp2")
    assert "0.44 of the 365 MiB high watermark" in problem and "memory_mib_per_gib" in problem
    with pytest.raises(SpecError) as err:  # also when the campaign's own relative watermark leaves too little
        parse_campaign({**quick.raw, "broker_config": {"vm_memory_high_watermark.relative": 0.05}},
                       catalog=quick.catalog)
    assert any(p.path == "scale_model" and "of the" in p.reason for p in err.value.problems)


def test_an_envelope_recorded_before_the_memory_rule_still_reads():
    old = {"instance_type": "c5.2xlarge", "cpu_cores": 0.2, "cpu_period_us": 20_000, "cpu_quota_us": 4_000,
           "memory_bytes": 1 << 30, "volumes": []}
    env = NodeEnvelope.from_dict(old)
    assert env.broker_memory_bytes is None and env.idle_bytes == 0 and env.watermark_bytes == int(0.4 * (1 << 30))


# ------------------------------------------------------------------ the one rule for a campaign's model factors


def test_a_campaign_that_fits_the_model_machine_keeps_the_default_model():
    quick = load_campaign(REPO / "campaigns" / "local-quick.yaml")  # 3 x c5.2xlarge: 0.6 + 1.0 cores
    assert quick.scale_model.rule == DEFAULT_MODEL
    assert (quick.scale_model.cpu_cores_per_vcpu, quick.scale_model.memory_mib_per_gib) == (
        DEFAULT_FACTORS.cpu_cores_per_vcpu, DEFAULT_FACTORS.memory_mib_per_gib)


def test_a_campaign_too_big_for_the_default_gets_the_largest_factors_on_the_grid_that_fit():
    """Known answer, by hand: quorum-sizing-scale's largest config is 3 x c5.9xlarge (108 vCPUs, 216 GiB) with a
    0.6-core, 2 GiB generator on the model machine (2 cores - 0.25 kept; 23.5 GiB - 4 kept = 19,968 MiB):
    CPU (1.75 - 0.6) / 108 = 0.01065 -> 0.0105 on the 0.0005 grid; memory (19,968 - 2,048 - 3 x 160 idle) / 216 =
    80.7 -> 80 on the grid of 8. One grid step more does not fit, in either."""
    campaign = load_campaign(REPO / "campaigns" / "quorum-sizing-scale.yaml")
    factors = campaign.scale_model
    assert factors.rule == FITTED_MODEL and "fitted" in factors.describe()
    assert (factors.cpu_cores_per_vcpu, factors.memory_mib_per_gib) == (0.0105, 80)
    assert fit_problems(campaign_demand(campaign), MODEL_MACHINE) == []
    for name, step in FACTOR_GRID.items():
        bigger = replace(campaign, scale_model=replace(factors, **{name: getattr(factors, name) + step}))
        assert name in fit_shortfalls(campaign_demand(bigger), MODEL_MACHINE)


def test_a_campaign_that_gives_a_model_factor_runs_a_what_if_on_it():
    raw = {**load_campaign(REPO / "campaigns" / "quorum-sizing-scale.yaml").raw,
           "scale_model": {"generator_cores": 0.6, "cpu_cores_per_vcpu": 0.008}}
    factors = parse_campaign(raw).scale_model
    assert factors.rule == OWN_MODEL and factors.cpu_cores_per_vcpu == 0.008 and "what-if" in factors.describe()
    assert factors.memory_mib_per_gib == 80  # the factor it does not give still follows the rule


def test_the_generators_alone_too_big_keeps_the_default_for_admission_to_refuse():
    raw = {**load_campaign(REPO / "campaigns" / "local-quick.yaml").raw, "scale_model": {"generator_cores": 1.8}}
    campaign = parse_campaign(raw)
    assert campaign.scale_model.cpu_cores_per_vcpu == DEFAULT_FACTORS.cpu_cores_per_vcpu
    assert campaign.scale_model.rule == DEFAULT_MODEL  # nothing was fitted: not labelled as if it had been
    assert fit_problems(campaign_demand(campaign), MODEL_MACHINE)  # refused with the sums, not silently shrunk


def test_a_node_below_the_kernels_smallest_quota_on_a_fast_host_gets_it_and_admission_says_so():
    """On a host twice the reference speed a c5.2xlarge at 0.0105 reference cores per vCPU has a share of 0.042 of
    this host's cores: below MIN_CORES (0.05), so its envelope is the floor, and admission names the ratio."""
    from sizing.planning.admission import MachineFacts, admit

    campaign = load_campaign(REPO / "campaigns" / "quorum-sizing-scale.yaml")
    shape = next(s for s in campaign.clusters if s.instance_type == "c5.2xlarge")
    fast = with_host_speed(campaign, 2.0)
    node = config_envelopes(fast, shape).node
    assert node.cpu_share == pytest.approx(8 * 0.0105 / 2.0) and node.cpu_cores == MIN_CORES and node.cpu_floored
    assert not config_envelopes(campaign, shape).node.cpu_floored
    lines = admit(campaign, MachineFacts(host_speed=2.0)).scale
    assert any(f"config {shape.config_id}: a c5.2xlarge node's share of this host is 0.042 cores" in line
               and "1.19x its share" in line for line in lines), lines


def test_an_envelopes_vm_flags_stop_busy_waiting_and_set_the_schedulers_only_when_asked():
    """Known answer: the flags node.sh passes to the VM (sizing.resources.scalemodel.NodeEnvelope.erl_args)."""
    from dataclasses import replace

    from sizing.resources.scalemodel import NodeEnvelope

    node = NodeEnvelope(instance_type="c5.large", cpu_cores=0.1, cpu_period_us=20_000, cpu_quota_us=2_000,
                        memory_bytes=1 << 30, volumes=())
    assert node.erl_args == "+sbwt none +sbwtdcpu none +sbwtdio none"
    assert replace(node, schedulers=1).erl_args == "+sbwt none +sbwtdcpu none +sbwtdio none +S 1:1"
    assert NodeEnvelope.from_dict(replace(node, schedulers=2).to_dict()).schedulers == 2


@pytest.mark.parametrize(("cores", "schedulers"), [(0.05, 1), (0.25, 1), (1.0, 1), (1.01, 2), (2.0, 2)])
def test_a_node_runs_one_scheduler_per_whole_core_it_may_use(cores, schedulers):
    """Known answers by hand (sizing.resources.scalemodel.schedulers_for), and a small instance's envelope gets it."""
    from sizing.resources.scalemodel import schedulers_for

    assert schedulers_for(cores) == schedulers


def test_a_nodes_link_follows_its_cpu_unless_the_campaign_sets_it():
    """Issue 46's bandwidth envelope: the catalog's baseline Gbps x 1000 x cpu_cores_per_vcpu Mbit/s each way (a
    vCPU's share of a core goes with its share of the link), only where each node has a link of its own."""
    from sizing.resources.catalog import load_catalog

    catalog = load_catalog("aws-us-east-1-2020")
    volumes = [RoleVolume("data", Volume("gp2"))]
    linked = node_envelope(catalog, "c5.2xlarge", volumes, DEFAULT_FACTORS, own_link=True)
    assert linked.network_mbit == pytest.approx(2.5 * 1000 * 0.025)  # 62.5 Mbit/s
    assert scaled_limits(linked).network_mbit_s == pytest.approx(62.5)
    fitted = replace(DEFAULT_FACTORS, cpu_cores_per_vcpu=0.01)
    assert node_envelope(catalog, "c5.9xlarge", volumes, fitted, own_link=True).network_mbit == pytest.approx(100)
    own = replace(DEFAULT_FACTORS, network_mbit_per_gbps=4.0)
    assert node_envelope(catalog, "c5.9xlarge", volumes, own, own_link=True).network_mbit == pytest.approx(40)
    faster_host = replace(DEFAULT_FACTORS, host_speed=2.0)  # a byte is a byte on any host
    assert node_envelope(catalog, "c5.2xlarge", volumes, faster_host, own_link=True).network_mbit == linked.network_mbit
    loopback = node_envelope(catalog, "c5.2xlarge", volumes, DEFAULT_FACTORS)
    assert loopback.network_mbit is None and scaled_limits(loopback).network_mbit_s is None
    assert ScaleFactors.from_dict(own.to_dict()) == own and ScaleFactors.from_dict(DEFAULT_FACTORS.to_dict()) == \
        DEFAULT_FACTORS
    assert NodeEnvelope.from_dict(linked.to_dict()) == linked
