"""The tasks' raw-result checks and log uploads go through the object-store adapter (issue 35 item 5: one client per
outside system), against the moto S3 server; every object is read back with a boto3 client of the test's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rabbit_sizing.uploads import configs_with_complete_raw, publish_run_log, publish_run_logs, raw_store

from adapters.objectstore import LocalStore, S3Settings
from sizing.campaign import ClusterShape
from sizing.contract import layout, raw_layout
from sizing.contract.layout import RunKey
from sizing.planning.plan import Trial
from sizing.planning.trialcluster import ClusterRequest
from sizing.resources.cost import Volume

TRIAL = Trial(campaign="c", config_id="k", repeat=1, repeats=1, slot=0, deployment="local", run_label="r1",
              spec_path="c.yaml", scenarios=("steps",), max_parallel_configs=1,
              cluster=ClusterRequest(ClusterShape(nodes=1, instance_type="c5.2xlarge", volume=Volume("gp2")),
                                     monthly_cost=0.0, broker_config={}, volume_defaults={}, lifetime_s=60.0),
              planned_wall_s=60.0)
RUN = {"campaign": "c", "config_id": "k", "scenario": "steps", "run_id": "r1", "repeat": 1}


def _objects(s3: S3Settings) -> dict[str, bytes]:
    client = s3.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket).get("Contents", [])]
    return {key: client.get_object(Bucket=s3.bucket, Key=key)["Body"].read() for key in keys}


def test_exists_is_true_only_for_a_whole_key(s3: S3Settings, tmp_path: Path) -> None:
    for store in (s3.store(), LocalStore(tmp_path)):
        store.put("a/b.json", b"{}")
        assert store.exists("a/b.json")
        assert not store.exists("a/b") and not store.exists("a/") and not store.exists("a/c.json"), store


def test_a_run_log_lands_under_its_layout_key_and_counts_only_once_its_manifest_is_in(
        s3: S3Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path))
    assert publish_run_log(TRIAL, "steps", 1) is None  # nothing to publish: the generator left no log here
    log = tmp_path / "runs" / "c" / "k" / "r1" / "steps-r1.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"load run output\n")
    key = publish_run_log(TRIAL, "steps", 1)
    assert key == layout.run_log_key("c", "k", "r1", "steps", 1)
    assert _objects(s3) == {key: b"load run output\n"}
    with pytest.raises(RuntimeError, match="manifests are missing"):
        publish_run_logs(TRIAL, [RUN])
    manifest = raw_layout.manifest_key(RunKey(**RUN))
    s3.client().put_object(Bucket=s3.bucket, Key=manifest, Body=json.dumps({"status": "running"}).encode())
    assert publish_run_logs(TRIAL, [RUN]) == [key]
    # a manifest the generator has not finished does not make the config analysable; a complete one does
    assert configs_with_complete_raw([TRIAL]) == []
    s3.client().put_object(Bucket=s3.bucket, Key=manifest, Body=json.dumps({"status": "complete"}).encode())
    assert configs_with_complete_raw([TRIAL]) == [TRIAL]


def test_a_rerun_empties_only_its_own_raw_partition(s3: S3Settings) -> None:
    from rabbit_sizing.operators.loadgen import LoadgenOperator

    mine, other = RunKey(**RUN), RunKey(**{**RUN, "repeat": 2})
    for key in (mine, other):
        raw_store().put(raw_layout.raw_part_key(key, "accounting"), b"x")
        raw_store().put(raw_layout.manifest_key(key), b"{}")
    LoadgenOperator(task_id="run", trial=TRIAL.to_dict(), cluster={})._clear_raw(raw_layout.raw_run_prefix(mine))
    assert sorted(_objects(s3)) == sorted([raw_layout.raw_part_key(other, "accounting"),
                                           raw_layout.manifest_key(other)])
