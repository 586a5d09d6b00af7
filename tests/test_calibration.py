"""Host calibration (issue 44), the pure part: what a measurement means, how the scale model uses it, how a run
carries it. Known answers built into each test; the reference measurement on a real node is
tests/test_calibration_cluster.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from adapters import calibration as store
from adapters.planning import host_speed
from sizing.campaign import load_campaign, parse_campaign
from sizing.planning.admission import on_host
from sizing.planning.runparams import RunParams
from sizing.planning.runplan import CampaignRun, campaign_run, plan_run_trials
from sizing.resources.calibration import (
    MAX_AGE_S,
    REFERENCE_MSG_S_PER_CORE,
    HostCalibration,
    cpu_model,
    host_fingerprint,
    reference_spec,
)
from sizing.resources.scalemodel import DEFAULT_FACTORS, ScaleFactors, node_envelope

REPO = Path(__file__).resolve().parents[1]
QUICK = load_campaign(REPO / "campaigns" / "local-quick.yaml")


def measurement(messages: int, node_cpu_s: float, measured_s: float = 20.0, node_cores: float = 0.25,
                measured_at: float = 1000.0) -> HostCalibration:
    return HostCalibration(fingerprint="f", cpu_model="cpu", cores=2, measured_at=measured_at, node_cores=node_cores,
                           measured_s=measured_s, messages=messages, node_cpu_s=node_cpu_s)


def test_speed_is_broker_work_per_cpu_second_against_the_reference_core():
    # Twice the reference's messages per CPU-second the node was charged: a core here is two reference cores.
    fast = measurement(messages=int(2 * REFERENCE_MSG_S_PER_CORE * 5), node_cpu_s=5.0)
    assert fast.msg_s_per_core == pytest.approx(2 * REFERENCE_MSG_S_PER_CORE)
    assert fast.speed == pytest.approx(2.0) and fast.problems() == []
    assert fast.msg_s == pytest.approx(fast.messages / 20)
    # Per CPU-second, not per quota: a node that got only part of its quota did proportionally less work.
    starved = measurement(messages=int(2 * REFERENCE_MSG_S_PER_CORE * 3), node_cpu_s=3.0)
    assert starved.speed == pytest.approx(fast.speed)
    assert "something other than its CPU bound" in starved.problems()[0]  # 3 of 5 CPU-s: not shown CPU-bound


def test_a_measurement_outside_the_plausible_range_or_without_work_is_refused():
    assert "outside" in measurement(messages=10, node_cpu_s=5.0).problems()[0]
    assert "carried 0 messages" in measurement(messages=0, node_cpu_s=5.0).problems()[0]


def test_the_scale_model_gives_a_node_its_reference_cores_in_this_hosts_cores():
    c5_2xlarge = QUICK.catalog.instances["c5.2xlarge"]  # 8 vCPUs
    volumes = QUICK.clusters[0].volumes
    reference = node_envelope(QUICK.catalog, "c5.2xlarge", volumes, DEFAULT_FACTORS)
    assert reference.cpu_cores == pytest.approx(8 * 0.025)
    # A host twice as fast as the reference gives the node half as much of its own time: the same broker work.
    fast = node_envelope(QUICK.catalog, "c5.2xlarge", volumes, replace(DEFAULT_FACTORS, host_speed=2.0))
    assert fast.cpu_cores == pytest.approx(c5_2xlarge.vcpus * 0.025 / 2.0)
    assert fast.cpu_quota_us == round(fast.cpu_cores * fast.cpu_period_us)
    assert fast.memory_bytes == reference.memory_bytes  # memory and disks are not CPU speed
    assert fast.volumes == reference.volumes


def test_a_campaign_cannot_set_the_host_speed_it_is_measured():
    assert "host_speed" not in ScaleFactors.field_names()
    with pytest.raises(Exception, match="host_speed"):
        parse_campaign({**QUICK.raw, "scale_model": {"host_speed": 3}}, catalog=QUICK.catalog)


def test_admission_applies_the_hosts_calibration_and_the_trials_carry_it():
    host = measurement(messages=int(1.6 * REFERENCE_MSG_S_PER_CORE * 5), node_cpu_s=5.0)
    campaign = on_host(QUICK, host_speed(QUICK, lambda: host))  # what admission does with a calibration source
    assert campaign.scale_model.host_speed == pytest.approx(1.6)
    assert on_host(QUICK, host_speed(QUICK, None)) is QUICK and on_host(QUICK, host_speed(QUICK, lambda: None)) is QUICK
    run = campaign_run(RunParams(campaign="campaigns/local-quick.yaml"), campaign, "spec.yaml")
    assert CampaignRun.from_dict(json.loads(json.dumps(run.to_dict()))).host_speed == pytest.approx(1.6)
    # plan_trials parses the spec again (no host in it): the run's calibration is applied to the trials' envelopes
    trials = plan_run_trials(run, QUICK)
    node = trials[0].cluster.envelopes.node
    vcpus = QUICK.catalog.instances[trials[0].cluster.shape.instance_type].vcpus
    assert node.cpu_cores == pytest.approx(vcpus * 0.025 / 1.6)
    assert trials[0].cluster.envelopes.factors.host_speed == pytest.approx(1.6)


def test_the_fingerprint_changes_with_the_host_and_its_boot():
    cpuinfo = "model name\t: Xeon\nflags\t\t: sse avx\n"
    base = host_fingerprint(cpuinfo, 2, "6.1", "boot-1")
    assert base == host_fingerprint(cpuinfo, 2, "6.1", "boot-1")
    assert len({base, host_fingerprint(cpuinfo, 4, "6.1", "boot-1"), host_fingerprint(cpuinfo, 2, "6.1", "boot-2"),
                host_fingerprint(cpuinfo.replace("avx", "avx512"), 2, "6.1", "boot-1")}) == 4
    assert cpu_model(cpuinfo) == "Xeon" and cpu_model("") == "unknown CPU"


def test_a_stored_calibration_is_this_hosts_fresh_one_and_is_measured_only_once(tmp_path, monkeypatch):
    env = {store.FILE_ENV: str(tmp_path / "calibration.json")}
    fingerprint, _, _ = store.this_host()
    assert store.stored(env) is None
    measured: list[str] = []

    def measure(echo):
        measured.append("once")
        return replace(measurement(int(REFERENCE_MSG_S_PER_CORE * 5), 5.0), fingerprint=fingerprint,
                       measured_at=__import__("time").time())

    first = store.current(measure, env, echo=lambda line: None)
    again = store.current(measure, env, echo=lambda line: None)
    assert measured == ["once"] and first == again == store.stored(env)
    # another host's entry is kept beside it, and never used here
    other = replace(first, fingerprint="another-host", messages=1)
    store.store(other, env)
    assert store.stored(env) == first
    assert set(json.loads((tmp_path / "calibration.json").read_text())) == {fingerprint, "another-host"}
    # one older than an hour is measured again (a host drifts 20 % within an hour: BENCHMARKS.md)
    assert store.stored(env, now=first.measured_at + MAX_AGE_S - 1) == first
    assert store.stored(env, now=first.measured_at + MAX_AGE_S + 1) is None
    assert MAX_AGE_S == 3600


def test_an_old_calibration_is_measured_again_and_kept_only_when_a_new_one_is_refused(tmp_path):
    env = {store.FILE_ENV: str(tmp_path / "calibration.json")}
    fingerprint, _, _ = store.this_host()
    now = __import__("time").time()
    old = replace(measurement(int(REFERENCE_MSG_S_PER_CORE * 5), 5.0), fingerprint=fingerprint,
                  measured_at=now - 2 * MAX_AGE_S)
    store.store(old, env)
    said: list[str] = []

    def busy(echo):
        raise store.CalibrationError("the rest of the machine used 1.2 cores")

    assert store.current(busy, env, echo=said.append) == old  # nearer than none: said, with its age
    assert "cannot be calibrated now" in said[-1] and "120 min old" in said[-1]
    new = replace(old, measured_at=now, messages=old.messages * 2)
    assert store.current(lambda echo: new, env, echo=said.append) == new == store.stored(env)


def test_a_host_that_cannot_be_measured_runs_uncalibrated_and_says_so(tmp_path):
    env = {store.FILE_ENV: str(tmp_path / "calibration.json")}
    said: list[str] = []

    def fails(echo):
        raise store.CalibrationError("the reference node runs in no cgroup")

    assert store.current(fails, env, echo=said.append) is None
    assert "uncalibrated" in said[-1] and "no cgroup" in said[-1]


def test_the_reference_workload_is_a_valid_campaign_at_the_maximum_rate():
    campaign = parse_campaign(reference_spec())
    (scenario,) = campaign.scenarios
    assert campaign.scale_model is None  # the reference node's envelope is fixed, not scaled
    assert scenario.name == "reference" and campaign.clusters[0].nodes == 1


def test_a_calibration_taken_on_a_busy_machine_is_refused():
    """The rest of the machine (the load generator included) may use at most MAX_REST_CORES while the node is
    measured: beyond, a core does less work whatever its cgroup weight (measured: 28,200 quiet, 22,200 busy)."""
    from sizing.resources.calibration import MAX_REST_CORES

    quiet = replace(measurement(int(2 * REFERENCE_MSG_S_PER_CORE * 5), 5.0), rest_cpu_s=0.3 * 20)
    busy = replace(quiet, rest_cpu_s=(MAX_REST_CORES + 0.1) * 20)
    assert quiet.problems() == []
    assert "busy machine" in busy.problems()[0] and "quiet machine" in busy.problems()[0]
    assert HostCalibration.from_dict(quiet.to_dict()) == quiet  # the new field is stored with the rest


def test_calibrate_if_stale_measures_nothing_while_this_host_has_a_fresh_calibration(tmp_path, monkeypatch, capsys):
    """`sizing calibrate --if-stale` (make test, between its passes): a fresh calibration of this host is kept and
    nothing measured; without one it measures. Counter: the measurement command, replaced by one that says it ran."""
    from app import cli

    monkeypatch.setenv(store.FILE_ENV, str(tmp_path / "calibration.json"))
    ran = tmp_path / "measured"
    monkeypatch.setattr(store, "measure_command", lambda: ["touch", str(ran)])
    assert cli.main(["calibrate", "--if-stale"]) == 0 and ran.exists()  # none stored: measured
    ran.unlink()
    fingerprint, _, _ = store.this_host()
    store.store(replace(measurement(int(REFERENCE_MSG_S_PER_CORE * 5), 5.0), fingerprint=fingerprint,
                        measured_at=__import__("time").time()))
    assert cli.main(["calibrate", "--if-stale"]) == 0 and not ran.exists()
    assert "fresh, nothing measured" in capsys.readouterr().out
    assert cli.main(["calibrate"]) == 0 and ran.exists()  # on demand: always measured
