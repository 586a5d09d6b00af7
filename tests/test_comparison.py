"""`sizing compare`'s figures (sizing.judgement.comparison, pure): verdicts by direction, too few repeats never
concluding, figures that can be zero, the criterion comparison, the spec differences, and the statistics' own
false-alarm rate measured on 1,000 simulated pairs of equal runs (the independent check: the simulation knows there is
no change)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sizing.campaign import load_campaign
from sizing.criteria.stats import COMPARE_CONFIDENCE, INCONCLUSIVE, UNCHANGED
from sizing.judgement.comparison import (
    DIP,
    IMPROVED,
    NONE_RECOMMENDED,
    P99_AT_TARGET,
    RECOVERY,
    REGRESSED,
    TOP_THROUGHPUT,
    RunTables,
    compare_runs,
    compare_values,
    format_change,
    recommendation_words,
    table_rows,
)
from sizing.judgement.history import spec_differences
from sizing.resources.cost import cost_per_1000_msgs

SPEC = Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml"
CAMPAIGN = load_campaign(SPEC)
SMALL = "n1-c5.2xlarge-gp2"
PAIRS = 1_000


def test_a_lower_throughput_is_regressed_a_lower_latency_improved() -> None:
    slower = compare_values(TOP_THROUGHPUT, SMALL, "capacity", [800.0, 790.0, 805.0], [727.0, 720.0, 731.0])
    assert slower.verdict == REGRESSED and slower.relative and slower.n_base == slower.n_head == 3
    assert slower.change_low <= 727 / 800 - 1 <= slower.change_high and slower.level == pytest.approx(0.9)
    assert slower.change_high < -0.05 and "Mann-Whitney" in slower.test
    faster = compare_values(P99_AT_TARGET, SMALL, "s", [40.0, 42.0, 41.0], [30.0, 31.0, 29.5])
    assert faster.verdict == IMPROVED  # lower is better for a latency
    same = compare_values(TOP_THROUGHPUT, SMALL, "s", [800.0, 801.0, 799.0], [800.5, 799.5, 801.5])
    assert same.verdict == UNCHANGED
    assert format_change(slower).startswith("-9.") and "(90 %)" in format_change(slower)


def test_too_few_repeats_are_inconclusive_whatever_the_difference() -> None:
    two = compare_values(TOP_THROUGHPUT, SMALL, "s", [800.0, 801.0], [400.0, 401.0])  # halved, but 2 vs 2
    assert two.verdict == INCONCLUSIVE and two.level < COMPARE_CONFIDENCE and "inconclusive by construction" in two.note
    one = compare_values(TOP_THROUGHPUT, SMALL, "s", [800.0], [400.0])
    assert one.verdict == INCONCLUSIVE and one.change_low is None


def test_figures_that_can_be_zero_are_compared_as_a_shift_in_their_unit() -> None:
    # a recovery of 0 s has no relative change: +6 s against a practical 1 s is a regression
    worse = compare_values(RECOVERY, SMALL, "broker-kill", [0.0, 0.0, 1.0], [6.0, 7.0, 6.5])
    assert not worse.relative and worse.verdict == REGRESSED and worse.unit == "s"
    assert format_change(worse).startswith("+6") and " s [" in format_change(worse)
    assert compare_values(RECOVERY, SMALL, "k", [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]).verdict == UNCHANGED
    assert compare_values(DIP, SMALL, "k", [0.9, 0.0, 0.85], [0.9, 0.88, 0.91]).verdict == INCONCLUSIVE


def run(run_id: str, tops: list[float], p99s: list[float], held: bool = True, monthly: float = 344.8) -> RunTables:
    """A run's table rows as the analysis writes them (the columns the comparison reads)."""
    return RunTables(
        run_id=run_id, run={"run_id": run_id, "spec_hash": CAMPAIGN.spec_hash, "status": "complete"},
        capacity_repeats=[{"config_id": SMALL, "run_id": run_id, "repeat": i + 1, "top_matched_throughput": top}
                          for i, top in enumerate(tops)],
        leaderboards=[{"config_id": SMALL, "monthly_cost": monthly}],
        adverse=[{"config_id": SMALL, "scenario": "broker-kill", "held": held, "repeats": len(tops),
                  "reason": None if held else "phase 1 missed its target"}],
        phase_summary=[{"config_id": SMALL, "scenario": "increasing-intensity", "run_id": run_id, "repeat": i + 1,
                        "phase": 2, "target_rate": CAMPAIGN.target.rate, "e2e_p99_ms": p99, "foreground": True}
                       for i, p99 in enumerate(p99s)])


def test_runs_compared_metric_by_metric_from_their_table_rows() -> None:
    base = run("r1", [1500.0, 1490.0, 1510.0], [40.0, 42.0, 41.0])
    head = run("r2", [1300.0, 1310.0, 1290.0], [40.5, 41.5, 41.0], held=False)
    comparison = compare_runs(CAMPAIGN, base, head)
    by = {(c.scenario, c.metric): c for c in comparison.changes}
    assert by[("capacity", "top_throughput")].verdict == REGRESSED
    assert by[("increasing-intensity", "p99_at_target_ms")].verdict == UNCHANGED
    # the cost per 1000 msg/s of each repeat comes from sizing.resources.cost with the leaderboards' monthly cost
    cost = by[("capacity", "cost_per_1k_at_top")]
    assert cost.base == pytest.approx(cost_per_1000_msgs(344.8, 1500.0)) and cost.verdict == REGRESSED
    held = by[("broker-kill", "held")]
    assert (held.verdict, held.note) == (REGRESSED, "phase 1 missed its target")
    assert comparison.regressed and comparison.counts()[REGRESSED] == 3
    assert [row[-1] for row in table_rows(comparison)] == [c.verdict for c in comparison.changes]
    assert comparison.to_dict()["regressed"] is True
    # a metric one run has and the other lacks is listed, never compared
    only = compare_runs(CAMPAIGN, base, run("r3", [], [40.0, 41.0, 42.0]))
    assert only.only_in_base == [f"{SMALL} / capacity / top_throughput", f"{SMALL} / capacity / cost_per_1k_at_top"]



def test_a_scenario_not_judged_in_either_run_is_an_inconclusive_change_never_a_regression() -> None:
    base = run("r1", [1500.0], [40.0])
    head = run("r2", [1500.0], [40.0])
    why = "not judged: no conclusive repeat of judged phase(s) rate-1000; 1 phase flagged invalid, evidence ..."
    head.adverse[0].update(held=None, reason=why)  # the adverse table's null: too few conclusive phases
    held = {c.metric: c for c in compare_runs(CAMPAIGN, base, head).changes}["held"]
    assert (held.verdict, held.base, held.head, held.note) == (INCONCLUSIVE, 1.0, None, why)
    assert not compare_runs(CAMPAIGN, base, head).regressed

def test_each_runs_recommendation_is_read_from_its_table_and_a_change_is_named() -> None:
    """The recommendation is the analysis' (the `recommendation` table): compare reports it per run and flags a
    change; a run without the table says n/a rather than deciding the size again; a run that recommended nothing
    says none."""
    base, head = run("r1", [1500.0], [40.0]), run("r2", [1500.0], [40.0])
    rows = [{"config_id": SMALL, "recommended": True}, {"config_id": "n3-c5.2xlarge-gp2", "recommended": False}]
    base = RunTables(**{**base.__dict__, "recommendation": rows})
    head = RunTables(**{**head.__dict__, "recommendation": [{**r, "recommended": not r["recommended"]}
                                                             for r in rows]})
    comparison = compare_runs(CAMPAIGN, base, head)
    assert comparison.to_dict()["recommended"] == {"base": SMALL, "head": "n3-c5.2xlarge-gp2", "changed": True}
    assert recommendation_words(comparison) == f"base {SMALL} -> head n3-c5.2xlarge-gp2 (changed)"
    nothing = RunTables(**{**head.__dict__, "recommendation": [{**r, "recommended": False} for r in rows]})
    older = RunTables(**{**head.__dict__, "recommendation": ()})
    assert compare_runs(CAMPAIGN, base, nothing).head_recommended == NONE_RECOMMENDED
    unknown = compare_runs(CAMPAIGN, base, older)
    assert unknown.head_recommended is None and not unknown.recommendation_changed
    assert recommendation_words(unknown) == f"base {SMALL} -> head n/a (no recommendation table)"


def test_spec_differences_name_each_changed_leaf() -> None:
    a = {"workload": {"consumers": {"processing_ms": 5}}, "clusters": {"list": [{"nodes": 1}]}, "repeats": 3}
    b = {"workload": {"consumers": {"processing_ms": 5.5}}, "clusters": {"list": [{"nodes": 1}, {"nodes": 3}]},
         "repeats": 3, "seed": 7}
    assert spec_differences(a, b) == ['clusters.list[1]: (absent) -> {"nodes": 3}', "seed: (absent) -> 7",
                                      "workload.consumers.processing_ms: 5 -> 5.5"]
    assert spec_differences(a, a) == []


@pytest.mark.parametrize(("name", "draw"), [
    ("lognormal 3 %", lambda rng: rng.lognormal(math.log(800.0), 0.03, 3)),
    ("normal 5 %", lambda rng: rng.normal(800.0, 40.0, 3)),
    ("heavy tail", lambda rng: 800.0 * (1 + 0.02 * rng.standard_t(2, 3)).clip(0.5)),
])
def test_the_false_alarm_rate_on_equal_runs_is_at_most_the_stated_rate(name, draw) -> None:
    """1,000 pairs of runs of the same config (3 repeats each, the same distribution): how often `compare` calls
    a change. The interval's stated coverage is 90 %: at most 10 % of equal pairs may fall outside it, and a
    verdict also needs the 5 % practical effect; `regressed` (one direction) at most half of that."""
    rng = np.random.default_rng(24)
    verdicts = [compare_values(TOP_THROUGHPUT, SMALL, "s", list(draw(rng)), list(draw(rng))).verdict
                for _ in range(PAIRS)]
    stated = 1 - COMPARE_CONFIDENCE
    alarms = sum(v in (REGRESSED, IMPROVED) for v in verdicts) / PAIRS
    regressed = sum(v == REGRESSED for v in verdicts) / PAIRS
    print(f"{name}: {PAIRS} equal pairs, false alarms {alarms:.3f} (regressed {regressed:.3f}), stated at most "
          f"{stated:.2f}; unchanged {verdicts.count(UNCHANGED) / PAIRS:.3f}, "
          f"inconclusive {verdicts.count(INCONCLUSIVE) / PAIRS:.3f}")
    assert alarms <= stated and regressed <= stated / 2
