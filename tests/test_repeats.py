"""Repeats -> the rows of the repeat_intervals and board_intervals tables (sizing.judgement.repeats, pure, no I/O).

Independent checks: known answers worked out by hand from the order statistics (three repeats 100/110/125: median
110, [min, max] = [100, 125], which covers the median 75 % of the time) and from sizing.resources.cost's formula
(monthly cost / (rate / 1000)); the comparisons' verdicts follow from how far apart the hand-made repeats are."""

from __future__ import annotations

import math

import pytest

from sizing.contract import records
from sizing.criteria.stats import HIGHER, INCONCLUSIVE
from sizing.judgement.repeats import (
    BOARD_COST_AT_TARGET,
    BOARD_COST_AT_TOP,
    BOARD_MATCHED_TARGET,
    BOARD_TOP_MATCHED,
    board_entries,
    board_intervals,
    phase_intervals,
)


def summary_rows(values: dict[tuple[str, int], list[float]], p99: float = 50.0) -> list[dict]:
    """phase_summary rows: per (config, phase) one row per repeat with the given confirm rates."""
    out = []
    for (config_id, phase), rates in values.items():
        for repeat, rate in enumerate(rates, start=1):
            out.append({"config_id": config_id, "scenario": "ideal", "repeat": repeat, "phase": phase,
                        "phase_name": f"rate-{phase * 1000}", "target_rate": phase * 1000.0, "confirm_rate": rate,
                        "valid": True, "e2e_p99_ms": p99 * repeat, "time_to_recover_s": math.nan})
    return out


def by_metric(rows: list[dict]) -> dict[tuple, dict]:
    return {(r["config_id"], r["phase"], r["metric"]): r for r in rows}


def test_three_repeats_give_the_median_and_its_75_percent_order_statistic_interval() -> None:
    rows = by_metric(phase_intervals(summary_rows({("a", 1): [110.0, 100.0, 125.0]})))
    rate = rows[("a", 1, "confirm_rate")]
    assert (rate["n"], rate["value"], rate["value_low"], rate["value_high"]) == (3, 110, 100, 125)
    assert rate["value_level"] == pytest.approx(0.75)  # what [min, max] of three repeats covers, stated
    assert (rate["repeats"], rate["valid"], rate["phase_name"], rate["target_rate"]) == (3, True, "rate-1000", 1000.0)
    p99 = rows[("a", 1, "e2e_p99_ms")]  # over repeats 50, 100, 150
    assert (p99["value"], p99["value_low"], p99["value_high"]) == (100, 50, 150)


def test_one_row_per_phase_and_metric_and_a_metric_without_figures_is_null() -> None:
    rows = phase_intervals(summary_rows({("a", 1): [1000.0, 990.0], ("a", 2): [1900.0, 1950.0],
                                         ("b", 1): [1000.0, 1000.0]}), metrics=("confirm_rate", "time_to_recover_s"))
    assert [(r["config_id"], r["phase"], r["metric"]) for r in rows] == [
        ("a", 1, "confirm_rate"), ("a", 1, "time_to_recover_s"), ("a", 2, "confirm_rate"),
        ("a", 2, "time_to_recover_s"), ("b", 1, "confirm_rate"), ("b", 1, "time_to_recover_s")]
    empty = rows[1]  # NaN in every repeat (no fault): no figure, no interval
    assert (empty["n"], empty["value"], empty["value_low"], empty["value_level"], empty["repeats"]) == (
        0, None, None, 0.0, 2)
    assert rows[0]["value"] == 995.0 and rows[0]["value_level"] == pytest.approx(0.5)  # two repeats: 50 %
    # a metric the rows do not have at all (old tables) is as empty as one whose figures are all missing
    assert phase_intervals(summary_rows({("a", 1): [1.0]}), metrics=("backlog_max",))[0]["n"] == 0


def test_a_single_repeat_has_a_value_but_no_interval() -> None:
    rate = by_metric(phase_intervals(summary_rows({("a", 1): [987.0]})))[("a", 1, "confirm_rate")]
    assert (rate["value"], rate["value_low"], rate["value_high"], rate["value_level"], rate["n"]) == (
        987.0, None, None, 0.0, 1)


def test_a_phase_is_valid_only_when_every_repeat_was() -> None:
    rows = summary_rows({("a", 1): [1.0, 2.0, 3.0], ("b", 1): [1.0, 2.0]})
    rows[1]["valid"] = False  # a's repeat 2: the generator fell behind
    rows[3]["valid"] = None  # b's repeat 1: validity unknown, counted valid
    valid = {r["config_id"]: r["valid"] for r in phase_intervals(rows, metrics=("confirm_rate",))}
    assert valid == {"a": False, "b": True}


def test_rows_carry_exactly_the_table_columns_the_step_adds_keys_to() -> None:
    phase = phase_intervals(summary_rows({("a", 1): [1.0]}))[0]
    assert set(phase) | {"campaign", "run_id"} == set(records.table_columns("repeat_intervals"))
    entries = [{"board": BOARD_TOP_MATCHED, "rank": 1, "config_id": "a"}]
    board = board_intervals(entries, [{"config_id": "a", "top_matched_throughput": 1.0}], {"a": 1.0})[0]
    assert set(board) | {"campaign", "run_id"} == set(records.table_columns("board_intervals"))


def leaderboard(config_id: str, monthly: float, top: float | None, capacity_rank: int | None,
                matched: float | None, cost_rank: int | None, at_target: float | None = None,
                target_rank: int | None = None) -> dict:
    return {"config_id": config_id, "monthly_cost": monthly, "top_matched_throughput": top,
            "capacity_rank": capacity_rank, "max_matched_target_rate": matched,
            "cost_per_1k_at_top": monthly / (top / 1000) if top else None, "rank_at_top": cost_rank,
            "cost_per_1k_at_target": at_target, "rank_at_target": target_rank}


def test_board_entries_keep_the_steps_ranks_and_leave_off_configs_without_a_figure() -> None:
    wide = [leaderboard("n3", 1034.4, 1983.0, 1, 2000.0, 2, 1034.4, 2),
            leaderboard("n1", 344.8, 1000.0, 2, 1000.0, 1, 344.8, 1),
            leaderboard("n5", 2000.0, None, None, None, None)]
    entries = board_entries(wide, target_rate=1000.0)
    of = {b: [(e["rank"], e["config_id"], e["rate"]) for e in entries if e["board"] == b]
          for b in (BOARD_TOP_MATCHED, BOARD_MATCHED_TARGET, BOARD_COST_AT_TOP, BOARD_COST_AT_TARGET)}
    assert of[BOARD_COST_AT_TOP] == [(1, "n1", 1000.0), (2, "n3", 1983.0)]  # rank_at_top, priced at its top
    assert of[BOARD_TOP_MATCHED] == [(1, "n3", 1983.0), (2, "n1", 1000.0)]  # capacity_rank
    assert of[BOARD_MATCHED_TARGET] == [(1, "n3", 2000.0), (2, "n1", 1000.0)]  # by value, highest first
    assert of[BOARD_COST_AT_TARGET] == [(1, "n1", 1000.0), (2, "n3", 1000.0)]  # at the campaign target
    assert "n5" not in {e["config_id"] for e in entries}


def test_adjacent_configs_are_told_apart_only_by_an_exact_comparison_of_their_repeats() -> None:
    tops = {"a": [100.0, 104.0, 102.0], "b": [99.0, 103.0, 101.0], "c": [50.0, 55.0, 45.0],
            "d": [40.0, 41.0, 39.0], "e": [30.0, 31.0], "single": [20.0]}
    per_repeat = [{"config_id": c, "repeat": i, "top_matched_throughput": v, "max_matched_target_rate": None}
                  for c, values in tops.items() for i, v in enumerate(values, start=1)]
    entries = [{"board": BOARD_TOP_MATCHED, "rank": rank, "config_id": c} for rank, c in enumerate(tops, start=1)]
    rows = {r["config_id"]: r for r in board_intervals(entries, per_repeat, dict.fromkeys(tops, 1.0))}
    assert list(rows) == list(tops)  # one row per config of the only board with figures over repeats
    assert [(c, r["next_config_id"], r["verdict"]) for c, r in rows.items()] == [
        ("a", "b", INCONCLUSIVE),  # 1 % apart with overlapping repeats: not told apart
        ("b", "c", HIGHER), ("c", "d", HIGHER),  # every pair of repeats on one side: 90 % with 3 vs 3
        ("d", "e", INCONCLUSIVE),  # 3 vs 2 repeats give at most an 80 % interval, however far apart
        ("e", None, None),  # the next one has a single repeat: no claim either way
        ("single", None, None)]  # the last one
    b = rows["b"]
    assert (b["n"], b["n_next"], b["effect_level"]) == (3, 3, pytest.approx(0.9))
    # Hodges-Lehmann on logs: the median of the 9 pairwise ratios b/c is 101/50 (known by hand: the middle pair)
    assert b["effect"] == pytest.approx(101 / 50 - 1) and b["effect_low"] > 0
    assert rows["d"]["effect_level"] == pytest.approx(0.8) and rows["d"]["n_next"] == 2
    assert (rows["single"]["n"], rows["single"]["value"], rows["single"]["value_low"]) == (1, 20.0, None)


def test_the_cost_board_prices_each_repeat_before_its_median() -> None:
    per_repeat = [{"config_id": "a", "repeat": r, "top_matched_throughput": top, "max_matched_target_rate": 1000.0}
                  for r, top in ((1, 1000.0), (2, 2000.0), (3, 4000.0), (4, None))]
    entries = [{"board": board, "rank": 1, "config_id": "a"} for board in
               (BOARD_TOP_MATCHED, BOARD_MATCHED_TARGET, BOARD_COST_AT_TOP, BOARD_COST_AT_TARGET)]
    rows = {r["board"]: r for r in board_intervals(entries, per_repeat, {"a": 1000.0})}
    assert set(rows) == {BOARD_TOP_MATCHED, BOARD_MATCHED_TARGET, BOARD_COST_AT_TOP}  # cost at target: no spread
    cost = rows[BOARD_COST_AT_TOP]  # $1000 a month at 1000, 2000, 4000 msg/s: $1000, $500, $250 per 1000 msg/s
    assert (cost["value"], cost["value_low"], cost["value_high"]) == pytest.approx((500.0, 250.0, 1000.0))
    assert cost["value_level"] == pytest.approx(0.75) and cost["n"] == 3  # the repeat without a top is left out
    assert rows[BOARD_MATCHED_TARGET]["n"] == 4 and rows[BOARD_MATCHED_TARGET]["value"] == 1000.0


def test_an_isolated_scenarios_runs_are_the_phases_of_the_scenario_as_written() -> None:
    # sizing.campaign.family_phases of `ideal` isolated into one run per rate: run k is the family's phase k
    phases = {"ideal-rate-1000": ("ideal", 1), "ideal-rate-2000": ("ideal", 2), "kill": ("kill", None)}
    rows = [{"config_id": "a", "scenario": scenario, "repeat": repeat, "phase": phase, "phase_name": name,
             "target_rate": 0.0, "valid": True, "confirm_rate": rate}
            for scenario, phase, name, rate in (("ideal-rate-1000", 1, "rate-1000", 990.0),
                                                ("ideal-rate-2000", 1, "rate-2000", 1900.0), ("kill", 2, "kill", 5.0))
            for repeat in (1, 2)]
    got = [(r["scenario"], r["phase"], r["phase_name"], r["value"], r["repeats"])
           for r in phase_intervals(rows, metrics=("confirm_rate",), phases=phases)]
    assert got == [("ideal", 1, "rate-1000", 990.0, 2), ("ideal", 2, "rate-2000", 1900.0, 2),
                   ("kill", 2, "kill", 5.0, 2)]
