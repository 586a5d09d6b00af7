"""The report's figures over repeats are the leaderboards step's interval tables (real Spark run).

Raw records of two repeats per config go through phase_summary and leaderboards on a local SparkSession; the
report then reads the tables from the same bucket. Independent checks: the board interval's median equals the
leaderboard's top_matched_throughput (Spark's own median of the capacity_repeats rows) and its ends are the two
repeats' tops; a phase's median over two repeats is the mean of its two phase_summary rows, worked out here; the
repeat_intervals table holds what sizing.judgement.repeats gives on the phase_summary rows read back; and a phase that
matched its target while the generator lagged (invalid, matched) is evidence neither way: it does not count toward
capacity (sizing.criteria.rules.conclusive), and marks its phase invalid.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from adapters.objectstore import S3Settings, StoreSpec
from app.report.context import ReportContext
from app.report.sections.leaderboards import board_intervals
from app.report.tables import BOARD_COST_AT_TOP, BOARD_TOP_MATCHED, load_report_data
from sizing.campaign import family_phases, load_campaign
from sizing.contract.layout import RunKey
from sizing.criteria import rules
from sizing.judgement import repeats
from spark_jobs.lib import leaderboards, phase_summary
from spark_jobs.lib.tableio import read_table
from spark_jobs.tools.synthetic import PhasePlan, RunModel, run_objects
from tests.spark_records import write_with_loadgen_recorder

pytestmark = pytest.mark.spark

SPEC = Path(__file__).resolve().parent / "fixtures" / "report-sample.yaml"  # local-quick with 500/1000/2000 steps
CAMPAIGN = load_campaign(SPEC)
SMALL, BIG = "n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"
LAGGING_PHASE = 3  # BIG, repeat 2: the generator reports itself behind in its top phase


def write_repeat(s3, out_dir: Path, config: str, repeat: int, capacity: float, lagging: bool) -> None:
    scenario = CAMPAIGN.scenario("increasing-intensity")
    key = RunKey(CAMPAIGN.name, config, scenario.name, "R1", repeat)
    model = RunModel(key, tuple(PhasePlan(rate, int(scenario.step_duration_s), int(scenario.warmup_s))
                                for rate in scenario.step_rates), workers=2, capacity=capacity, seed=repeat)
    objects = run_objects(model)
    if lagging:
        events_key = next(k for k in objects if "/events/" in k)
        events = objects[events_key]
        second = float(sum(int(scenario.step_duration_s) for _ in range(LAGGING_PHASE - 1)) + 8)
        behind = {**key.as_dict(), "ts": model.start_ts + second, "second": second, "phase": LAGGING_PHASE,
                  "kind": "worker_behind", "fault_id": None, "fault_kind": None, "node": None, "detail": None}
        objects[events_key] = pa.concat_tables([events, pa.Table.from_pylist([behind], schema=events.schema)])
    write_with_loadgen_recorder(objects, key, out_dir / f"{config}-{repeat}", s3)


def test_report_intervals_use_the_leaderboards_per_repeat_numbers(spark, s3: S3Settings, tmp_path: Path) -> None:
    for config, capacities in ((SMALL, (1500.0, 1800.0)), (BIG, (5000.0, 5000.0))):
        for repeat, capacity in enumerate(capacities, start=1):
            write_repeat(s3, tmp_path, config, repeat, capacity, lagging=config == BIG and repeat == 2)
    spec = StoreSpec.from_env()
    phase_summary.run(spark, spec, CAMPAIGN.name, [SMALL, BIG], ["R1"],
                      phase_summary.Rules(slo_p99_ms=CAMPAIGN.target.p99_latency_ms))
    tables = leaderboards.run(spark, spec, CAMPAIGN, "R1")

    summary = {(r["config_id"], r["repeat"], r["phase"]): r
               for r in read_table(spark, spec, "phase_summary", CAMPAIGN.name).collect()}
    lagging = summary[(BIG, 2, LAGGING_PHASE)]
    assert lagging["valid"] is False and lagging["invalid_reason"] == "loadgen_behind"
    assert lagging["matched_target"] is True  # the generator lagged, the broker carried the target anyway
    board = {r["config_id"]: r for r in tables["leaderboards"].collect()}
    per_repeat = {(r["config_id"], r["repeat"]): r for r in tables["capacity_repeats"].collect()}
    # The lagging phase is evidence neither way, though it matched (sizing.criteria.rules.conclusive): repeat 2's top is
    # its valid 1000 msg/s phase, repeat 1's its 2000 msg/s phase.
    assert per_repeat[(BIG, 1)]["top_matched_phase"] == "rate-2000"
    assert per_repeat[(BIG, 2)]["top_matched_phase"] == "rate-1000"
    below = summary[(BIG, 2, LAGGING_PHASE - 1)]
    carried = min(below["confirm_rate"], below["consume_rate"])
    assert per_repeat[(BIG, 2)]["top_matched_throughput"] == pytest.approx(rules.carried_rate(
        below["confirm_rate"], below["consume_rate"])) == pytest.approx(carried)

    # repeat_intervals: what the pure rule gives on the phase_summary rows the step read
    written = {(r["config_id"], r["scenario"], r["phase"], r["metric"]): r.asDict()
               for r in read_table(spark, spec, "repeat_intervals", CAMPAIGN.name).collect()}
    expected = repeats.phase_intervals([r.asDict() for r in summary.values()],
                                       phases=family_phases(CAMPAIGN.scenarios))
    assert len(written) == len(expected)
    for row in expected:
        got = written[(row["config_id"], row["scenario"], row["phase"], row["metric"])]
        assert {k: got[k] for k in row} == pytest.approx(row, nan_ok=True), row
    # ... and by hand: a median of two repeats is their mean, [min, max] covers it 50 % of the time
    rates = sorted(summary[(BIG, r, LAGGING_PHASE)]["confirm_rate"] for r in (1, 2))
    lagging_rate = written[(BIG, "increasing-intensity", LAGGING_PHASE, "confirm_rate")]
    assert (lagging_rate["value"], lagging_rate["value_low"], lagging_rate["value_high"]) == pytest.approx(
        (sum(rates) / 2, rates[0], rates[1]))
    assert lagging_rate["value_level"] == pytest.approx(0.5) and lagging_rate["valid"] is False  # repeat 2 lagged

    data = load_report_data(s3, CAMPAIGN.name, [SMALL, BIG], ["broker-kill"], CAMPAIGN.target.rate)
    ctx = ReportContext.build(CAMPAIGN, data, "R1", "now")
    assert ctx.with_ci and ctx.repeats_seen == 2 and ctx.interval_level == pytest.approx(0.5)
    phase = ctx.summary_ci[(ctx.summary_ci["config_id"] == BIG) & (ctx.summary_ci["phase"] == LAGGING_PHASE)
                           & (ctx.summary_ci["scenario"] == "increasing-intensity")].iloc[0]
    assert (phase["confirm_rate"], phase["confirm_rate_low"], phase["n"]) == pytest.approx(
        (lagging_rate["value"], rates[0], 2))  # the report shows the table's figures
    intervals = board_intervals(ctx, BOARD_TOP_MATCHED)
    for config in (SMALL, BIG):
        interval = intervals[config]
        assert interval["n"] == 2 and interval["value_level"] == pytest.approx(0.5)  # [min, max] of two: 50 %
        assert interval["value"] == pytest.approx(board[config]["top_matched_throughput"], rel=1e-12)
        tops = sorted(per_repeat[(config, r)]["top_matched_throughput"] for r in (1, 2))
        assert (interval["value_low"], interval["value_high"]) == pytest.approx((tops[0], tops[1]))
    # the cost board's interval is the tops priced: its ends swap (a higher top is a lower cost per 1000 msg/s)
    cost = board_intervals(ctx, BOARD_COST_AT_TOP)[SMALL]
    tops = sorted(per_repeat[(SMALL, r)]["top_matched_throughput"] for r in (1, 2))
    monthly = board[SMALL]["monthly_cost"]
    assert (cost["value_low"], cost["value_high"]) == pytest.approx((monthly / (tops[1] / 1000),
                                                                     monthly / (tops[0] / 1000)))
