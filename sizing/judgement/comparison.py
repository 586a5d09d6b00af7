"""Two runs of a campaign compared (issue 24): `sizing compare`, the report's comparison section and `sizing trend`
all read their figures here, from table rows (pure: rows in, rows out; no figure computed anywhere else).

Per config and scenario, each headline metric is read per repeat from the run's tables, the run's value is the
median of its repeats, and the two runs are compared with the platform's one statistics module (sizing.criteria.stats):
- the relative change head vs base with the exact Mann-Whitney interval on logs (Hodges-Lehmann estimate), its true
  coverage and n; `effect_verdict` at COMPARE_CONFIDENCE (90 %) with a practical threshold (PRACTICAL_EFFECT, 5 %,
  a flag of the CLI): higher / lower / unchanged / inconclusive, mapped by the metric's direction to improved /
  regressed / unchanged / inconclusive. Three repeats a side reach 90 % and no more; fewer can only be
  `inconclusive`, never a guess.
- a figure that can be zero (a recovery time of 0 s, no reduced-publish second) has no relative change: its shift
  is compared on the metric's own scale (sizing.criteria.stats.shift_interval, relative=False) against the metric's own
  practical threshold (`Metric.absolute_threshold`, e.g. 1 s).
- an adverse scenario's criterion (`held`, every repeat) is compared as a verdict: held -> not held is regressed.

Metrics (METRICS): top throughput within the SLO (capacity_repeats, per repeat), capacity from a search
(capacity.sustainable_rate), end-to-end p99 at the campaign target (phase_summary, capacity scenarios), cost per
1000 msg/s per month at the top throughput and at the sustainable rate (sizing.resources.cost over the leaderboards'
monthly cost), and per adverse scenario the worst recovery, worst dip and unavailable seconds (fault criterion) or the
reduced-publish seconds, peak backlog and drain time (backlog criterion), per repeat from
sizing.judgement.adverse.judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sizing.campaign import Campaign, as_family_row, families, family_phases
from sizing.criteria import rules
from sizing.criteria.stats import (
    COMPARE_CONFIDENCE,
    HIGHER,
    INCONCLUSIVE,
    LOWER,
    PRACTICAL_EFFECT,
    SHIFT,
    UNCHANGED,
    Metric,
    effect_verdict,
    level_text,
    median_interval,
    number,
    shift_interval,
)
from sizing.criteria.stats import compare as compare_samples
from sizing.judgement import adverse
from sizing.judgement.history import spec_differences
from sizing.judgement.recommendation import recommended_config
from sizing.resources.cost import cost_per_1000_msgs

IMPROVED, REGRESSED = "improved", "regressed"
VERDICTS = (IMPROVED, REGRESSED, UNCHANGED, INCONCLUSIVE)
CRITERION_TEST = "criterion held in every repeat (sizing.judgement.adverse)"
CAPACITY_SCENARIOS = "capacity"  # capacity_repeats' figures span every capacity scenario of a config


TOP_THROUGHPUT = Metric("top_throughput", "top throughput within the SLO", "msg/s", True)
SUSTAINABLE = Metric("sustainable_rate", "capacity from the search", "msg/s", True)
P99_AT_TARGET = Metric("p99_at_target_ms", "end-to-end p99 at the target", "ms", False)
COST_AT_TOP = Metric("cost_per_1k_at_top", "cost per 1000 msg/s at the top throughput", "per month", False)
COST_AT_SUSTAINABLE = Metric("cost_per_1k_at_sustainable", "cost per 1000 msg/s at the search's capacity",
                             "per month", False)
RECOVERY = Metric("max_time_to_recover_s", "longest recovery after a fault", "s", False, 1.0)
DIP = Metric("worst_dip_ratio", "worst dip (5 s mean after a fault / before)", "ratio", True, 0.05)
UNAVAILABLE = Metric("unavailable_s", "degraded seconds after faults", "s", False, 1.0)
REDUCED = Metric("reduced_publish_s", "seconds of reduced publish rate", "s", False, 1.0)
PEAK_BACKLOG = Metric("peak_backlog_msgs", "peak backlog", "msgs", False, 1000.0)
DRAIN = Metric("drain_s", "seconds to drain the backlog", "s", False, 1.0)
HELD = Metric("held", "criterion held", "", True)
FAULT_METRICS = (RECOVERY, DIP, UNAVAILABLE)
BACKLOG_METRICS = (REDUCED, PEAK_BACKLOG, DRAIN)
METRICS = (TOP_THROUGHPUT, SUSTAINABLE, P99_AT_TARGET, COST_AT_TOP, COST_AT_SUSTAINABLE, *FAULT_METRICS,
           *BACKLOG_METRICS, HELD)
METRIC = {m.name: m for m in METRICS}
# The phase_summary columns the comparison reads (the foreground group's rows: sizing.criteria.rules.judged_group).
PHASE_INPUTS = tuple(dict.fromkeys(("config_id", "scenario", "run_id", "repeat", "phase", "target_rate",
                                    "e2e_p99_ms", "group", "foreground", *adverse.VERDICT_INPUTS)))


@dataclass(frozen=True)
class RunTables:
    """One run's rows of the tables the comparison reads (plain dicts, as stored; sizing.contract.records schemas)."""

    run_id: str
    run: Mapping[str, Any] | None  # its `runs` row
    capacity_repeats: Sequence[Mapping[str, Any]] = ()
    capacity: Sequence[Mapping[str, Any]] = ()
    leaderboards: Sequence[Mapping[str, Any]] = ()
    adverse: Sequence[Mapping[str, Any]] = ()
    phase_summary: Sequence[Mapping[str, Any]] = ()  # PHASE_INPUTS, foreground rows
    recommendation: Sequence[Mapping[str, Any]] = ()  # config_id, recommended (a sizing campaign's answer)

    @property
    def recommended(self) -> str | None:
        """What the run recommended, as its `recommendation` table says: a config, NONE_RECOMMENDED, or None when
        the run has no such rows (not a sizing campaign, or analysed before the table existed)."""
        if not self.recommendation:
            return None
        return recommended_config(self.recommendation) or NONE_RECOMMENDED


NONE_RECOMMENDED = "none"  # a sizing run whose analysis found no config to recommend


# ------------------------------------------------------------------------------- per-repeat values of a run


def repeat_values(campaign: Campaign, tables: RunTables) -> dict[tuple[str, str, str], dict[int, float]]:
    """{(config, scenario, metric): {repeat: value}} of every numeric headline metric the run's tables hold."""
    out: dict[tuple[str, str, str], dict[int, float]] = {}

    def put(config_id: str, scenario: str, metric: Metric, repeat: Any, value: Any) -> None:
        figure = number(value)
        if figure is not None:
            out.setdefault((str(config_id), scenario, metric.name), {})[int(repeat)] = figure

    monthly = {str(r["config_id"]): number(r.get("monthly_cost")) for r in tables.leaderboards}
    for row in tables.capacity_repeats:
        top = number(row.get("top_matched_throughput"))
        put(row["config_id"], CAPACITY_SCENARIOS, TOP_THROUGHPUT, row["repeat"], top)
        cost = monthly.get(str(row["config_id"]))
        if top and cost:
            put(row["config_id"], CAPACITY_SCENARIOS, COST_AT_TOP, row["repeat"], cost_per_1000_msgs(cost, top))
    for row in tables.capacity:
        rate = number(row.get("sustainable_rate"))
        put(row["config_id"], row["scenario"], SUSTAINABLE, row["repeat"], rate)
        cost = monthly.get(str(row["config_id"]))
        if rate and cost:
            put(row["config_id"], row["scenario"], COST_AT_SUSTAINABLE, row["repeat"], cost_per_1000_msgs(cost, rate))
    foreground = [r for r in tables.phase_summary  # rows written before groups have no foreground: their one group
                  if bool(rules.judged_group(True if r.get("foreground") is None else bool(r["foreground"])))]
    capacity = {s.name for s in campaign.scenarios if rules.scenario_kind(s) == rules.CAPACITY}
    at_target: dict[tuple[str, str, int], float] = {}
    for row in foreground:
        p99 = number(row.get("e2e_p99_ms"))
        if row["scenario"] in capacity and number(row.get("target_rate")) == campaign.target.rate and p99 is not None:
            key = (str(row["config_id"]), str(row["scenario"]), int(row["repeat"]))
            at_target[key] = max(at_target.get(key, p99), p99)
    for (config_id, scenario, repeat), p99 in at_target.items():
        put(config_id, scenario, P99_AT_TARGET, repeat, p99)
    for (config_id, scenario, repeat), figures in adverse_repeat_figures(campaign, foreground).items():
        for metric in (*FAULT_METRICS, *BACKLOG_METRICS):
            if metric.name in figures:
                put(config_id, scenario, metric, repeat, figures[metric.name])
    return out


def adverse_repeat_figures(campaign: Campaign, rows: Iterable[Mapping[str, Any]]
                           ) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Per (config, adverse scenario as written, repeat): its figures judged on that repeat alone, by the one judge
    the adverse table uses (sizing.judgement.adverse.judge); only the figures of its criterion."""
    scenarios = {s.name: s for s in families(campaign.scenarios) if rules.is_adverse(s)}
    phases = family_phases(campaign.scenarios)
    grouped: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        family = as_family_row(dict(row), phases) if row["scenario"] in phases else dict(row)
        if family["scenario"] in scenarios:
            grouped.setdefault((str(row["config_id"]), family["scenario"], int(row["repeat"])), []).append(family)
    out = {}
    for (config_id, scenario, repeat), phase_rows in grouped.items():
        judged = adverse.judge(scenarios[scenario], phase_rows, campaign.target.rate)
        names = FAULT_METRICS if judged["criterion"] == rules.FAULT_ADVERSE else BACKLOG_METRICS
        out[(config_id, scenario, repeat)] = {m.name: judged.get(m.name) for m in names}
    return out


def run_value(values: Sequence[float]) -> dict[str, Any]:
    """A run's figure: the median of its repeats with the order-statistic interval and its true level."""
    interval = median_interval(values)
    return {"value": interval.estimate, "low": interval.low if interval.has_interval else None,
            "high": interval.high if interval.has_interval else None, "level": interval.level, "n": interval.n}


# ------------------------------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class Change:
    """One metric of one config and scenario, head run against base run."""

    config_id: str
    scenario: str
    metric: str
    label: str
    unit: str
    higher_is_better: bool
    base: float | None  # the base run's median over its repeats (held: 1 / 0)
    head: float | None
    n_base: int
    n_head: int
    relative: bool  # change is relative (0.1 = +10 %); else a shift in `unit`
    change: float | None
    change_low: float | None
    change_high: float | None
    level: float  # the interval's true coverage (0: none)
    test: str
    verdict: str
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict_of(stats_verdict: str, higher_is_better: bool) -> str:
    """sizing.criteria.stats' higher / lower as improved / regressed by the metric's direction."""
    if stats_verdict == HIGHER:
        return IMPROVED if higher_is_better else REGRESSED
    if stats_verdict == LOWER:
        return REGRESSED if higher_is_better else IMPROVED
    return stats_verdict


def compare_values(metric: Metric, config_id: str, scenario: str, base: Sequence[float], head: Sequence[float],
                   confidence: float = COMPARE_CONFIDENCE, threshold: float = PRACTICAL_EFFECT) -> Change:
    """One metric's values per repeat in two runs compared (module docstring)."""
    base_value = median_interval(base).estimate if base else None
    head_value = median_interval(head).estimate if head else None
    common = {"config_id": config_id, "scenario": scenario, "metric": metric.name, "label": metric.label,
              "unit": metric.unit, "higher_is_better": metric.higher_is_better, "base": base_value,
              "head": head_value, "n_base": len(base), "n_head": len(head)}
    if not base or not head:
        return Change(**common, relative=True, change=None, change_low=None, change_high=None, level=0.0,
                      test="none", verdict=INCONCLUSIVE,
                      note=f"no value in the {'base' if not base else 'head'} run")
    if min(*base, *head) > 0:
        effect = compare_samples(base, head, confidence, threshold)
        interval, verdict, relative = effect.interval, effect.verdict, True
    else:  # a figure that can be 0 has no relative change: its shift in its own unit
        interval = shift_interval(base, head, confidence, relative=False)
        absolute = metric.absolute_threshold if metric.absolute_threshold is not None else threshold
        verdict, relative = effect_verdict(interval, confidence, absolute), False
    note = None
    if not interval.reaches(confidence):
        note = (f"{len(base)} vs {len(head)} repeats reach {level_text(interval.level)} at most, short of "
                f"{level_text(confidence)}: inconclusive by construction")
    return Change(**common, relative=relative, change=interval.estimate,
                  change_low=interval.low if interval.has_interval else None,
                  change_high=interval.high if interval.has_interval else None, level=interval.level,
                  test=interval.method if relative else SHIFT, verdict=verdict_of(verdict, metric.higher_is_better),
                  note=note)


def held_changes(base: RunTables, head: RunTables) -> list[Change]:
    """Each adverse scenario's criterion, base vs head (the adverse table: held in every repeat). A side that was
    not judged (`held` null: too few conclusive phases) makes the change inconclusive, with that side's reason."""
    def verdicts(tables: RunTables) -> dict[tuple[str, str], tuple[bool | None, int, str | None]]:
        return {(str(r["config_id"]), str(r["scenario"])): (adverse.held_value(r.get("held")),
                                                            int(r.get("repeats") or 0), r.get("reason"))
                for r in tables.adverse}

    before, after = verdicts(base), verdicts(head)
    out = []
    for key in sorted(set(before) & set(after)):
        (was, n_base, base_reason), (now, n_head, reason) = before[key], after[key]
        if was is None or now is None:
            out.append(Change(key[0], key[1], HELD.name, HELD.label, HELD.unit, True, _as_float(was), _as_float(now),
                              n_base, n_head, False, None, None, None, 0.0, CRITERION_TEST, INCONCLUSIVE,
                              note=reason if now is None else base_reason))
            continue
        verdict = UNCHANGED if was == now else (IMPROVED if now else REGRESSED)
        out.append(Change(key[0], key[1], HELD.name, HELD.label, HELD.unit, True, float(was), float(now), n_base,
                          n_head, False, float(now) - float(was), None, None, 0.0, CRITERION_TEST, verdict,
                          note=reason if verdict == REGRESSED else None))
    return out


def _as_float(value: bool | None) -> float | None:
    return None if value is None else float(value)


@dataclass
class Comparison:
    campaign: str
    base_run: str
    head_run: str
    confidence: float
    threshold: float
    spec_differences: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    only_in_base: list[str] = field(default_factory=list)  # "config / scenario / metric" measured in one run only
    only_in_head: list[str] = field(default_factory=list)
    base_record: Mapping[str, Any] | None = None
    head_record: Mapping[str, Any] | None = None
    # what each run recommended (RunTables.recommended: a config, NONE_RECOMMENDED, None: no recommendation table)
    base_recommended: str | None = None
    head_recommended: str | None = None

    @property
    def recommendation_changed(self) -> bool:
        return None not in (self.base_recommended, self.head_recommended) and (
            self.base_recommended != self.head_recommended)

    @property
    def regressed(self) -> bool:
        return any(c.verdict == REGRESSED for c in self.changes)

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for c in self.changes if c.verdict == v) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "base_run": self.base_run, "head_run": self.head_run,
                "confidence": self.confidence, "threshold": self.threshold,
                "spec_differences": self.spec_differences, "regressed": self.regressed, "counts": self.counts(),
                "changes": [c.to_dict() for c in self.changes], "only_in_base": self.only_in_base,
                "only_in_head": self.only_in_head,
                "recommended": {"base": self.base_recommended, "head": self.head_recommended,
                                "changed": self.recommendation_changed},
                "versions": {side: _versions(record) for side, record in
                             (("base", self.base_record), ("head", self.head_record))}}


VERSION_FIELDS = ("spec_hash", "measured_on", "code_commit", "rabbitmq_version", "erlang_version", "pika_version",
                  "spark_version", "instance_types", "status")


def _versions(record: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: (record or {}).get(k) for k in VERSION_FIELDS}


def compare_runs(campaign: Campaign, base: RunTables, head: RunTables, confidence: float = COMPARE_CONFIDENCE,
                 threshold: float = PRACTICAL_EFFECT, base_spec: Mapping[str, Any] | None = None,
                 head_spec: Mapping[str, Any] | None = None) -> Comparison:
    """Every headline metric of every config and scenario both runs measured, head against base. `campaign`: the
    spec the metrics are read by (the head run's); `*_spec`: the resolved specs, whose differences are listed."""
    result = Comparison(campaign.name, base.run_id, head.run_id, confidence, threshold,
                        spec_differences(base_spec, head_spec) if base_spec is not None and head_spec is not None
                        else [], base_record=base.run, head_record=head.run,
                        base_recommended=base.recommended, head_recommended=head.recommended)
    before, after = repeat_values(campaign, base), repeat_values(campaign, head)
    order = {m.name: i for i, m in enumerate(METRICS)}
    for key in sorted(set(before) | set(after), key=lambda k: (k[0], k[1], order.get(k[2], 99))):
        config_id, scenario, name = key
        if key not in after:
            result.only_in_base.append(" / ".join(key))
            continue
        if key not in before:
            result.only_in_head.append(" / ".join(key))
            continue
        b = [before[key][r] for r in sorted(before[key])]
        h = [after[key][r] for r in sorted(after[key])]
        result.changes.append(compare_values(METRIC[name], config_id, scenario, b, h, confidence, threshold))
    result.changes += held_changes(base, head)
    result.changes.sort(key=lambda c: (c.config_id, c.scenario, order.get(c.metric, 99)))
    return result


# ------------------------------------------------------------------------------------------ describing


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "":
        return "held" if value >= 0.5 else "not held"
    if unit == "ratio":
        return f"{value:.2f}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_change(change: Change) -> str:
    """`-9.1 % [-11 %, -7.2 %] (90 %)`, `+3.0 s [+1.0, +5.0] (90 %)`, `n/a`."""
    if change.change is None or change.metric == HELD.name:
        return "—" if change.metric == HELD.name else "n/a"

    def pct(x: float) -> str:
        return f"{x * 100:+.1f} %"

    def shift(x: float) -> str:
        return f"{x:+.3g}"

    show = pct if change.relative else shift
    text = show(change.change) + ("" if change.relative else f" {change.unit}")
    if change.change_low is not None and change.change_high is not None:
        text += f" [{show(change.change_low)}, {show(change.change_high)}] ({level_text(change.level)})"
    else:
        text += " (no interval)"
    return text


def recommendation_words(comparison: Comparison) -> str:
    """`base n1-x -> head n3-y (changed)`: what each run recommended, as its recommendation table says."""
    def side(value: str | None) -> str:
        return value or "n/a (no recommendation table)"

    return (f"base {side(comparison.base_recommended)} -> head {side(comparison.head_recommended)}"
            + (" (changed)" if comparison.recommendation_changed else ""))


def table_rows(comparison: Comparison) -> list[list[str]]:
    """The CLI's and the report's table: config, scenario, metric, base, head, change [interval] (level), test
    (n), verdict."""
    rows = []
    for c in comparison.changes:
        unit = f" {c.unit}" if c.unit and c.unit != "ratio" else ""
        rows.append([c.config_id, c.scenario, c.label, format_value(c.base, c.unit) + unit,
                     format_value(c.head, c.unit) + unit, format_change(c),
                     f"{_short_test(c.test)}, n = {c.n_base} vs {c.n_head}", c.verdict])
    return rows


TABLE_HEADER = ["config", "scenario", "metric", "base", "head", "change [interval] (coverage)", "test, n", "verdict"]


def _short_test(test: str) -> str:
    return {"Hodges-Lehmann ratio on logs, Mann-Whitney exact": "Mann-Whitney exact, logs",
            SHIFT: "Mann-Whitney exact, shift", CRITERION_TEST: "criterion"}.get(test, test)
