"""Repeats -> intervals (known answers), leaderboard annotations, table contract, GX parsing."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from app.report import repeats
from app.report.tables import (
    ADVERSE,
    ADVERSE_OPTIONAL,
    ADVERSE_REQUIRED,
    BOARD_COST_AT_TARGET,
    BOARD_COST_AT_TOP,
    BOARD_MATCHED_TARGET,
    CAPACITY_REPEATS,
    CAPACITY_REPEATS_REQUIRED,
    LEADERBOARD_OPTIONAL,
    LEADERBOARD_REQUIRED,
    LEADERBOARDS,
    PHASE_SUMMARY,
    PHASE_SUMMARY_OPTIONAL,
    PHASE_SUMMARY_REQUIRED,
    SchemaError,
    board_views,
    conform,
    parse_validation,
)
from sizing import records


def rows(values: dict[tuple[str, int], list[float]], p99: float = 50.0) -> pd.DataFrame:
    out = []
    for (config_id, phase), rates in values.items():
        for repeat, rate in enumerate(rates, start=1):
            out.append({"campaign": "c", "config_id": config_id, "scenario": "ideal", "run_id": "r", "repeat": repeat,
                        "phase": phase, "phase_name": f"rate-{phase * 1000}", "target_rate": phase * 1000.0,
                        "confirm_rate": rate, "consume_rate": rate, "valid": True, "e2e_p99_ms": p99 * repeat,
                        "matched_target": rate >= 0.98 * phase * 1000, "time_to_recover_s": math.nan})
    return pd.DataFrame(out)


def test_three_repeats_give_the_median_and_its_75_percent_order_statistic_interval() -> None:
    summary = repeats.summarize_repeats(rows({("a", 1): [110.0, 100.0, 125.0]}))
    row = summary.iloc[0]
    assert (row["n"], row["confirm_rate"], row["confirm_rate_low"], row["confirm_rate_high"]) == (3, 110, 100, 125)
    assert row["level"] == pytest.approx(0.75)  # what [min, max] of three repeats covers, stated
    # p99 over repeats 50, 100, 150
    assert (row["e2e_p99_ms"], row["e2e_p99_ms_low"], row["e2e_p99_ms_high"]) == (100, 50, 150)
    assert "75 % of the time with 3 repeats" in repeats.interval_note(3)


def test_one_group_per_config_scenario_phase_and_all_nan_metrics_stay_nan() -> None:
    summary = repeats.summarize_repeats(rows({("a", 1): [1000.0, 990.0], ("a", 2): [1900.0, 1950.0],
                                              ("b", 1): [1000.0, 1000.0]}))
    assert list(zip(summary["config_id"], summary["phase"], strict=True)) == [("a", 1), ("a", 2), ("b", 1)]
    assert summary["n"].tolist() == [2, 2, 2]
    assert summary["time_to_recover_s"].isna().all() and "backlog_max" not in summary.columns


def test_a_single_repeat_has_no_interval_and_is_shown_without_brackets() -> None:
    row = repeats.summarize_repeats(rows({("a", 1): [987.0]})).iloc[0]
    assert row["confirm_rate"] == 987.0 and math.isnan(row["confirm_rate_low"]) and row["level"] == 0
    assert repeats.format_interval(987.0, math.nan, math.nan, 1) == "987"
    assert repeats.format_interval(1985.0, 1980.0, 1990.0, 3) == "1,985 [1,980,\u00a01,990]"
    assert repeats.format_interval(math.nan, math.nan, math.nan, 3) == "n/a"


def test_the_report_reads_only_columns_the_tables_have() -> None:
    # The report's column lists name a subset of the one schema per table (sizing.records.TABLES).
    for table, required, optional in ((PHASE_SUMMARY, PHASE_SUMMARY_REQUIRED, PHASE_SUMMARY_OPTIONAL),
                                      (LEADERBOARDS, LEADERBOARD_REQUIRED, LEADERBOARD_OPTIONAL),
                                      (CAPACITY_REPEATS, CAPACITY_REPEATS_REQUIRED, {}),
                                      (ADVERSE, ADVERSE_REQUIRED, ADVERSE_OPTIONAL)):
        assert set(required) | set(optional) <= set(records.table_columns(table)), table


def test_adjacent_configs_are_told_apart_only_by_an_exact_comparison_of_their_repeats() -> None:
    values = {"a": [100.0, 104.0, 102.0], "b": [99.0, 103.0, 101.0], "c": [50.0, 55.0, 45.0],
              "d": [40.0, 41.0, 39.0], "e": [30.0, 31.0], "single": [20.0]}
    notes = repeats.annotate_adjacent(["a", "b", "c", "d", "e", "single"], values)
    assert [(n.rank, n.config_id, n.next_config_id, n.distinguishable) for n in notes] == [
        (1, "a", "b", False), (2, "b", "c", True), (3, "c", "d", True), (4, "d", "e", False)]  # one repeat: no claim
    assert notes[0].text().startswith("not distinguishable from #2 b (+1 % [")
    assert notes[1].text().startswith("ahead of #3: +102 % [") and "(90 %, n = 3 vs 3)" in notes[1].text()
    # 3 vs 2 repeats give at most an 80 % interval: too few to say, however far apart
    assert notes[3].text() == "too few repeats to tell from #5 (n = 3 vs 2: at most 80 %, 90 % needed)"


def test_config_values_can_price_each_repeat() -> None:
    per_repeat = pd.DataFrame({"config_id": ["a"] * 3, "repeat": [1, 2, 3], "top_rate": [1000.0, 2000.0, 4000.0]})
    cost = repeats.config_values(per_repeat, "top_rate", transform=lambda c, v: [1000.0 / (x / 1000) for x in v])
    interval = repeats.config_intervals(cost)["a"]
    assert interval.low == pytest.approx(250.0) and interval.high == pytest.approx(1000.0)
    assert interval.estimate == pytest.approx(500.0) and interval.level == pytest.approx(0.75)


def test_the_table_contract_names_the_missing_column_and_fills_optional_ones() -> None:
    full = pd.DataFrame([dict.fromkeys(PHASE_SUMMARY_REQUIRED, 1)]).rename(columns={"config_id": "config"})
    conformed = conform(full, "phase_summary", PHASE_SUMMARY_REQUIRED, PHASE_SUMMARY_OPTIONAL)
    assert "config_id" in conformed and conformed["time_to_recover_s"].isna().all()
    with pytest.raises(SchemaError, match="confirm_rate"):
        conform(full.drop(columns=["confirm_rate"]), "phase_summary", PHASE_SUMMARY_REQUIRED, PHASE_SUMMARY_OPTIONAL)


def test_stored_validation_result_parsing_lists_failed_expectations() -> None:
    from spark_jobs.lib.validation import Outcome

    results = {"raw_client_seconds": {"success": False, "statistics": {"evaluated_expectations": 3,
                                                                      "successful_expectations": 2}},
               "raw_run_phase": {"success": True, "statistics": {"evaluated_expectations": 4,
                                                                 "successful_expectations": 4}}}
    failure = "raw_client_seconds: ExpectColumnValuesToBeBetween(column=confirmed)"
    doc = Outcome(False, results, [failure]).document("raw", "c", "n3", "r1")
    result = parse_validation(doc, "raw", "n3", "r1")
    assert (result.success, result.evaluated, result.successful) == (False, 7, 6)
    assert result.failed == [failure]


def test_board_views_keep_the_spark_ranks_and_leave_off_configs_without_a_figure() -> None:
    wide = pd.DataFrame([
        {"config_id": "n3", "monthly_cost": 1034.4, "top_matched_throughput": 1983.0, "capacity_rank": 1,
         "max_matched_target_rate": 2000.0, "cost_per_1k_at_top": 521.6, "rank_at_top": 2,
         "cost_per_1k_at_target": 1034.4, "rank_at_target": 2},
        {"config_id": "n1", "monthly_cost": 344.8, "top_matched_throughput": 1000.0, "capacity_rank": 2,
         "max_matched_target_rate": 1000.0, "cost_per_1k_at_top": 344.8, "rank_at_top": 1,
         "cost_per_1k_at_target": 344.8, "rank_at_target": 1},
        {"config_id": "n5", "monthly_cost": 2000.0, "top_matched_throughput": None, "capacity_rank": None,
         "max_matched_target_rate": None, "cost_per_1k_at_top": None, "rank_at_top": None,
         "cost_per_1k_at_target": None, "rank_at_target": None},
    ])
    boards = board_views(wide, target_rate=1000.0)
    at_top = boards[boards["board"] == BOARD_COST_AT_TOP]
    assert at_top[["rank", "config_id", "value", "rate"]].values.tolist() == [[1, "n1", 344.8, 1000.0],
                                                                              [2, "n3", 521.6, 1983.0]]
    at_target = boards[boards["board"] == BOARD_COST_AT_TARGET]
    assert at_target["rate"].tolist() == [1000.0, 1000.0] and "n5" not in set(boards["config_id"])
    assert boards[boards["board"] == BOARD_MATCHED_TARGET]["config_id"].tolist() == ["n3", "n1"]
