"""The seed conclusions judged from our own measured runs (issue 45), pure: one declaration per conclusion, judged
by the platform's own code on a run fixture's rows (app.runfixture: a run exported from the store into
tests/fixtures/runs/), never by reading a stored verdict back.

Each judge re-derives what the analysis decided from the fixture's phase_summary rows: the target rule
(sizing.criteria.rules.matched_target, recomputed from the rates, the p99 and the SLO), each adverse scenario's verdict
(sizing.judgement.adverse.judge) and the recommendation (sizing.judgement.recommendation.from_tables over the re-judged
adverse rows). It also reads the stored verdict columns, to say whether the two agree: a fixture whose stored verdict
differs from the one re-derived says that the code changed since the run was analysed.

    for seed in SEEDS:
        outcome = seed.judge([runs[key] for key in seed.runs])   # Outcome(verdict, stored, evidence)

Verdicts: REPRODUCED, CONTRADICTED, INCONCLUSIVE (the runs cannot decide it at the platform's own rule: e.g. a
comparison with no interval, or one cluster size where the seed compares several), NOT_EXPRESSIBLE.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sizing.campaign import Campaign, as_family_row, families, family_phases, parse_campaign
from sizing.contract.layout import RunRef
from sizing.criteria import rules, stats
from sizing.judgement import adverse, fidelity, findings, recommendation
from sizing.judgement.repeats import finite

REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_EXPRESSIBLE = ("reproduced", "contradicted", "inconclusive",
                                                           "not expressible")
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_EXPRESSIBLE)


@dataclass(frozen=True)
class RunRows:
    """One run's fixture: its rows per table (plain dicts, None for a missing figure) and its meta.json."""

    run: RunRef
    tables: Mapping[str, Sequence[Mapping[str, Any]]]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return str(self.run)

    def rows(self, table: str) -> list[Mapping[str, Any]]:
        return list(self.tables.get(table, ()))

    def spec(self) -> Campaign:
        """The campaign the run ran, as its `runs` row stored it (the resolved spec the analysis read)."""
        (run,) = self.rows("runs")
        return parse_campaign(json.loads(run["spec"]), source=f"run {self.key}'s spec")


@dataclass(frozen=True)
class Outcome:
    verdict: str  # re-derived by the platform's code from the fixture's rows
    stored: str | None  # the same verdict read from the stored verdict columns (None: the table has none)
    evidence: str  # the figures, in words


# ------------------------------------------------------------------------------- the platform's code on the rows
def rejudged_phases(run: RunRows) -> list[dict[str, Any]]:
    """phase_summary's rows with `matched_target` recomputed by sizing.criteria.rules.matched_target (as the analysis
    does, rules_columns.matched_target: false when a rate or the p99 is missing; a max-mode phase has no target)."""
    out = []
    for row in run.rows("phase_summary"):
        figures = [row.get(c) for c in ("confirm_rate", "consume_rate", "target_rate", "e2e_p99_ms", "slo_p99_ms")]
        matched = None not in figures and bool(rules.matched_target(*figures)) and bool(
            rules.judged_against_target(row.get("rate_mode")))
        out.append({**row, "matched_target": matched})
    return out


def rejudged_adverse(run: RunRows) -> list[dict[str, Any]]:
    """The adverse table's rows re-derived (sizing.judgement.adverse.judge per config and adverse scenario, each
    isolated run as a phase of its family: what spark_jobs.lib.leaderboards.adverse_verdicts does on the driver)."""
    campaign = run.spec()
    scenarios = {s.name: s for s in families(campaign.scenarios) if rules.is_adverse(s)}
    phases = family_phases(campaign.scenarios)
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rejudged_phases(run):
        as_family = as_family_row(row, phases)
        if as_family["scenario"] in scenarios:
            grouped.setdefault((str(row["config_id"]), as_family["scenario"]), []).append(as_family)
    return [{"config_id": config_id, **adverse.judge(scenarios[name], rows, campaign.target.rate)}
            for (config_id, name), rows in sorted(grouped.items())]


def rejudged_standings(run: RunRows) -> list[recommendation.ConfigVerdict]:
    """The recommendation's standings re-derived from the leaderboard rows, the re-judged adverse rows and the
    phases' validity."""
    return recommendation.from_tables(run.spec(), run.rows("leaderboards"), rejudged_adverse(run),
                                      run.rows("phase_summary"))


def nodes_of(run: RunRows) -> dict[str, int]:
    return {c.config_id: c.nodes for c in run.spec().clusters}


def _stored(run: RunRows, table: str, config_id: str, scenario: str | None = None) -> Mapping[str, Any] | None:
    return next((r for r in run.rows(table) if r["config_id"] == config_id
                 and (scenario is None or r.get("scenario") == scenario)), None)


# ------------------------------------------------------------------------------------------ the judges
def _holds(verdicts: Sequence[bool | None], want: bool) -> str:
    """Every config's verdict is `want`: reproduced; one is the other: contradicted; else inconclusive."""
    if any(v is (not want) for v in verdicts):
        return CONTRADICTED
    return REPRODUCED if verdicts and all(v is want for v in verdicts) else INCONCLUSIVE


def _kill_verdicts(runs: Sequence[RunRows], scenario: str, min_nodes: int, max_nodes: int | None = None
                   ) -> tuple[list[bool | None], list[bool | None], list[str]]:
    """(re-judged `held`, stored `held`, evidence) of every config of the runs with min_nodes..max_nodes nodes."""
    mine, theirs, words = [], [], []
    for run in runs:
        nodes = nodes_of(run)
        for row in rejudged_adverse(run):
            n = nodes.get(row["config_id"], 0)
            if row["scenario"] != scenario or n < min_nodes or (max_nodes is not None and n > max_nodes):
                continue
            stored = _stored(run, "adverse", row["config_id"], scenario)
            mine.append(row["held"])
            theirs.append(adverse.held_value(stored.get("held")) if stored else None)
            ratio, p99 = row["worst_confirm_ratio"], row["max_e2e_p99_ms"]
            words.append(f"{run.key} {row['config_id']}: held {row['held']}, confirmed "
                         f"{'?' if ratio is None else format(ratio, '.2f')} of the target, p99 "
                         f"{'?' if p99 is None else format(p99, ',.0f')} ms")
    return mine, theirs, words


def no_cluster_holds_a_kill(scenario: str, min_nodes: int = 1, max_nodes: int | None = None
                            ) -> Callable[[Sequence[RunRows]], Outcome]:
    """Every config (of min_nodes..max_nodes nodes) fails the fault scenario by the adverse criterion (a judged
    phase missed its target rate or the SLO, or lost a message: sizing.criteria.rules.held_target)."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, theirs, words = _kill_verdicts(runs, scenario, min_nodes, max_nodes)
        return Outcome(_holds(mine, False), _holds(theirs, False), "; ".join(words) or "no such config")
    return judge


def smallest_cluster_dips_most(scenario: str, smallest: int) -> Callable[[Sequence[RunRows]], Outcome]:
    """The `smallest`-node clusters confirm the lowest share of the target through the fault, below every bigger
    cluster's. With one clustered size there is nothing to compare (inconclusive); the figures are each one run's
    worst phase, with no interval, so even two sizes decide it only when every repeat agrees: inconclusive with a
    single repeat."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        ratios: dict[int, list[float]] = {}
        repeats = []
        for run in runs:
            nodes = nodes_of(run)
            for row in rejudged_adverse(run):
                if row["scenario"] == scenario and nodes.get(row["config_id"], 0) >= smallest \
                        and row["worst_confirm_ratio"] is not None:
                    ratios.setdefault(nodes[row["config_id"]], []).append(row["worst_confirm_ratio"])
                    repeats.append(row["repeats"])
        words = ", ".join(f"{n} nodes: {min(r):.2f}" for n, r in sorted(ratios.items())) or "no clustered config"
        if len(ratios) < 2 or smallest not in ratios or min(repeats, default=0) < 2:
            return Outcome(INCONCLUSIVE, None, f"worst confirmed share of the target: {words}; "
                           f"{len(ratios)} clustered size(s), at most {max(repeats, default=0)} repeat(s)")
        bigger = min(min(r) for n, r in ratios.items() if n != smallest)
        return Outcome(REPRODUCED if max(ratios[smallest]) < bigger else CONTRADICTED, None, words)
    return judge


def no_survivor(scenario: str) -> Callable[[Sequence[RunRows]], Outcome]:
    """The recommendation (sizing.judgement.recommendation, on the re-judged adverse rows) recommends no config, and
    every config fails the fault scenario: no cluster survives it."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, theirs, words = [], [], []
        for run in runs:
            standings = rejudged_standings(run)
            chosen = recommendation.recommended(standings)
            stored = recommendation.recommended_ids(run.rows("recommendation"))
            mine.append(chosen is None and all(scenario in v.adverse_failed for v in standings))
            theirs.append(not stored and all(scenario in (r.get("adverse_failed") or "").split(",")
                                             for r in run.rows("recommendation")))
            words.append(f"{run.key}: recommended {chosen.config_id if chosen else 'none'}; "
                         + ", ".join(f"{v.config_id} fails {','.join(v.adverse_failed) or 'nothing'}"
                                     for v in standings))
        return Outcome(_holds(mine, True), _holds(theirs, True), "; ".join(words))
    return judge


def backlog_held(scenario: str, want: bool) -> Callable[[Sequence[RunRows]], Outcome]:
    """Every config holds (want True) or fails (False) the backlog scenario by its criterion (sizing.criteria.rules.
    backlog_held: publishers reduced within the tolerance, nothing lost, the backlog drained)."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, theirs, words = [], [], []
        for run in runs:
            for row in rejudged_adverse(run):
                if row["scenario"] != scenario:
                    continue
                stored = _stored(run, "adverse", row["config_id"], scenario)
                mine.append(row["held"])
                theirs.append(adverse.held_value(stored.get("held")) if stored else None)
                words.append(f"{run.key} {row['config_id']}: held {row['held']}, publishers reduced "
                             f"{row['reduced_publish_s']:.0f} s (tolerance {row['publish_tolerance_s']:.0f}), "
                             f"blocked {row['publishers_blocked_s']:.0f} s, peak backlog "
                             f"{row['peak_backlog_msgs']:,}, drained {row['drained']}")
        return Outcome(_holds(mine, want), _holds(theirs, want), "; ".join(words) or "no such scenario")
    return judge


def _scenario_phases(run: RunRows, scenarios: Sequence[str]) -> list[Mapping[str, Any]]:
    return [row for row in run.rows("phase_summary") if row["scenario"] in scenarios]


def publishers_blocked(scenario: str, want: bool) -> Callable[[Sequence[RunRows]], Outcome]:
    """The broker blocked the scenario's publishers (sizing.criteria.rules.broker_blocked_publishers: its memory or disk
    alarm, for longer than the scenario's publish tolerance) in some phase (want True) or in none (want False), on
    phase_summary's `publishers_blocked_s` (seconds the broker's own connection.blocked held them)."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, words = [], []
        for run in runs:
            tolerance = run.spec().scenario(scenario).publish_tolerance_s
            rows = _scenario_phases(run, [scenario])
            if not rows:
                continue
            blocked = [float(row.get("publishers_blocked_s") or 0.0) for row in rows]
            memory = finite(row.get("broker_mem_max_fraction") for row in rows)
            mine.append(any(rules.broker_blocked_publishers(b, tolerance) for b in blocked))
            words.append(f"{run.key} {scenario}: publishers blocked {sum(blocked):.0f} s (tolerance {tolerance:g} s), "
                         f"memory at most {max(memory, default=float('nan')):.2f} of the watermark")
        return Outcome(_holds(mine, want), None, "; ".join(words) or "no such scenario")
    return judge


def bound_by(scenarios: Sequence[str], label: str) -> Callable[[Sequence[RunRows]], Outcome]:
    """Every phase of the scenarios is bound by `label` (sizing.criteria.rules.phase_bottleneck re-derives each
    phase_summary row's label from its figures; the stored `bottleneck` column is the analysis' own). A phase the
    generator could not drive decides nothing; another resource named is a contradiction."""
    def verdict(labels: Sequence[str | None]) -> str:
        decided = [x for x in labels if x not in (None, rules.bottleneck_label("generator"))]
        if any(x != label for x in decided):
            return CONTRADICTED
        return REPRODUCED if decided and len(decided) == len(labels) else INCONCLUSIVE

    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, theirs, words = [], [], []
        for run in runs:
            for row in _scenario_phases(run, scenarios):
                mine.append(rules.phase_bottleneck(row))
                theirs.append(row.get("bottleneck"))
                words.append(f"{run.key} {row['scenario']} {row['phase_name']}: {mine[-1]} (busiest node's CPU "
                             f"{float(row.get('cpu_busiest_mean') or 0):.2f} of its cores, carried "
                             f"{float(row.get('confirm_rate') or 0):,.0f} published / "
                             f"{float(row.get('consume_rate') or 0):,.0f} consumed msg/s)")
        return Outcome(verdict(mine), verdict(theirs), "; ".join(words) or "no such scenario")
    return judge


TOP_THROUGHPUT = fidelity.TOP_THROUGHPUT  # capacity_repeats has it too: a config's top carried rate, per repeat


def repeat_figures(run: RunRows, config_id: str, metric: str = TOP_THROUGHPUT) -> list[float]:
    """One config's `metric` per repeat (capacity_repeats: what the leaderboard's median is over)."""
    return finite(row.get(metric) for row in run.rows("capacity_repeats") if row["config_id"] == config_id)


def compared(pairs: Sequence[tuple[str, str]], want: str, threshold: float = stats.PRACTICAL_EFFECT,
             metric: str = TOP_THROUGHPUT) -> Callable[[Sequence[RunRows]], Outcome]:
    """Each (base, other) pair of configs: `other`'s per-repeat figures against `base`'s by the platform's comparison
    (sizing.criteria.stats.compare: the Hodges-Lehmann ratio with its exact Mann-Whitney interval at
    COMPARE_CONFIDENCE, `threshold` the practical difference) give `want` (stats.HIGHER, LOWER or UNCHANGED).
    Every pair `want`: reproduced; one pair another decided verdict: contradicted; else inconclusive (with one repeat
    a config has no interval, so one repeat is always inconclusive)."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        verdicts, words = [], []
        for run in runs:
            for base, other in pairs:
                base_values, other_values = repeat_figures(run, base, metric), repeat_figures(run, other, metric)
                if not base_values or not other_values:
                    verdicts.append(stats.INCONCLUSIVE)
                    words.append(f"{run.key}: no per-repeat {metric} of {base if not base_values else other}")
                    continue
                effect = stats.compare(base_values, other_values, threshold=threshold)
                verdicts.append(effect.verdict)
                words.append(f"{run.key} {other} against {base}: {effect.describe()}")
        return Outcome(_effects_give(verdicts, want), None, "; ".join(words))
    return judge


def _effects_give(verdicts: Sequence[str | None], want: str) -> str:
    """Every comparison `want`: reproduced; one another decided verdict: contradicted; else inconclusive."""
    if any(v not in (want, stats.INCONCLUSIVE) for v in verdicts):
        return CONTRADICTED
    return REPRODUCED if verdicts and all(v == want for v in verdicts) else INCONCLUSIVE


def _effect_row(rows: Sequence[Mapping[str, Any]], baseline: str, other: str, metric: str
                ) -> Mapping[str, Any] | None:
    return next((row for row in rows if row["kind"] == findings.EFFECT and row["metric"] == metric
                 and row["family"] == other and row["baseline_family"] == baseline), None)


def found(pairs: Sequence[tuple[str, str]], metric: str, want: str) -> Callable[[Sequence[RunRows]], Outcome]:
    """Each (baseline, other) pair of scenario families of a `compare` campaign: the effect on `metric` of `other`
    against `baseline` in the campaign's findings, re-derived by sizing.judgement.findings.findings from the fixture's
    phase_summary rows (with one run per arm, its interval is the run's own seconds': batch means for a rate,
    sectioning for a percentile), gives `want` (stats.HIGHER, LOWER or UNCHANGED); the stored `findings` table's row
    is the analysis' own. Verdicts as `compared`'s."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        mine, theirs, words = [], [], []
        for run in runs:
            rederived = _rederived_findings(run)
            for baseline, other in pairs:
                row, stored = (_effect_row(rows, baseline, other, metric) for rows in (rederived, run.rows("findings")))
                mine.append(row["verdict"] if row else None)
                theirs.append(stored["verdict"] if stored else None)
                if row is None:
                    words.append(f"{run.key}: no {metric} effect of {other} against {baseline}")
                    continue
                words.append(f"{run.key} {other} against {baseline}, {findings.METRIC[metric].label} "
                             f"{row['baseline_value']:,.0f} -> {row['value']:,.0f}: {_effect_text(row)}, "
                             f"{row['interval_basis']}: {row['verdict']}")
        return Outcome(_effects_give(mine, want), _effects_give(theirs, want), "; ".join(words))
    return judge


def _rederived_findings(run: RunRows) -> list[dict[str, Any]]:
    """The run's findings by the platform's own code on its phase_summary rows (the practical difference read now, so
    that a test can change it)."""
    return findings.findings(run.spec(), run.rows("phase_summary"), threshold=stats.PRACTICAL_EFFECT)


def _effect_text(row: Mapping[str, Any]) -> str:
    """A findings row's effect with its interval, as stats.effect_text words it (a missing bound: no interval)."""
    def bound(value: float | None) -> float:
        return float("nan") if value is None else float(value)

    interval = stats.Interval(row["effect"], bound(row["effect_low"]), bound(row["effect_high"]), row["n"],
                              row["effect_level"])
    return stats.effect_text(interval, row["n_baseline"], row["n"])


def _combined(verdicts: Sequence[str]) -> str:
    """One verdict over several runs' or pairs': any contradicted, contradicted; all reproduced, reproduced."""
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    return REPRODUCED if verdicts and all(v == REPRODUCED for v in verdicts) else INCONCLUSIVE


def _steps(run: RunRows, family: str, metric: str) -> list[Mapping[str, Any]]:
    """The family's adjacent-step rows on `metric` (findings kind `step`), re-derived from phase_summary."""
    return [row for row in _rederived_findings(run) if row["kind"] == findings.STEP and row["family"] == family
            and row["metric"] == metric]


def _step(rows: Sequence[Mapping[str, Any]], before: str, after: str) -> Mapping[str, Any] | None:
    """The step row from `before` to `after`, if the curve has that adjacent pair."""
    return next((r for r in rows if (r["baseline_phase_name"], r["phase_name"]) == (before, after)), None)


def _step_words(run: RunRows, row: Mapping[str, Any]) -> str:
    return f"{run.key} {row['baseline_phase_name']} -> {row['phase_name']}: {_effect_text(row)}: {row['verdict']}"


def largest_step(family: str, before: str, after: str, metric: str = "publish_rate"
                 ) -> Callable[[Sequence[RunRows]], Outcome]:
    """The curve's largest jump (findings' `largest_step`: the adjacent pair with the largest |log ratio| on `metric`)
    is from step `before` to `after`, and that jump is decided (its interval excludes no change): reproduced; the
    largest is another pair whose interval lies wholly above this pair's: contradicted; else inconclusive."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        verdicts, words = [], []
        for run in runs:
            rows = _steps(run, family, metric)
            named = _step(rows, before, after)
            top = next((r for r in rows if r["largest_step"]), None)
            if named is None or top is None:
                verdicts.append(INCONCLUSIVE)
                words.append(f"{run.key}: no step {before} -> {after} of {family}")
                continue
            if top is named:
                verdicts.append(REPRODUCED if named["verdict"] in (stats.HIGHER, stats.LOWER) else INCONCLUSIVE)
            else:
                apart = named["effect_high"] is not None and top["effect_low"] is not None and (
                    abs(named["effect_high"]) < abs(top["effect_low"]))
                verdicts.append(CONTRADICTED if apart else INCONCLUSIVE)
            words.append(f"largest {_step_words(run, top)}; named {_step_words(run, named)}")
        return Outcome(_combined(verdicts), None, "; ".join(words))
    return judge


def no_benefit(family: str, before: str, after: str, metric: str = "publish_rate"
               ) -> Callable[[Sequence[RunRows]], Outcome]:
    """Step `after` is no better than step `before` (findings' `no_better` on that adjacent pair: its interval
    excludes a gain beyond the practical difference): reproduced; better: contradicted; the run cannot tell:
    inconclusive."""
    def judge(runs: Sequence[RunRows]) -> Outcome:
        verdicts, words = [], []
        for run in runs:
            row = _step(_steps(run, family, metric), before, after)
            if row is None:
                verdicts.append(INCONCLUSIVE)
                words.append(f"{run.key}: no step {before} -> {after} of {family}")
                continue
            verdicts.append({True: REPRODUCED, False: CONTRADICTED}.get(row["no_better"], INCONCLUSIVE))
            words.append(f"{_step_words(run, row)}, no better: {row['no_better']}")
        return Outcome(_combined(verdicts), None, "; ".join(words))
    return judge


# ------------------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class SeedVerdict:
    seed: str  # "002"
    conclusion: str  # short, for the README table
    words: str  # the study's own words (quoted from /work/shared/seeds/<seed>_*.txt)
    criterion: str  # which table, metric and rule
    runs: tuple[RunRef, ...]  # the fixtures
    judge: Callable[[Sequence[RunRows]], Outcome]
    expected: str  # the verdict the fixtures give

    def run_keys(self) -> str:
        return ", ".join(str(run) for run in self.runs)


DEMO = (RunRef("local-quick", "demo"),)
# Seed 000's three smaller shapes on io1 and gp2, three repeats (campaigns/fidelity-000.yaml): scaled out
# (5 x c5.2xlarge, 8 vCPUs), scaled up (3 x c5.9xlarge, 36) and 3 x c5.4xlarge (16).
SHAPES_LOCAL = (RunRef("fidelity-000", "rep3"),)
SCALED_OUT, SCALED_UP, THREE_BY_16 = "n5-c5.2xlarge", "n3-c5.9xlarge", "n3-c5.4xlarge"
# Seed 001's throughput test #1 on the one default model, three repeats (campaigns/fidelity-001.yaml): its six
# 3 x c4.4xlarge disk layouts, named as rabbitmq1, 4, 7 (io1) and 10, 13, 16 (st1).
DISKS_LOCAL = (RunRef("fidelity-001", "fid2"),)
IO1, ST1 = fidelity.SEED_001_BASELINE, "n3-c4.4xlarge-st1-1000gb"  # one drive for everything
IO1_WAL, IO1_3, ST1_WAL, ST1_3 = f"{IO1}-wal", f"{IO1}-wal-segments", f"{ST1}-wal", f"{ST1}-wal-segments"
# "close to SSD performance": the seed's own gap, rabbitmq13's ~17k against rabbitmq1's ~19k msg/s (its published
# figures, sizing.judgement.fidelity.PUBLISHED)
_SEED_001_PUBLISHED = {figure.config_id: figure.value for figure in fidelity.PUBLISHED if figure.seed == "001"}
SEED_001_CLOSE = 1 - _SEED_001_PUBLISHED[ST1_WAL] / _SEED_001_PUBLISHED[IO1]
TOP_RATES_COMPARED = ("`top_throughput_any_latency` of capacity_repeats (each repeat's highest carried rate at any "
                      "latency, the seed's top throughput), compared by sizing.criteria.stats.compare (Hodges-Lehmann "
                      f"ratio, exact Mann-Whitney interval at {stats.COMPARE_CONFIDENCE:.0%})")
ADVERSE_LOCAL = (RunRef("adverse-local", "adverse1"),)  # seed 002's adverse suite on one node of the scale model
SEED_002_KILL = ("Some clusters did better than others but no cluster gets to the end of the test without seeing a "
                 "drop in throughput when a broker is killed.")

# Seed 004 on one n1-highcpu-8 node of the scale model: its consumers stalled under a steady rate, with and without
# x-max-length (campaigns/ndq-consumer-stall-scale.yaml), and its max rate (campaigns/ndq-10q-multiack-scale.yaml).
STALL_LOCAL = (RunRef("ndq-consumer-stall-scale", "stall2"),)
MAX_RATE_LOCAL = (RunRef("ndq-10q-multiack-scale", "max2"),)

# Seed 003's benchmark #4 and its queue types on its 3 x c5.4xlarge io1 cluster scaled (campaigns/flow-control-queues-
# scale.yaml): one queue, one publisher and one consumer at their maximum rate, one run of each arm (the seed's own
# count), so every effect's interval is the run's own seconds'.
QUEUES_LOCAL = (RunRef("flow-control-queues-scale", "queues4"),)
QQ, QQ_NO_CONFIRMS = "qq-confirms-acks", "qq-no-confirms-no-acks"
MIRRORED, MIRRORED_NO_CONFIRMS = "mirrored-confirms-acks", "mirrored-no-confirms-no-acks"
SEED_003_NO_CONFIRMS = ("If we compare those results to using confirms and acks, we see no benefit in throughput. In "
                        "fact all we see is an increase in end-to-end latency.")
# Seed 003's increasing in-flight limit on one quorum queue at a known 20 ms round trip
# (campaigns/flow-control-rtt-scale.yaml: the seed's steps 1 to 10000 on one node of the model, one run).
RTT_LOCAL = (RunRef("flow-control-rtt-scale", "rtt4"),)
INFLIGHT = "qq-inflight-rtt20"
SEED_003_CURVE = ("Both see the biggest jump between 20 and 200. A limit of 10000 has no benefit over 1000, all that "
                  "happens is we increase end-to-end latency.")
STEP_SHAPE = ("the campaign's findings of kind `step` (sizing.judgement.findings, each step against the one before, "
              "re-derived from phase_summary; the interval the run's own seconds', practical difference "
              f"{stats.PRACTICAL_EFFECT:.0%}) on the publish rate: ")
FINDINGS_EFFECT = ("the campaign's findings (sizing.judgement.findings.findings re-derived from phase_summary): the "
                   "effect of {other} against {base} on {metric} with its interval within one run at "
                   f"{stats.COMPARE_CONFIDENCE:.0%} (batch means for a rate, sectioning for a percentile), the "
                   f"practical difference {stats.PRACTICAL_EFFECT:.0%}")

SEEDS: tuple[SeedVerdict, ...] = (
    SeedVerdict(
        "002", "no cluster gets through a broker kill without a drop in throughput", SEED_002_KILL,
        "adverse `broker-kill` (fault criterion): `held` by sizing.judgement.adverse.judge on phase_summary, the "
        "target rule "
        "(sizing.criteria.rules.matched_target: confirm and consume >= MATCH_FRACTION of the target, p99 within the "
        "SLO) recomputed; every cluster of two or more nodes fails it (the seed's clusters have 3 to 9; a single node "
        "killed has no broker left to carry on)", DEMO, no_cluster_holds_a_kill("broker-kill", min_nodes=2),
        REPRODUCED),
    SeedVerdict(
        "002", "the 3-node clusters dip", "at the other end of the spectrum the 3 node clusters see the biggest dip",
        "adverse `broker-kill`, the 3-node configs: `held` false by sizing.judgement.adverse.judge (as above)", DEMO,
        no_cluster_holds_a_kill("broker-kill", min_nodes=3, max_nodes=3), REPRODUCED),
    SeedVerdict(
        "002", "the 3-node clusters see the biggest dip",
        "the 5x16, 7x16, 7x8 and 9x8 clusters fully recover, while at the other end of the spectrum the 3 node "
        "clusters see the biggest dip",
        "adverse `broker-kill` `worst_confirm_ratio` (re-judged) of the 3-node configs below every bigger "
        "cluster's, in every repeat; no interval: one clustered size or one repeat cannot decide it", DEMO,
        smallest_cluster_dips_most("broker-kill", smallest=3), INCONCLUSIVE),
    SeedVerdict(
        "002", "a cluster that does not get through the kill is no survivor (the seed's survivors: 7x16 and 9x8)",
        "But the 7x16 was the best all-rounder when taking into account the resiliency tests.",
        "recommendation (sizing.judgement.recommendation.from_tables on the re-judged adverse rows): none recommended, "
        "every config fails `broker-kill`", DEMO, no_survivor("broker-kill"), REPRODUCED),
    SeedVerdict(
        "002", "through a consumer slowdown the publishing continues unaffected (one node of the scale model)",
        "Our requirements dictated that if we suffer a consumer slowdown, the publishing should continue unaffected",
        "adverse `consumer-slowdown` (backlog criterion): `held` by sizing.judgement.adverse.judge "
        "(sizing.criteria.rules.backlog_held: "
        "publishers reduced within the tolerance, nothing lost, the backlog drained)", ADVERSE_LOCAL,
        backlog_held("consumer-slowdown", want=True), REPRODUCED),
    SeedVerdict(
        "002", "the queue absorbs a publish peak the consumers cannot carry (one node of the scale model)",
        "instead you allow the message queue to absorb the extra traffic instead. Then you process the backlog over "
        "a time period.",
        "adverse `publish-peak` (backlog criterion, as above)", ADVERSE_LOCAL, backlog_held("publish-peak", want=True),
        REPRODUCED),
    SeedVerdict(
        "002", "a peak beyond what the cluster absorbs is not handled (one node of the scale model)",
        "The other clusters got close but were not able to handle the target rate.",
        "adverse `publish-peak-overload` (backlog criterion, as above): not held", ADVERSE_LOCAL,
        backlog_held("publish-peak-overload", want=False), REPRODUCED),
    SeedVerdict(
        "000", "scaling out carries more than scaling up: 5 x c5.2xlarge above 3 x c5.9xlarge and 3 x c5.4xlarge",
        "Scaling out and the middle ground of up/out showed the best results.",
        f"{TOP_RATES_COMPARED}: 5 x c5.2xlarge higher than both 3-node shapes by at least "
        f"{stats.PRACTICAL_EFFECT:.0%}, on io1 and on gp2 (the seed's middle ground, 5x16 and 7x16, is not in this "
        "run)", SHAPES_LOCAL,
        compared([(f"{big}-{volume}", f"{SCALED_OUT}-{volume}") for volume in ("io1", "gp2")
                  for big in (SCALED_UP, THREE_BY_16)], stats.HIGHER), CONTRADICTED),
    SeedVerdict(
        "001", "the HDD layouts carry less than the one-SSD layout (3 x c4.4xlarge, one quorum queue)",
        "The HDD clusters have lower throughput",
        f"{TOP_RATES_COMPARED}: each st1 layout lower than rabbitmq1 (one io1) by at least "
        f"{stats.PRACTICAL_EFFECT:.0%}",
        DISKS_LOCAL, compared([(IO1, ST1), (IO1, ST1_WAL), (IO1, ST1_3)], stats.LOWER), REPRODUCED),
    SeedVerdict(
        "001", "the single HDD lags the two- and three-HDD layouts",
        "The single HDD cluster clearly lags at around 13k msg/s.",
        f"{TOP_RATES_COMPARED}: rabbitmq10 (one st1) lower than rabbitmq13 and rabbitmq16 by at least "
        f"{stats.PRACTICAL_EFFECT:.0%}", DISKS_LOCAL, compared([(ST1_WAL, ST1), (ST1_3, ST1)], stats.LOWER),
        INCONCLUSIVE),
    SeedVerdict(
        "001", "the WAL on its own HDD comes close to the SSD",
        "For a single queue workload, separating the WAL from the segment file workload onto separate disks has given "
        "us close to SSD performance.",
        f"{TOP_RATES_COMPARED}: rabbitmq13 and rabbitmq16 (st1, the WAL on its own drive) unchanged against "
        f"rabbitmq1 (one io1) within the seed's own gap, {SEED_001_CLOSE:.1%} (17k against 19k msg/s)", DISKS_LOCAL,
        compared([(IO1, ST1_WAL), (IO1, ST1_3)], stats.UNCHANGED, threshold=SEED_001_CLOSE), CONTRADICTED),
    SeedVerdict(
        "001", "the three SSD layouts carry the same",
        "We see that the SSD clusters rabbitmq1, rabbitmq4 and rabbitmq7 all are reaching around 19k msg/s.",
        f"{TOP_RATES_COMPARED}: rabbitmq4 and rabbitmq7 (io1, the WAL on its own drive) unchanged against "
        f"rabbitmq1 within {stats.PRACTICAL_EFFECT:.0%}", DISKS_LOCAL,
        compared([(IO1, IO1_WAL), (IO1, IO1_3)], stats.UNCHANGED), INCONCLUSIVE),
    SeedVerdict(
        "004", "with x-max-length the publishers are not blocked while the consumers stall (one node of the scale "
        "model)",
        "The producers will not be blocked, as would be the case if the memory alarm got triggered, so messages will "
        "continue flowing, even if at a reduced rate.",
        "phase_summary `publishers_blocked_s` of `stall-capped` (the broker's own connection.blocked) within the "
        "scenario's tolerance by sizing.criteria.rules.broker_blocked_publishers", STALL_LOCAL,
        publishers_blocked("stall-capped", want=False), REPRODUCED),
    SeedVerdict(
        "004", "without it a backlog held in memory trips the memory alarm and blocks the publishers (one node of the "
        "scale model)",
        "our message backlog is held entirely in memory and can result in the memory alarm getting triggered. When "
        "the memory alarm gets triggered, all producers will be blocked.",
        "phase_summary `publishers_blocked_s` of `stall-uncapped` beyond the scenario's tolerance (as above)",
        STALL_LOCAL, publishers_blocked("stall-uncapped", want=True), REPRODUCED),
    SeedVerdict(
        "004", "at max rate the node is CPU-bound (one node of the scale model, with and without x-max-length)",
        "This workload demonstrates queue number impact on rabbitmq performance with CPU as a bottleneck.",
        "phase_summary's bottleneck of every max-rate phase, re-derived by sizing.criteria.rules.phase_bottleneck "
        "from the row's figures: `cpu`", MAX_RATE_LOCAL,
        bound_by(("max-throughput", "max-throughput-uncapped"), "cpu"), REPRODUCED),
    SeedVerdict(
        "003", "the in-flight limit's biggest jump is between 20 and 200 (a quorum queue, a 20 ms round trip)",
        SEED_003_CURVE, STEP_SHAPE + "`largest_step` on 20 -> 200, decided", RTT_LOCAL,
        largest_step(INFLIGHT, "confirms_in_flight=20", "confirms_in_flight=200"), REPRODUCED),
    SeedVerdict(
        "003", "an in-flight limit of 10000 has no benefit over 1000 (as above)", SEED_003_CURVE,
        STEP_SHAPE + "`no_better` on 1000 -> 10000", RTT_LOCAL,
        no_benefit(INFLIGHT, "confirms_in_flight=1000", "confirms_in_flight=10000"), INCONCLUSIVE),
    SeedVerdict(
        "003", "no confirms and no acks gain no throughput on a quorum queue", SEED_003_NO_CONFIRMS,
        FINDINGS_EFFECT.format(other="no confirms and auto-ack", base="confirms and acks", metric="the publish rate")
        + ": unchanged", QUEUES_LOCAL, found([(QQ, QQ_NO_CONFIRMS)], "publish_rate", stats.UNCHANGED), INCONCLUSIVE),
    SeedVerdict(
        "003", "no confirms and no acks gain no throughput on a mirrored queue", SEED_003_NO_CONFIRMS,
        FINDINGS_EFFECT.format(other="no confirms and auto-ack", base="confirms and acks", metric="the publish rate")
        + ": unchanged", QUEUES_LOCAL, found([(MIRRORED, MIRRORED_NO_CONFIRMS)], "publish_rate", stats.UNCHANGED),
        CONTRADICTED),
    SeedVerdict(
        "003", "no confirms and no acks raise the end-to-end p95 on a quorum queue", SEED_003_NO_CONFIRMS,
        FINDINGS_EFFECT.format(other="no confirms and auto-ack", base="confirms and acks", metric="the e2e p95")
        + ": higher", QUEUES_LOCAL, found([(QQ, QQ_NO_CONFIRMS)], "e2e_p95_ms", stats.HIGHER), INCONCLUSIVE),
    SeedVerdict(
        "003", "no confirms and no acks raise the end-to-end p95 on a mirrored queue", SEED_003_NO_CONFIRMS,
        FINDINGS_EFFECT.format(other="no confirms and auto-ack", base="confirms and acks", metric="the e2e p95")
        + ": higher", QUEUES_LOCAL, found([(MIRRORED, MIRRORED_NO_CONFIRMS)], "e2e_p95_ms", stats.HIGHER),
        REPRODUCED),
    SeedVerdict(
        "003", "a quorum queue carries more than a mirrored one",
        "Finally - a single quorum queue outperforms a single mirrored queue significantly.",
        FINDINGS_EFFECT.format(other="quorum", base="mirrored", metric="the publish rate") + ": higher",
        QUEUES_LOCAL, found([(MIRRORED, QQ)], "publish_rate", stats.HIGHER), REPRODUCED),
    SeedVerdict(
        "003", "a quorum queue has a lower end-to-end p95 than a mirrored one",
        "The quorum queue achieves much higher throughput than the mirrored queue and also has lower 95th percentile "
        "latencies.",
        FINDINGS_EFFECT.format(other="quorum", base="mirrored", metric="the e2e p95") + ": lower",
        QUEUES_LOCAL, found([(MIRRORED, QQ)], "e2e_p95_ms", stats.LOWER), CONTRADICTED),
)


def judge_all(runs: Mapping[RunRef, RunRows],
              seeds: Sequence[SeedVerdict] = SEEDS) -> list[tuple[SeedVerdict, Outcome]]:
    """Every declaration judged on its fixtures (`runs`: app.runfixture.load_all of their keys)."""
    return [(seed, seed.judge([runs[key] for key in seed.runs])) for seed in seeds]


README_START = "<!-- seed verdicts from our own runs: generated by scripts/regen_seed_table.py -->"
README_END = "<!-- end of the generated seed verdicts -->"


def markdown(results: Sequence[tuple[SeedVerdict, Outcome]], runs: Mapping[RunRef, RunRows]) -> str:
    """The README's table of the verdicts (between README_START and README_END)."""
    def repeats(seed: SeedVerdict) -> str:
        return ", ".join(str(row.get("repeats")) for key in seed.runs for row in runs[key].rows("runs"))

    lines = ["| seed | conclusion | verdict | runs | repeats |", "|---|---|---|---|---|"]
    lines += [f"| {seed.seed} | {seed.conclusion} | **{outcome.verdict}** | {seed.run_keys()} | {repeats(seed)} |"
              for seed, outcome in results]
    return "\n".join(lines)
