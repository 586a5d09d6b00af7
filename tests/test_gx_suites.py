"""The GX suites themselves (pandas frames, no Spark): version-controlled JSON in sync, pass and fail cases."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sizing.contract import records
from spark_jobs.lib import validation

SUITE_DIR = Path(__file__).resolve().parent.parent / "gx" / "suites"


def test_exported_suites_match_the_code():
    names = set(validation.suites())
    assert {p.stem for p in SUITE_DIR.glob("*.json")} == names
    for name in names:
        assert json.loads((SUITE_DIR / f"{name}.json").read_text()) == validation.suite_json(name), (
            f"gx/suites/{name}.json is stale: run python -m spark_jobs.lib.validation --export gx/suites")


def summary_frame(**overrides) -> pd.DataFrame:
    row = dict.fromkeys(records.table_columns("phase_summary"))
    row.update(campaign="c", config_id="k", scenario="s", run_id="R1", repeat=1, phase=1, target_rate=100.0,
               valid=True, matched_target=True, publish_rate=100.0, confirm_rate=100.0, consume_rate=100.0,
               lost=0, duplicates=0, reordered=0, backlog_max=0, cluster_nodes=3, resource_nodes=3,
               bottleneck="none", group="main", foreground=True)
    for i, q in enumerate(validation.LAT_ORDER):
        row[f"e2e_{q}_ms"] = 5.0 + i
        row[f"confirm_{q}_ms"] = 2.0 + i
    second = {**row, "phase": 2}
    frame = pd.DataFrame([row, second])
    for column, value in overrides.items():
        frame.loc[0, column] = value
    return frame


def test_phase_summary_suite_passes_a_good_table_and_names_what_fails(tmp_path):
    good = validation.validate_frames({"phase_summary": summary_frame()}, tmp_path / "docs")
    assert good.success, good.message()
    assert list((tmp_path / "docs").rglob("index.html"))
    bad = validation.validate_frames({"phase_summary": pd.concat([summary_frame(e2e_p99_ms=1.0, confirm_rate=-3.0),
                                                                  summary_frame().iloc[[1]]])})
    assert not bad.success
    text = bad.message()
    assert "column_A='e2e_p99_ms', column_B='e2e_p95_ms'" in text  # p99 below p95: percentiles not monotonic
    assert "column='confirm_rate'" in text  # negative rate
    assert "expect_compound_columns_to_be_unique" in text  # phase 2 twice: not one row per key
    # issue 14: one row per workload group per phase is unique; a row without its group is not valid
    groups = pd.concat([summary_frame(), summary_frame(group="lazy", foreground=False).assign(group="lazy")])
    assert validation.validate_frames({"phase_summary": groups}).success
    assert "column='group'" in validation.validate_frames({"phase_summary": summary_frame(group=None)}).message()


def test_a_valid_phase_needs_figures_from_every_node_an_invalid_one_does_not():
    # known answer: the sampler names 3 nodes; a valid phase where only 2 had figures fails
    short = validation.validate_frames({"phase_summary": summary_frame(resource_nodes=2)})
    assert not short.success and "column_A='resource_nodes', column_B='cluster_nodes'" in short.message()
    unsampled = validation.validate_frames({"phase_summary": summary_frame(cluster_nodes=None, resource_nodes=None)})
    assert "expect_column_values_to_not_be_null" in unsampled.message() and "column='cluster_nodes'" in \
        unsampled.message()
    invalid = validation.validate_frames({"phase_summary": summary_frame(valid=False, resource_nodes=2)})
    assert invalid.success, invalid.message()


@pytest.mark.parametrize("column,value", [("monthly_cost", 0.0), ("cost_per_1k_at_top", -1.0)])
def test_leaderboard_costs_must_be_positive(column, value):
    row = dict.fromkeys(records.table_columns("leaderboards"))
    row.update(campaign="c", run_id="r1", config_id="k", monthly_cost=1000.0, cost_per_1k_at_top=50.0, rank_at_top=1,
               top_matched_throughput=20000.0, capacity_rank=1)
    assert validation.validate_frames({"leaderboards": pd.DataFrame([row])}).success
    row[column] = value
    outcome = validation.validate_frames({"leaderboards": pd.DataFrame([row])})
    assert not outcome.success and f"column='{column}'" in outcome.message()


def test_capacity_repeats_suite_wants_one_positive_top_per_repeat():
    row = {"campaign": "c", "config_id": "k", "run_id": "R1", "repeat": 1, "top_matched_throughput": 1980.0,
           "top_matched_phase": "rate-2000", "max_matched_target_rate": 2000.0, "capacity_phases": 3,
           "top_throughput_any_latency": 2400.0}
    # repeat 3 had no phase within the SLO: no top within it, its top at any latency still counts
    none_in_slo = {**row, "repeat": 3, "top_matched_throughput": None, "top_matched_phase": None,
                   "max_matched_target_rate": None, "capacity_phases": 0}
    good = pd.DataFrame([row, {**row, "repeat": 2}, none_in_slo])
    assert validation.validate_frames({"capacity_repeats": good}).success, \
        validation.validate_frames({"capacity_repeats": good}).message()
    bad = pd.DataFrame([row, {**row, "top_matched_throughput": 0.0}])  # repeat 1 twice, and a zero top
    message = validation.validate_frames({"capacity_repeats": bad}).message()
    assert "expect_compound_columns_to_be_unique" in message and "column='top_matched_throughput'" in message
    above = pd.DataFrame([{**row, "top_throughput_any_latency": 1000.0}])  # any latency below within the SLO
    assert "column_A='top_throughput_any_latency'" in validation.validate_frames({"capacity_repeats": above}).message()


def test_interval_suites_pass_the_core_rows_and_fail_an_interval_that_misses_its_median():
    """The rows sizing.judgement.repeats writes pass; a median outside its own interval, more figures than repeats and
    an unknown board fail (each named by the expectation that catches it)."""
    from sizing.judgement import repeats

    phases = [{"config_id": "k", "scenario": "s", "phase": 1, "phase_name": "rate-100", "target_rate": 100.0,
               "repeat": r, "valid": True, "confirm_rate": rate} for r, rate in ((1, 99.0), (2, 100.0), (3, 97.0))]
    intervals = pd.DataFrame([{"campaign": "c", "run_id": "R1", **row} for row in repeats.phase_intervals(phases)])
    assert validation.validate_frames({"repeat_intervals": intervals}).success
    bad = intervals.copy()
    bad.loc[0, "value"] = 200.0  # above its interval's high end (99)
    bad.loc[1, "n"] = 4  # four figures of three repeats
    message = validation.validate_frames({"repeat_intervals": bad}).message()
    assert "column_A='value_high'" in message and "column_A='repeats'" in message

    entries = [{"board": repeats.BOARD_TOP_MATCHED, "rank": rank, "config_id": c} for rank, c in ((1, "k"), (2, "m"))]
    per_repeat = [{"config_id": c, "top_matched_throughput": v} for c, base in (("k", 200.0), ("m", 100.0))
                  for v in (base, base + 1, base + 2)]
    board = pd.DataFrame([{"campaign": "c", "run_id": "R1", **row}
                          for row in repeats.board_intervals(entries, per_repeat, {"k": 1.0, "m": 1.0})])
    assert validation.validate_frames({"board_intervals": board}).success
    bad = board.assign(board=["cost_at_target", repeats.BOARD_TOP_MATCHED])  # a board without a spread
    assert "column='board'" in validation.validate_frames({"board_intervals": bad}).message()


def test_the_adverse_suite_takes_a_scenario_not_judged_only_with_its_reason():
    """A null `held` is no judgement (too few conclusive phases, sizing.judgement.adverse.judge): the gate passes the
    judge's own row, and fails it once its reason is gone."""
    from sizing.campaign import parse_campaign
    from sizing.judgement import adverse

    spec = parse_campaign({
        "name": "gx-adverse", "deployment": "local", "catalog": "aws-us-east-1-2020",
        "target": {"rate": 1000, "p99_latency_ms": 1000},
        "workload": {"queues": {"count": 1, "type": "quorum"}, "message": {"size_bytes": 256},
                     "publishers": {"count": 1, "confirms_in_flight": 10}, "consumers": {"count": 1, "prefetch": 10}},
        "clusters": {"list": [{"nodes": 3, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
        "scenarios": [{"name": "broker-kill", "warmup_s": 3, "steps": {"rates": [1000], "duration_s": 30},
                       "faults": [{"kind": "kill_node", "at": 0.3, "target": {"node": 1}, "heal_after_s": 8}]}]})
    phase = {"run_id": "R1", "repeat": 1, "phase": 1, "phase_name": "rate-1000", "target_rate": 1000.0,
             "valid": False, "invalid_reason": "loadgen_behind", "matched_target": True, "lost": 0, "duplicates": 0}
    row = {"campaign": "c", "run_id": "R1", "config_id": "k",
           **adverse.judge(spec.scenarios[0], [phase], spec.target.rate)}
    assert row["held"] is None
    frame = pd.DataFrame([row])[records.table_columns("adverse")]
    assert validation.validate_frames({"adverse": frame}).success, validation.validate_frames(
        {"adverse": frame}).message()
    outcome = validation.validate_frames({"adverse": frame.assign(reason=[None])})
    assert not outcome.success and "column='reason'" in outcome.message()


def test_upgrade_suite_passes_the_tables_rows_and_wants_a_baseline_behind_every_change():
    # the rows sizing.judgement.upgrade writes for campaigns/upgrade-local.yaml from synthetic runs
    # (tests/test_upgrade.py)
    from sizing.judgement import upgrade
    from tests.test_upgrade import CAMPAIGN, synthetic_run

    frame = pd.DataFrame([{**r, "run_id": "R1"} for r in upgrade.upgrade_rows(CAMPAIGN, *synthetic_run())])
    assert validation.validate_frames({"upgrade": frame}).success
    changed = frame.index[frame["change"].notna()][0]
    text = validation.validate_frames({"upgrade": frame.assign(baseline_value=lambda f: f["baseline_value"].where(
        f.index != changed))}).message()
    assert "column='baseline_value'" in text  # a change against no baseline figure
    expected = frame.index[frame["expected"].notna()][0]
    text = validation.validate_frames({"upgrade": frame.assign(expected_source=lambda f: f["expected_source"].where(
        f.index != expected))}).message()
    assert "column='expected_source'" in text  # an expectation must name its published source


def test_recommendation_suite_passes_the_tables_rows_and_refuses_two_answers_or_a_failing_one():
    # the rows the leaderboards step's pure code writes for the report sample (tests/report_sample.py)
    from sizing.campaign import load_campaign
    from tests.report_sample import SPEC, adverse_rows, phase_summary_rows, recommendation_rows, sample_board

    campaign = load_campaign(SPEC)
    summary = phase_summary_rows(1)
    board = sample_board(campaign, summary)
    frame = recommendation_rows(board, adverse_rows(summary, campaign), summary, campaign)
    assert frame["recommended"].sum() == 1 and len(frame) >= 2
    assert validation.validate_frames({"recommendation": frame}).success
    text = validation.validate_frames({"recommendation": frame.assign(recommended=True, passes_all=True)}).message()
    assert "column_list=['run_id', 'rabbitmq_version']" in text  # two answers for one run and version
    # one answer per RabbitMQ version is what a campaign over several versions writes
    versions = [f"4.{i}" for i in range(len(frame))]
    per_version = frame.assign(recommended=True, passes_all=True, rabbitmq_version=versions)
    assert validation.validate_frames({"recommendation": per_version}).success
    chosen = frame.index[frame["recommended"]][0]
    text = validation.validate_frames({"recommendation": frame.assign(
        passes_all=lambda f: f["passes_all"].where(f.index != chosen, False))}).message()
    assert "column='passes_all'" in text  # a recommendation that does not pass everything
