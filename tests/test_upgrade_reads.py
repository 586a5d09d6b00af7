"""The upgrade table's raw reads (spark_jobs.lib.leaderboards.version_comparison_raw), without Spark: from a file
store holding the raw objects of a run of campaigns/upgrade-local.yaml, the run's broker samples and events of its
adverse scenarios (the search's are left out), every row written, with its run key; nothing at all is read for a
campaign that compares no versions."""

from __future__ import annotations

import dataclasses
import json

from adapters.objectstore import StoreSpec
from sizing.contract.layout import RunKey
from spark_jobs.lib import leaderboards
from tests.spark_records import put
from tests.test_upgrade import CAMPAIGN, NEW, NODES, OLD


def sample(key: RunKey, second: float, node: str, depth: int) -> dict:
    return {**key.as_dict(), "ts": 1.6e9 + second, "second": second, "phase": 1, "node": node, "running": True,
            "mem_used_bytes": 100_000_000, "mem_limit_bytes": 400_000_000, "mem_alarm": False,
            "disk_free_bytes": 10**10, "disk_alarm": False, "queue_messages": depth, "queue_messages_ready": depth,
            "queue_messages_unacked": 0}


def event(key: RunKey, second: float, kind: str, **detail) -> dict:
    return {**key.as_dict(), "ts": 1.6e9 + second, "second": second, "phase": 1, "kind": kind,
            "fault_id": "f1" if kind.startswith("fault") else None, "fault_kind": "stop_node" if kind.startswith(
                "fault") else None, "node": NODES[0], "detail": json.dumps(detail)}


def test_the_run_s_adverse_samples_and_events_are_read_with_their_run_key(tmp_path):
    spec = StoreSpec("file", "bucket", root=str(tmp_path))
    store = spec.open()
    written = {"broker_samples": 0, "events": 0}
    for config in (OLD, NEW):
        for scenario in ("capacity-search", "backlog", "restart-backlog"):
            key = RunKey(CAMPAIGN.name, config, scenario, "u1")
            put(store, key, "broker_samples", [sample(key, s, n, 10) for s in (0.5, 5.5) for n in NODES])
            put(store, key, "events", [event(key, 20.0, "fault_heal", running_after_s=4.0),
                                       event(key, 0.0, "run_start")])
            if scenario != "capacity-search":
                written["broker_samples"] += 6
                written["events"] += 2
        other_run = RunKey(CAMPAIGN.name, config, "backlog", "u0")  # another run's objects: not read
        put(store, other_run, "events", [event(other_run, 1.0, "run_start")])
    raw = leaderboards.version_comparison_raw(spec, CAMPAIGN, "u1")
    assert {name: len(rows) for name, rows in raw.items()} == written
    assert {r["scenario"] for rows in raw.values() for r in rows} == {"backlog", "restart-backlog"}
    assert {r["run_id"] for rows in raw.values() for r in rows} == {"u1"}
    heal = next(r for r in raw["events"] if r["kind"] == "fault_heal")
    assert json.loads(heal["detail"]) == {"running_after_s": 4.0} and heal["repeat"] == 1
    assert leaderboards.version_comparison_raw(spec, dataclasses.replace(CAMPAIGN, purpose="size"), "u1") == {}
