"""A run's `runs` row from its manifests (sizing.judgement.history, pure), with manifests shaped as the load generator
writes them (loadgen.runner: the scenario a mapping with its name, versions read from the broker), and its status
rule."""

from __future__ import annotations

import json
from pathlib import Path

from sizing.campaign import load_campaign
from sizing.contract import records
from sizing.judgement.history import COMPLETE, FAILED, PARTIAL, UNKNOWN, run_row, run_status, spec_json

CAMPAIGN = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml")


def manifest(config_id: str, scenario: str, status: str = "complete", started: float = 100.0,
             erlang: str = "25.2.3") -> dict:
    return {"campaign": CAMPAIGN.name, "config_id": config_id, "run_id": "r1", "repeat": 1, "status": status,
            "scenario": {"name": scenario, "duration_s": 45.0, "phases": 3, "faults": []},
            "config": {"config_id": config_id, "nodes": 1, "instance_type": "c5.2xlarge"},
            "started_at": started, "ended_at": started + 60, "spec_hash": CAMPAIGN.spec_hash,
            "code_commit": "abc-dirty", "versions": {"pika": "1.3.2", "rabbitmq": "3.10.8", "erlang": erlang}}


def every_load_run(**kwargs) -> list[dict]:
    return [manifest(c.config_id, s.name, **kwargs) for c in CAMPAIGN.clusters for s in CAMPAIGN.scenarios]


def test_a_runs_row_says_what_ran_on_what_and_how_it_ended() -> None:
    runs = every_load_run()
    runs[0] = {**runs[0], "started_at": 50.0, "versions": {**runs[0]["versions"], "erlang": "25.3"}}
    row = run_row(CAMPAIGN, "r1", runs, spark_version="4.0.0", analysis_commit="def", analysed_at=999.0,
                  baseline_run="r0")
    assert list(row) == records.table_columns("runs")
    every = len(CAMPAIGN.clusters) * len(CAMPAIGN.scenarios)
    assert row["status"] == COMPLETE and row["load_runs"] == row["load_runs_complete"] == every
    assert (row["started_at"], row["ended_at"]) == (50.0, 160.0)
    assert row["erlang_version"] == "25.2.3, 25.3" and row["rabbitmq_version"] == "3.10.8"  # distinct, sorted
    assert row["configs"] == "n1-c5.2xlarge-gp2, n1-c5.xlarge-gp2, n3-c5.2xlarge-gp2"  # sorted
    assert row["instance_types"] == "c5.2xlarge, c5.xlarge"
    assert json.loads(row["spec"]) == json.loads(spec_json(CAMPAIGN)) and row["spec_hash"] == CAMPAIGN.spec_hash
    assert (row["target_rate"], row["slo_p99_ms"], row["baseline_run"]) == (1000.0, 1000.0, "r0")
    assert row["requested_rabbitmq_versions"] is None  # the spec asked for none: the target's own


def test_the_status_says_what_is_missing_or_failed() -> None:
    assert run_status(CAMPAIGN, every_load_run()) == COMPLETE
    assert run_status(CAMPAIGN, every_load_run()[1:]) == PARTIAL  # a config x scenario never recorded
    assert run_status(CAMPAIGN, [*every_load_run()[1:], manifest("n1-c5.2xlarge-gp2", "increasing-intensity",
                                                                 status="running")]) == FAILED
    assert run_status(CAMPAIGN, []) == UNKNOWN


def test_a_runs_row_names_the_scale_model_it_was_measured_on_and_what_the_machine_enforced() -> None:
    runs = every_load_run()
    runs[0] = {**runs[0], "cluster": {"envelope": "enforced: cpu, memory"}}
    runs[1] = {**runs[1], "cluster": {"envelope": "enforced: cpu, disk, memory"}}
    row = run_row(CAMPAIGN, "r1", runs, spark_version="4.0.0", analysis_commit="def", analysed_at=999.0)
    # local-quick runs on the default factors (sizing.resources.scalemodel.DEFAULT_FACTORS: 0.025 cores per vCPU, ...)
    assert row["measured_on"].startswith("local scale model (the default model): 1 vCPU = 0.025 reference cores "
                                         "(uncalibrated host)")
    assert json.loads(row["scale_model"])["disk_divisor"] == 10
    assert row["envelope_enforced"] == "enforced: cpu, disk, memory, enforced: cpu, memory"
    # The nodes ran on this host's calibration, which only the load runs recorded (the spec cannot know the host):
    # the row names the factors they ran on.
    ran_on = {**CAMPAIGN.scale_model.to_dict(), "host_speed": 2.0}
    runs[0] = {**runs[0], "cluster": {**runs[0]["cluster"], "scale_model": ran_on}}
    calibrated = run_row(CAMPAIGN, "r1", runs, spark_version="4.0.0", analysis_commit="def", analysed_at=999.0)
    assert "1 core here = 2.00 reference cores" in calibrated["measured_on"]
    assert json.loads(calibrated["scale_model"])["host_speed"] == 2.0
    cloud = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / "quorum-sizing-2020.yaml")
    assert run_row(cloud, "r1", [], spark_version="4", analysis_commit=None, analysed_at=1.0)["measured_on"] == "aws"
