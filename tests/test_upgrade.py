"""The upgrade question's figures (sizing/judgement/upgrade.py, issue 33), on known answers: each definition on rows
worked by hand, and the table rows of campaigns/upgrade-local.yaml from synthetic phase, capacity, broker-sample and
event rows.

The expected directions are the published ones (RabbitMQ's 3.12 performance post: long quorum-queue backlogs drain far
faster from 3.12 on; the 4.0 quorum-queue checkpoints announcement: a node holding a large quorum backlog restarts much
faster); the tests check that the table states them and says whether a measurement agrees, a contradiction included."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sizing.campaign import load_campaign
from sizing.contract import records
from sizing.judgement import upgrade
from sizing.judgement.adverse import Drain

CAMPAIGN = load_campaign(Path(__file__).resolve().parents[1] / "campaigns" / "upgrade-local.yaml")
OLD, NEW = "n3-c5.2xlarge-gp2-rmq3.10", "n3-c5.2xlarge-gp2-rmq4.0"
NODES = ("rabbit-1", "rabbit-2", "rabbit-3")


def test_drain_rate_is_the_messages_drained_over_the_seconds_from_the_peak():
    # 20,100 at the peak down to the 100-message level in 12 s: 20,000 / 12
    assert upgrade.drain_rate(Drain(20_100, True, 12.0), 100.0) == pytest.approx(1666.667, rel=1e-6)
    assert upgrade.drain_rate(Drain(20_100, False, None), 100.0) is None  # not drained: no rate
    assert upgrade.drain_rate(Drain(80, True, 0.0), 100.0) is None  # never above the level


def rounds(*figures: tuple[float, list[int | None], list[int]]) -> list[dict]:
    """broker_samples rows: per round (second, each node's memory, each node's queue depth)."""
    return [{"second": second, "node": node, "running": True, "mem_used_bytes": mem, "queue_messages": depth}
            for second, mems, depths in figures for node, mem, depth in zip(NODES, mems, depths, strict=True)]


def test_memory_per_message_is_the_cluster_memory_increase_over_the_messages_stored():
    samples = rounds((0.4, [100_000_000] * 3, [0, 0, 0]),
                     (5.4, [110_000_000] * 3, [4_000, 3_000, 3_000]),
                     # the deepest round is incomplete (a node's memory missing): it does not count
                     (10.4, [130_000_000, None, 130_000_000], [9_000, 9_000, 9_000]),
                     (15.4, [120_000_000] * 3, [8_000, 6_000, 6_000]))
    # 3 x 20 MB more at 20,000 messages: 3,000 bytes each
    assert upgrade.memory_per_message(samples) == pytest.approx(3000.0)
    # a depth already stored at the first round is not counted as stored since
    started = rounds((0.4, [100_000_000] * 3, [1_000, 0, 0]), (5.4, [110_000_000] * 3, [6_000, 0, 0]))
    assert upgrade.memory_per_message(started) == pytest.approx(30_000_000 / 5_000)
    assert upgrade.memory_per_message(rounds((0.4, [1] * 3, [0] * 3))) is None  # one round: nothing to compare


def heal(node: str, second: float, kind: str = "stop_node", **detail) -> dict:
    return {"kind": "fault_heal", "fault_kind": kind, "node": node, "second": second, "detail": json.dumps(detail)}


def test_restart_time_is_the_executors_running_after_else_the_first_running_sample():
    events = [heal("rabbit-1", 20.0, running_after_s=4.2), heal("rabbit-2", 40.0, "kill_node", running_after_s=1.5),
              heal("rabbit-3", 50.0, "memory_alarm", running_after_s=99.0),  # not a node restart
              heal("rabbit-3", 60.0, already_running=True)]  # nothing was started
    assert upgrade.restart_seconds(events) == 4.2
    # without the executor's figure (aws): the first sample at or after the heal that sees the node running
    samples = [{"second": s, "node": "rabbit-1", "running": up} for s, up in ((18.0, False), (23.0, False),
                                                                             (28.0, True), (33.0, True))]
    assert upgrade.restart_seconds([heal("rabbit-1", 20.0)], samples) == 8.0
    assert upgrade.restart_seconds([heal("rabbit-1", 20.0)], samples[:2]) is None  # never back


def test_published_results_set_the_expected_direction_between_two_versions():
    drain, restart = "drain_rate_msg_s", "restart_s"
    assert upgrade.expected_direction(drain, "3.10", "4.0").direction == upgrade.HIGHER  # the 3.12 post
    assert "3.12" in upgrade.expected_direction(drain, "3.10", "4.0").source
    assert upgrade.expected_direction(restart, "3.10", "4.0").direction == upgrade.LOWER  # 4.0 checkpoints
    assert upgrade.expected_direction(restart, "4.0", "3.10").direction == upgrade.HIGHER  # a downgrade: reversed
    assert upgrade.expected_direction(drain, "3.12", "4.0") is None  # both after the 3.12 change
    assert upgrade.expected_direction(restart, "3.10", "3.11") is None
    assert upgrade.expected_direction("capacity_msg_s", "3.10", "4.0") is None  # nothing published
    assert upgrade.expected_direction(drain, None, "4.0") is None


def test_only_a_compare_of_configs_differing_in_their_version_is_a_version_comparison():
    assert upgrade.version_arms(CAMPAIGN) == {OLD: "3.10", NEW: "4.0"}
    other = dataclasses.replace(CAMPAIGN.clusters[1], instance_type="c5.4xlarge")
    assert upgrade.version_arms(dataclasses.replace(CAMPAIGN, clusters=(CAMPAIGN.clusters[0], other))) is None
    assert upgrade.version_arms(dataclasses.replace(CAMPAIGN, purpose="size")) is None


def phase(config: str, scenario: str, number: int, **figures) -> dict:
    row = dict.fromkeys(upgrade.PHASE_INPUTS)
    row.update({"config_id": config, "scenario": scenario, "run_id": "u1", "repeat": 1, "phase": number,
                "valid": True, "lost": 0, "duplicates": 0, "matched_target": True, **figures})
    return row


def backlog_phases(config: str, last_above_s: float, reduced: float) -> list[dict]:
    """The backlog scenario's three phases: peak 20,100 at second 28, drain level 100 (1 s of the final 100 msg/s)."""
    level = {"drain_level_msgs": 100.0}
    return [phase(config, "backlog", 1, target_rate=300.0, backlog_max_client=500, backlog_peak_s=8.0,
                  backlog_end_client=500, backlog_last_above_s=8.0, reduced_publish_s=0.0, **level),
            phase(config, "backlog", 2, target_rate=1500.0, backlog_max_client=20_100, backlog_peak_s=28.0,
                  backlog_end_client=20_100, backlog_last_above_s=28.0, reduced_publish_s=reduced, **level),
            phase(config, "backlog", 3, target_rate=100.0, backlog_max_client=20_000, backlog_peak_s=29.0,
                  backlog_end_client=40, backlog_last_above_s=last_above_s, reduced_publish_s=0.0, **level)]


def synthetic_run() -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    phases = [phase(OLD, "capacity-search", 1, target_rate=500.0, e2e_p99_ms=40.0),
              phase(OLD, "capacity-search", 2, target_rate=750.0, e2e_p99_ms=60.0),
              phase(NEW, "capacity-search", 1, target_rate=500.0, e2e_p99_ms=30.0),
              phase(NEW, "capacity-search", 2, target_rate=500.0, e2e_p99_ms=999.0, valid=False),  # not counted
              *backlog_phases(OLD, last_above_s=39.0, reduced=3.0),  # drained 12 s after the peak
              *backlog_phases(NEW, last_above_s=32.0, reduced=0.0),  # 5 s
              # seconds of reduced publishing add up over the run's phases: 9 + 0 against 4 + 2
              *[phase(c, "restart-backlog", n, target_rate=rate, reduced_publish_s=r)
                for c, figures in ((OLD, (9.0, 0.0)), (NEW, (4.0, 2.0)))
                for n, rate, r in zip((1, 2), (1500.0, 300.0), figures, strict=True)]]
    capacity = [{"config_id": OLD, "scenario": "capacity-search", "sustainable_rate": 1000.0},
                {"config_id": NEW, "scenario": "capacity-search", "sustainable_rate": 1500.0}]
    samples = []
    for config, per_message in ((OLD, 3000), (NEW, 1500)):
        for row in rounds((0.4, [100_000_000] * 3, [0] * 3),
                          (25.4, [100_000_000 + per_message * 20_000 // 3] * 3, [10_000, 5_000, 5_000])):
            samples.append({**row, "config_id": config, "scenario": "backlog", "run_id": "u1", "repeat": 1})
    # 4.0 took longer to come back here: a contradiction of the 4.0 announcement, to be reported as measured
    events = [{**heal("rabbit-1", 21.0, running_after_s=t), "config_id": c, "scenario": "restart-backlog",
               "run_id": "u1", "repeat": 1} for c, t in ((OLD, 6.0), (NEW, 8.0))]
    return phases, capacity, samples, events


def test_the_table_sets_each_figure_of_4_0_beside_3_10_with_the_published_direction():
    rows = upgrade.upgrade_rows(CAMPAIGN, *synthetic_run())
    assert all(set(r) == set(records.table_columns("upgrade")) - {"run_id"} for r in rows)
    new = {(r["metric"], r["scenario"]): r for r in rows if r["config_id"] == NEW}
    old = {(r["metric"], r["scenario"]): r for r in rows if r["config_id"] == OLD}
    assert set(new) == set(old) == {("capacity_msg_s", "capacity-search"), ("p99_at_target_ms", "capacity-search"),
                                    ("drain_rate_msg_s", "backlog"), ("reduced_publish_s", "backlog"),
                                    ("reduced_publish_s", "restart-backlog"),
                                    ("memory_per_message_bytes", "backlog"), ("restart_s", "restart-backlog")}
    assert [r["metric"] for r in rows][:2] == ["capacity_msg_s"] * 2  # in METRICS' order, the report's
    assert all(r["baseline_config_id"] is None and r["change"] is None for r in old.values())

    def check(key, value, base, direction, expected=None, agrees=None, better=None):
        row = new[key]
        assert (row["value"], row["baseline_value"]) == (pytest.approx(value), pytest.approx(base)), key
        assert row["change"] == pytest.approx(value / base - 1)
        assert (row["direction"], row["expected"], row["agrees"], row["better"]) == (direction, expected, agrees,
                                                                                      better), key
        assert row["verdict"] in (None, "inconclusive") and row["n"] == row["n_baseline"] == 1

    check(("capacity_msg_s", "capacity-search"), 1500.0, 1000.0, "higher", better=True)
    check(("p99_at_target_ms", "capacity-search"), 30.0, 40.0, "lower", better=True)  # the probe at 500 only
    # 20,000 messages in 12 s against 5 s: the 3.12 post's direction, measured
    check(("drain_rate_msg_s", "backlog"), 4000.0, 1666.667, "higher", "higher", True, True)
    check(("memory_per_message_bytes", "backlog"), 1500.0, 3000.0, "lower", better=True)
    check(("reduced_publish_s", "restart-backlog"), 6.0, 9.0, "lower", better=True)
    # the measured restart contradicts the announcement: stated, not hidden
    check(("restart_s", "restart-backlog"), 8.0, 6.0, "higher", "lower", False, False)
    assert "checkpoints" in new[("restart_s", "restart-backlog")]["expected_source"]
    assert new[("reduced_publish_s", "backlog")]["change"] == -1.0  # 3 s to none


def test_repeats_give_the_median_and_a_campaign_without_versions_no_rows():
    phases, capacity, samples, events = synthetic_run()
    capacity += [{**capacity[1], "sustainable_rate": 1700.0}, {**capacity[1], "sustainable_rate": 1100.0}]
    rows = upgrade.upgrade_rows(CAMPAIGN, phases, capacity, samples, events)
    row = next(r for r in rows if r["config_id"] == NEW and r["metric"] == "capacity_msg_s")
    assert (row["value"], row["n"], row["n_baseline"], row["verdict"]) == (1500.0, 3, 1, "inconclusive")
    assert upgrade.upgrade_rows(dataclasses.replace(CAMPAIGN, purpose="size"), phases, capacity) == []


def test_direction_against_the_practical_threshold_and_against_a_baseline_of_nothing():
    assert upgrade.direction(105.0, 100.0) == "higher" and upgrade.direction(104.0, 100.0) == "unchanged"
    assert upgrade.direction(95.0, 100.0) == "lower"
    # 3 s of reduced publishing where the baseline had none: higher, though no relative change exists
    assert upgrade.direction(3.0, 0.0) == "higher" and upgrade.direction(0.0, 0.0) == "unchanged"
    assert upgrade.direction(3.0, None) is None


def test_a_drain_within_one_second_is_a_lower_bound_and_the_row_says_so():
    assert upgrade.drain_at_resolution(Drain(25_000, True, 1.0))
    assert not upgrade.drain_at_resolution(Drain(25_000, True, 2.0))
    assert not upgrade.drain_at_resolution(Drain(25_000, False, None))
    phases, capacity, samples, events = synthetic_run()
    # 4.0's backlog gone in the second after its peak (28 -> 29): 20,000 msg/s at least
    phases = [r for r in phases if not (r["config_id"] == NEW and r["scenario"] == "backlog")]
    phases += backlog_phases(NEW, last_above_s=28.0, reduced=0.0)
    rows = {(r["config_id"], r["metric"]): r for r in upgrade.upgrade_rows(CAMPAIGN, phases, capacity, samples,
                                                                           events)}
    assert rows[(NEW, "drain_rate_msg_s")]["value"] == 20_000.0 and rows[(NEW, "drain_rate_msg_s")]["lower_bound"]
    assert not rows[(OLD, "drain_rate_msg_s")]["lower_bound"] and not rows[(NEW, "restart_s")]["lower_bound"]
