"""The capacity search in the analysis (issue 16): phase_summary recomputes every probe's verdict from the raw
records, the leaderboards step replays the search into the `capacity` table, and the GX gate fails the batch
when a recorded online decision disagrees with the recomputed one.

The raw records are the real output of the online loop (loadgen.search through Runner.drive with the fake pool
of tests/test_loadgen_search.py: capacity 230 msg/s by construction). Independent checks: the capacity table's
answer equals the generator's own SearchResult (two implementations of the figures: the generator's live
per-second sums vs Spark's aggregation of the written records), and tampering with one recorded verdict is
caught by the suites."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sizing.contract import raw_layout
from spark_jobs.lib import leaderboards
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.validation import validate_frames
from tests.spark_records import frames
from tests.test_loadgen_search import CAPACITY, run_search

pytestmark = pytest.mark.spark

RECORD_TYPES = ("phases", "client_seconds", "accounting", "events", "broker_samples")
PROBE_CHECK = ("phase_summary: expect_column_pair_values_to_be_equal(column_A='probe_online_passed', "
               "column_B='probe_passed')")


@pytest.fixture(scope="module")
def search_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("search")
    runner, code, _pools, _purges, _lines = run_search(tmp)
    assert code == 0
    raw = {}
    for record_type in RECORD_TYPES:
        files = sorted((tmp / raw_layout.raw_run_prefix(runner.key)).rglob(f"{record_type}*/**/*.parquet")) or sorted(
            f for f in (tmp / raw_layout.raw_run_prefix(runner.key)).rglob("*.parquet") if f"/{record_type}" in str(f))
        raw[record_type] = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else None
    return runner, raw


TAMPERED = "fake-run-tampered"


def tampered_copy(raw):
    """The same records under another run id, with the last recorded online verdict flipped (the final
    confirmation: flipping it changes what the search would have concluded)."""
    copy = {k: None if v is None else v.assign(run_id=TAMPERED) for k, v in raw.items()}
    events = copy["events"]
    flipped = events.index[events["kind"] == "search_probe"][-1]
    detail = json.loads(events.at[flipped, "detail"])
    detail["passed"] = not detail["passed"]
    events.at[flipped, "detail"] = json.dumps(detail)
    return copy


@pytest.fixture(scope="module")
def summaries(spark, search_run):
    """phase_summary of the untampered run and of its tampered copy, in one Spark pass (the suite's time)."""
    runner, raw = search_run
    both = {k: pd.concat([v, w], ignore_index=True) if v is not None else None
            for (k, v), w in zip(raw.items(), tampered_copy(raw).values(), strict=True)}

    def frame(record_type):
        data = both[record_type]
        return frames(spark, record_type, [] if data is None else data.to_dict("records"))

    summary = ps.summarise(frame("phases"), ps.ClientRecords.of(frame("client_seconds")), frame("accounting"),
                           frame("events"), frame("broker_samples"), ps.Rules.of(runner.campaign))
    summary = summary.toPandas().sort_values("phase")
    return summary[summary.run_id != TAMPERED], summary[summary.run_id == TAMPERED]


def test_recomputed_verdicts_and_the_capacity_table_match_the_online_search(search_run, summaries):
    runner, _raw = search_run
    result = runner.search_result
    summary = summaries[0]
    assert len(summary) == result.probes_used
    # every recomputed verdict equals the online one, and the rule of the simulated system (pass iff <= capacity)
    assert summary["probe_passed"].tolist() == summary["probe_online_passed"].tolist()
    assert summary["probe_passed"].tolist() == [o.passed for o in result.outcomes]
    assert summary["probe_stage"].tolist() == [o.result.probe.stage for o in result.outcomes]
    # the two implementations of the figures agree: the generator's live sums and Spark's over the written rows
    for row, outcome in zip(summary.itertuples(), result.outcomes, strict=True):
        assert row.confirm_rate == pytest.approx(outcome.result.confirm_rate)
        assert row.consume_rate == pytest.approx(outcome.result.consume_rate)
        assert row.backlog_slope == pytest.approx(outcome.result.backlog_slope, abs=1e-9)
        assert row.e2e_p99_ms == pytest.approx(outcome.result.p99_ms)
    outcome = validate_frames({"phase_summary": summary})
    # (the fake run has no node_seconds, so the resource expectations fail here; the probe check must not)
    assert PROBE_CHECK not in outcome.failures, outcome.failures

    rows = leaderboards.capacity_rows(summary.to_dict("records"),
                                      {s.name: s.search for s in runner.campaign.scenarios if s.search})
    assert len(rows) == 1
    row = rows[0]
    assert (row["sustainable_rate"], row["last_pass"], row["first_fail"], row["status"]) == (
        result.sustainable_rate, result.last_pass, result.first_fail, result.status)
    assert row["last_pass"] <= CAPACITY < row["first_fail"]
    assert row["probes_used"] == result.probes_used <= row["worst_case_probes"]
    assert row["p99_at_sustainable_ms"] == pytest.approx(result.p99_at_sustainable_ms)
    assert row["verdicts_agree"] and row["probes_disagreeing"] == 0
    assert (row["repeats"], row["sustainable_ci_low"]) == (1, None)  # one repeat: no interval
    capacity = validate_frames({"capacity": pd.DataFrame(rows)})
    assert capacity.success, capacity.failures


def test_a_tampered_online_verdict_fails_the_gate(search_run, summaries):
    runner, _raw = search_run
    summary = summaries[1]
    assert (summary["probe_passed"] != summary["probe_online_passed"]).sum() == 1
    outcome = validate_frames({"phase_summary": summary})
    assert not outcome.success and PROBE_CHECK in outcome.failures, outcome.failures
    rows = leaderboards.capacity_rows(summary.to_dict("records"),
                                      {s.name: s.search for s in runner.campaign.scenarios if s.search})
    assert rows[0]["probes_disagreeing"] == 1 and not rows[0]["verdicts_agree"]
    capacity = validate_frames({"capacity": pd.DataFrame(rows)})
    assert "capacity: expect_column_values_to_be_in_set(column='verdicts_agree'" in "\n".join(capacity.failures)
