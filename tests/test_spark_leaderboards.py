"""Leaderboards on a local SparkSession: seed 000's cost tables, Pareto front, adverse verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizing.campaign import load_campaign
from sizing.contract import records
from spark_jobs.lib import leaderboards
from tests.seed_000 import CORRECTED, SEED_000, dollars

pytestmark = pytest.mark.spark

CAMPAIGN = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / "quorum-sizing-2020.yaml")

def summary_row(config_id: str, scenario: str, phase: int, target: float, carried: float, **extra) -> dict:
    row = dict.fromkeys(records.table_columns("phase_summary"))
    row.update(campaign=CAMPAIGN.name, config_id=config_id, scenario=scenario, run_id="R1", repeat=1, phase=phase,
               phase_name=f"rate-{target:g}", target_rate=target, confirm_rate=carried, consume_rate=carried,
               publish_rate=carried, valid=True, e2e_p99_ms=200.0, slo_p99_ms=1000.0, faults=0,
               matched_target=carried >= 0.98 * target)
    row.update(extra)
    return row


def config_id(nodes: int, instance: str, volume: str) -> str:
    return next(s.config_id for s in CAMPAIGN.clusters
                if (s.nodes, s.instance_type, s.volume.type) == (nodes, instance, volume))


@pytest.fixture(scope="module")
def tables(spark):
    rows = []
    for volume, entries in SEED_000.items():
        for nodes, instance, rate, _ in entries:
            cid = config_id(nodes, instance, volume)
            # Seed 000 ran each intensity as its own run (quorum-sizing-2020: steps.isolate): one phase each.
            above = (rate // 5000 + 1) * 5000  # the intensity the top was carried at, short of it within the SLO
            rows.append(summary_row(cid, f"increasing-intensity-rate-{above:g}", 1, above, rate))
            # ... plus a lower one that met 30k in full
            rows.append(summary_row(cid, "increasing-intensity-rate-30000", 1, 30000.0,
                                    30000.0 if rate >= 36e3 else rate))
            # An overloaded phase above capacity with p99 far over the SLO: never counts as capacity.
            rows.append(summary_row(cid, "increasing-intensity-rate-70000", 1, 70000.0, rate * 1.1,
                                    e2e_p99_ms=9000.0))
            rows.append(summary_row(cid, "broker-kill-rate-30000", 1, 30000.0, 29000.0 if nodes == 3 else 30000.0,
                                    faults=1, time_to_recover_s=12.0, recovered=True, worst_dip_ratio=0.4,
                                    unavailable_s=3.0, lost=0))
    summary = spark.createDataFrame(rows, records.table_ddl("phase_summary"))
    built = leaderboards.build(spark, summary, CAMPAIGN)
    return {name: [r.asDict() for r in frame.collect()] for name, frame in built.items()}


def test_cost_per_1000_at_top_throughput_reproduces_seed_000(tables):
    board = tables["leaderboards"]
    assert len(board) == 21 and {r["queue_type"] for r in board} == {"quorum"}
    for volume, entries in SEED_000.items():
        mine = sorted((r for r in board if r["volume_type"] == volume), key=lambda r: r["cost_per_1k_at_top"])
        got = [(r["nodes"], r["instance_type"], dollars(r["cost_per_1k_at_top"])) for r in mine]
        want = sorted(((n, i, CORRECTED.get((volume, n, i), printed)) for n, i, _, printed in entries),
                      key=lambda t: t[2])
        assert got == want, volume
        for r in mine:  # the top throughput is the highest rate carried within the SLO
            seed_rate = next(rate for n, i, rate, _ in entries if (n, i) == (r["nodes"], r["instance_type"]))
            assert r["top_matched_throughput"] == seed_rate
    # Ranks are campaign-wide (one queue type): 1..21 with the cheapest first.
    assert sorted(r["rank_at_top"] for r in board) == list(range(1, 22))
    cheapest = min(board, key=lambda r: r["cost_per_1k_at_top"])
    assert cheapest["rank_at_top"] == 1 and cheapest["config_id"] == "n5-c5.2xlarge-gp2"


def test_cost_at_target_only_for_configs_that_met_it_and_pareto_front(tables):
    board = {r["config_id"]: r for r in tables["leaderboards"]}
    # 3x16 st1 (27k) never carried 30k: no cost at target, no rank.
    assert board["n3-c5.4xlarge-st1"]["met_target"] is False
    assert board["n3-c5.4xlarge-st1"]["cost_per_1k_at_target"] is None
    assert board["n3-c5.4xlarge-st1"]["rank_at_target"] is None
    # 7x8 gp2: $2413.60 / 30 = $80.45 per 1000 msg/s at the 30k target.
    assert board["n7-c5.2xlarge-gp2"]["cost_per_1k_at_target"] == pytest.approx(2413.6 / 30)
    front = {r["config_id"] for r in tables["pareto"]}
    assert front == {c for c, r in board.items() if r["pareto"]}
    for c in front:  # nothing on the front is both dearer and smaller than another config
        assert not any(o["monthly_cost"] <= board[c]["monthly_cost"]
                       and o["top_matched_throughput"] > board[c]["top_matched_throughput"]
                       for o in board.values())
    assert "n5-c5.2xlarge-gp2" in front and "n3-c5.9xlarge-io1" not in front


def test_adverse_verdicts(tables):
    verdicts = {r["config_id"]: r for r in tables["adverse"]}
    assert len(verdicts) == 21 and {r["scenario"] for r in verdicts.values()} == {"broker-kill"}
    assert {r["criterion"] for r in verdicts.values()} == {"fault"}
    assert verdicts["n5-c5.2xlarge-gp2"]["held"] is True and verdicts["n5-c5.2xlarge-gp2"]["reason"] is None
    assert verdicts["n3-c5.4xlarge-gp2"]["held"] is False  # carried 29k of 30k during the kill
    assert verdicts["n3-c5.4xlarge-gp2"]["reason"] == "1 of 1 judged phases missed their target rate or the SLO"
    assert verdicts["n3-c5.4xlarge-gp2"]["worst_confirm_ratio"] == pytest.approx(29 / 30)
    assert verdicts["n5-c5.2xlarge-gp2"]["max_time_to_recover_s"] == 12.0
    assert verdicts["n5-c5.2xlarge-gp2"]["worst_dip_ratio"] == 0.4


def test_capacity_repeats_count_conclusive_phases_within_the_slo_and_the_board_takes_their_median(spark):
    cid = config_id(3, "c5.4xlarge", "gp2")
    rows = [  # known answers below are worked out by hand from these rows
        summary_row(cid, "increasing-intensity", 1, 1000.0, 1000.0, repeat=1),
        # carried = min(confirm 1990, consume 1890) = 1890: below 98 % of 2000, still carried within the SLO
        summary_row(cid, "increasing-intensity", 2, 2000.0, 1990.0, repeat=1, consume_rate=1890.0,
                    matched_target=False),
        summary_row(cid, "increasing-intensity", 3, 3000.0, 2600.0, repeat=1, e2e_p99_ms=5000.0),  # beyond the SLO
        summary_row(cid, "increasing-intensity", 1, 1000.0, 1000.0, repeat=2),
        summary_row(cid, "increasing-intensity", 2, 2000.0, 1400.0, repeat=2),
        # the generator lagged (invalid): evidence neither way (sizing.criteria.rules.conclusive), though it matched
        summary_row(cid, "increasing-intensity", 3, 3000.0, 2950.0, repeat=2, valid=False,
                    invalid_reason="loadgen_behind"),
        # invalid and missed: not evidence either
        summary_row(cid, "increasing-intensity", 4, 4000.0, 3500.0, repeat=2, valid=False,
                    invalid_reason="loadgen_cpu_saturated"),
        # a fault scenario never counts toward capacity
        summary_row(cid, "broker-kill", 1, 5000.0, 4900.0, repeat=1, faults=1),
    ]
    summary = spark.createDataFrame(rows, records.table_ddl("phase_summary"))
    per_repeat = leaderboards.capacity_repeats(summary, ["increasing-intensity"])
    got = sorted((r.asDict() for r in per_repeat.collect()), key=lambda r: r["repeat"])
    assert [(r["repeat"], r["top_matched_throughput"], r["top_matched_phase"], r["max_matched_target_rate"],
             r["capacity_phases"], r["top_throughput_any_latency"]) for r in got] == [
        (1, 1890.0, "rate-2000", 1000.0, 2, 2600.0), (2, 1400.0, "rate-2000", 1000.0, 2, 1400.0)]
    board = leaderboards.config_capacity(per_repeat).collect()[0]
    assert board["top_matched_throughput"] == pytest.approx((1890.0 + 1400.0) / 2)  # the median of two repeats
    assert board["max_matched_target_rate"] == 1000.0  # the intensity matched in every repeat
    assert board["capacity_phases"] == 4


def test_repeat_intervals_show_each_isolated_run_as_a_step_of_the_scenario_as_written(tables):
    """Independent check: the spec's step order worked out by hand (1k, 5k, 10k, ..., 70k msg/s in both scenarios:
    the 30k run is step 7, the 70k run step 15), and with one repeat each figure is its phase_summary row's own,
    without an interval."""
    cid = config_id(5, "c5.2xlarge", "gp2")
    rows = {(r["config_id"], r["scenario"], r["phase"], r["metric"]): r for r in tables["repeat_intervals"]}
    at_30k = rows[(cid, "increasing-intensity", 7, "confirm_rate")]
    assert (at_30k["phase_name"], at_30k["target_rate"], at_30k["run_id"]) == ("rate-30000", 30000.0, "R1")
    assert (at_30k["value"], at_30k["n"], at_30k["repeats"], at_30k["value_low"], at_30k["value_level"]) == (
        30000.0, 1, 1, None, 0.0)
    at_70k = rows[(cid, "increasing-intensity", 15, "e2e_p99_ms")]
    assert (at_70k["phase_name"], at_70k["value"]) == ("rate-70000", 9000.0)  # the overloaded phase's p99
    assert {s for _, s, _, _ in rows} == {"increasing-intensity", "broker-kill"}  # no run's own name is left
    assert rows[(cid, "broker-kill", 7, "time_to_recover_s")]["value"] == 12.0  # its 30k run: step 7 too


def test_board_intervals_follow_the_leaderboards_ranks_and_make_no_claim_from_one_repeat(tables):
    """Independent check: the leaderboard's own ranks and figures (Spark's median of one repeat, priced by the
    driver) are the board_intervals rows' ranks and values; one repeat per config gives no interval, no comparison."""
    board = {r["config_id"]: r for r in tables["leaderboards"]}
    rows = tables["board_intervals"]
    cost = {r["config_id"]: r for r in rows if r["board"] == "cost_at_top"}
    top = {r["config_id"]: r for r in rows if r["board"] == "top_matched_throughput"}
    assert set(cost) == set(top) == set(board)  # every config carried something within the SLO
    for config, row in cost.items():
        assert row["rank"] == board[config]["rank_at_top"]
        assert row["value"] == pytest.approx(board[config]["cost_per_1k_at_top"], rel=1e-12)
        assert top[config]["rank"] == board[config]["capacity_rank"]
        assert top[config]["value"] == board[config]["top_matched_throughput"]
    assert {(r["n"], r["value_low"], r["value_level"], r["next_config_id"], r["verdict"]) for r in rows} == {
        (1, None, 0.0, None, None)}


def test_a_sizing_campaign_has_no_upgrade_rows(tables):
    assert tables["upgrade"] == []


def test_a_version_comparison_writes_the_upgrade_table_from_its_phases_and_raw_rows(spark):
    # the synthetic run of campaigns/upgrade-local.yaml whose figures tests/test_upgrade.py works out by hand
    from tests.test_upgrade import CAMPAIGN as UPGRADE
    from tests.test_upgrade import NEW, OLD, synthetic_run

    phases, _, samples, events = synthetic_run()
    rows = []
    for phase in phases:
        row = dict.fromkeys(records.table_columns("phase_summary"))
        row.update({k: v for k, v in phase.items() if v is not None})
        row.update(campaign=UPGRADE.name, phase_name=f"phase-{phase['phase']}", duration_s=8.0, warmup_s=2.0,
                   group="main", foreground=True, probe_stage="ladder" if phase["scenario"] == "capacity-search"
                   else None, probe_passed=True if phase["scenario"] == "capacity-search" else None)
        rows.append(row)
    # a background group's row is not judged: its p99 must not reach the table
    rows.append({**rows[0], "group": "noisy", "foreground": False, "e2e_p99_ms": 5000.0})
    summary = spark.createDataFrame(rows, records.table_ddl("phase_summary"))
    built = leaderboards.build(spark, summary, UPGRADE, "u1", {"broker_samples": samples, "events": events})
    table = [r.asDict() for r in built["upgrade"].collect()]
    assert set(table[0]) == set(records.table_columns("upgrade")) and {r["run_id"] for r in table} == {"u1"}
    value = {(r["config_id"], r["metric"]): r["value"] for r in table}
    assert value[(OLD, "p99_at_target_ms")] == 40.0 and value[(NEW, "p99_at_target_ms")] == 30.0
    assert value[(NEW, "drain_rate_msg_s")] == pytest.approx(4000.0)
    assert value[(OLD, "memory_per_message_bytes")] == pytest.approx(3000.0)
    assert (value[(OLD, "restart_s")], value[(NEW, "restart_s")]) == (6.0, 8.0)
    restart = next(r for r in table if r["config_id"] == NEW and r["metric"] == "restart_s")
    assert (restart["expected"], restart["agrees"]) == ("lower", False)  # the contradiction, kept
