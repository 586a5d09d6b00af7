"""The report's side of figures over repeats: it reads and words the interval tables (known answers: the rows
below), never computes them; the table contract, board views, GX parsing."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from app.report import fmt, repeats
from app.report.context import ReportContext
from app.report.html import esc
from app.report.sections import intensity
from app.report.tables import (
    ADVERSE,
    ADVERSE_OPTIONAL,
    ADVERSE_REQUIRED,
    BOARD_COLUMNS,
    BOARD_COST_AT_TARGET,
    BOARD_COST_AT_TOP,
    BOARD_INTERVALS,
    BOARD_INTERVALS_REQUIRED,
    BOARD_MATCHED_TARGET,
    BOARD_TOP_MATCHED,
    LEADERBOARD_OPTIONAL,
    LEADERBOARD_REQUIRED,
    LEADERBOARDS,
    PHASE_SUMMARY,
    PHASE_SUMMARY_OPTIONAL,
    PHASE_SUMMARY_REQUIRED,
    REPEAT_INTERVALS,
    REPEAT_INTERVALS_REQUIRED,
    ReportData,
    SchemaError,
    board_views,
    conform,
    numbers,
    parse_validation,
    phase_interval_view,
)
from sizing.campaign import load_campaign
from sizing.contract import records
from sizing.judgement import repeats as sizing_repeats
from tests.report_sample import RUN_ID, SPEC, phase_summary_rows, repeat_interval_rows


def test_a_figure_is_shown_with_its_bracket_only_when_there_is_an_interval() -> None:
    assert repeats.format_interval(987.0, math.nan, math.nan, 1) == "987"
    assert repeats.format_interval(1985.0, 1980.0, 1990.0, 3) == "1,985 [1,980,\u00a01,990]"
    assert repeats.format_interval(math.nan, math.nan, math.nan, 3) == "n/a"
    # the coverage is the table's (0.75 for three repeats), written as people read it
    assert "75 % of the time with 3 repeats" in repeats.interval_note(3, 0.75)
    assert repeats.interval_note(1, 0.0) == "One repeat: no interval."


def test_the_report_reads_only_columns_the_tables_have() -> None:
    # The report's column lists name a subset of the one schema per table (sizing.contract.records.TABLES).
    for table, required, optional in ((PHASE_SUMMARY, PHASE_SUMMARY_REQUIRED, PHASE_SUMMARY_OPTIONAL),
                                      (LEADERBOARDS, LEADERBOARD_REQUIRED, LEADERBOARD_OPTIONAL),
                                      (REPEAT_INTERVALS, REPEAT_INTERVALS_REQUIRED, {}),
                                      (BOARD_INTERVALS, BOARD_INTERVALS_REQUIRED, {}),
                                      (ADVERSE, ADVERSE_REQUIRED, ADVERSE_OPTIONAL)):
        assert set(required) | set(optional) <= set(records.table_columns(table)), table


def test_adjacent_configs_comparisons_are_worded_from_the_table_rows() -> None:
    """The board_intervals rows sizing.judgement.repeats writes for hand-made repeats (tests/test_repeats.py checks
    their figures), written as notes: the verdict, effect, interval and counts are the row's."""
    tops = {"a": [100.0, 104.0, 102.0], "b": [99.0, 103.0, 101.0], "c": [50.0, 55.0, 45.0],
            "d": [40.0, 41.0, 39.0], "e": [30.0, 31.0], "single": [20.0]}
    per_repeat = [{"config_id": c, "top_matched_throughput": v} for c, values in tops.items() for v in values]
    entries = [{"board": BOARD_TOP_MATCHED, "rank": rank, "config_id": c} for rank, c in enumerate(tops, start=1)]
    table = numbers(pd.DataFrame(sizing_repeats.board_intervals(entries, per_repeat, dict.fromkeys(tops, 1.0))))
    notes = {r["config_id"]: repeats.adjacent_note(r) for r in table.to_dict("records")}
    assert notes["a"].startswith("not distinguishable from #2 b (+1 % [")
    assert notes["b"].startswith("ahead of #3: +102 % [") and "(90 %, n = 3 vs 3)" in notes["b"]
    # 3 vs 2 repeats give at most an 80 % interval: too few to say, however far apart
    assert notes["d"] == "too few repeats to tell from #5 (n = 3 vs 2: at most 80 %, 90 % needed)"
    assert notes["e"] == notes["single"] == ""  # no comparison in the table: no claim either way


def test_the_phase_view_reshapes_the_table_without_a_figure_of_its_own() -> None:
    long = pd.DataFrame([
        {"config_id": "a", "scenario": "s", "phase": 1, "phase_name": "rate-1000", "target_rate": 1000.0,
         "metric": "confirm_rate", "repeats": 3, "valid": True, "n": 3, "value": 110.0, "value_low": 100.0,
         "value_high": 125.0, "value_level": 0.75},
        {"config_id": "a", "scenario": "s", "phase": 1, "phase_name": "rate-1000", "target_rate": 1000.0,
         "metric": "time_to_recover_s", "repeats": 3, "valid": True, "n": 0, "value": None, "value_low": None,
         "value_high": None, "value_level": 0.0}])
    view = phase_interval_view(long)
    row = view.iloc[0]
    assert len(view) == 1 and (row["n"], row["valid"], row["target_rate"]) == (3, True, 1000.0)
    assert (row["confirm_rate"], row["confirm_rate_low"], row["confirm_rate_high"]) == (110.0, 100.0, 125.0)
    assert math.isnan(row["time_to_recover_s"]) and math.isnan(row["e2e_p99_ms"])  # absent from the table: NaN
    assert fmt.interval(row, "confirm_rate", "{:,.0f}", True) == "110 [100,\u00a0125]"


def test_without_the_interval_tables_the_report_says_so_and_computes_no_median() -> None:
    """A run analysed before repeat_intervals: with three repeats, no phase's median is shown (the one place it may
    come from is the table) and the sections say why; with the table, the same rows show their medians."""
    campaign = load_campaign(SPEC)
    summary = phase_summary_rows(repeats=3)
    boards = pd.DataFrame(columns=BOARD_COLUMNS)
    old = ReportContext.build(campaign, ReportData(campaign.name, summary, boards, None, None, {}, {}, {}, []),
                              RUN_ID, "now")
    assert old.without_intervals and not old.with_ci and old.summary_ci.empty and old.repeats_seen == 3
    html = "".join(str(part) for part in intensity.render(old))
    assert esc(repeats.UNAVAILABLE) in html and "1,985" not in html  # n3's median at 2000 msg/s: not computed here
    assert "<svg" not in html  # no chart of figures the report does not have
    data = ReportData(campaign.name, summary, boards, None, None, {}, {}, {}, [],
                      repeat_intervals=numbers(repeat_interval_rows(summary, campaign)))
    new = ReportContext.build(campaign, data, RUN_ID, "now")
    html = "".join(str(part) for part in intensity.render(new))
    assert new.with_ci and esc(repeats.UNAVAILABLE) not in html and "1,985 [1,980,\u00a01,990]" in html
    # one repeat and no table: each phase's figures are its one row's, shown as they are, with nothing missing
    once = ReportContext.build(campaign, ReportData(campaign.name, phase_summary_rows(repeats=1), boards, None, None,
                                                    {}, {}, {}, []), RUN_ID, "now")
    assert not once.without_intervals and len(once.summary_ci) == len(phase_summary_rows(repeats=1))
    assert "1,985" in "".join(str(part) for part in intensity.render(once))


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
