"""The answer to a compare or characterise campaign's question, from the findings table (sizing.judgement.findings wrote
it; nothing here recomputes a figure): the report's first sentences and its Findings section."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from app.report.context import ReportContext
from app.report.html import Raw, table, tag
from sizing.campaign import Campaign
from sizing.criteria.stats import (
    COMPARE_CONFIDENCE,
    INCONCLUSIVE,
    INTERVAL_CONFIDENCE,
    PRACTICAL_EFFECT,
    SECTION_MIN_SECONDS,
    SECTION_TAIL_MIN,
    WITHIN_RUN,
    WITHIN_RUN_BATCHES,
    WITHIN_RUN_MIN_SECONDS,
    level_text,
    number,
)
from sizing.judgement.findings import CHARACTERISE, COMPARE, EFFECT, LEVEL, METRIC, SIZE, STEP, WITHIN_RUN_BASES

HEADLINE_METRICS = ("publish_rate", "e2e_p99_ms")  # what the first sentences speak of; the section shows all
SHAPE_METRIC = "publish_rate"  # the curve whose largest jump and knee the first sentences name (seed 003's)


def fmt_value(metric: str, value: object) -> str:
    v = number(value)
    if v is None:
        return "n/a"
    if METRIC[metric].unit == "ms":
        return f"{v / 1000:,.2f} s" if v >= 1000 else f"{v:,.1f} ms"
    if METRIC[metric].unit == "CV":
        return f"CV {v:.3f}"
    return f"{v:,.0f} msg/s"


def within_one_run(row: pd.Series) -> bool:
    """The row's interval comes from one run's own seconds (sizing.judgement.findings.WITHIN_RUN_BASES), not from
    repeats."""
    return row.get("interval_basis") in WITHIN_RUN_BASES


def _basis_words(row: pd.Series) -> str:
    return f", {WITHIN_RUN}" if within_one_run(row) else ""


def fmt_effect(row: pd.Series) -> str:
    """`-31 % [-40 %, -20 %] (90 %, n = 3 vs 3)`, `-98 % [-99 %, -98 %] (90 %, n = 1 vs 1, within one run;
    run-to-run variation not measured)`, or `-31 % (n = 1 vs 1, no interval)`."""
    effect = number(row.get("effect"))
    if effect is None:
        return "n/a"
    text = f"{effect:+.0%}".replace("%", " %")
    counts = f"n = {int(row['n_baseline'])} vs {int(row['n'])}"
    low, high = number(row.get("effect_low")), number(row.get("effect_high"))
    if low is None or high is None:
        return f"{text} ({counts}, no interval)"
    bounds = f"[{low:+.0%}, {high:+.0%}]".replace("%", " %")
    return f"{text} {bounds} ({level_text(float(row['effect_level']))}, {counts}{_basis_words(row)})"


def fmt_level(row: pd.Series) -> str:
    text = fmt_value(row["metric"], row["value"])
    low, high = number(row.get("value_low")), number(row.get("value_high"))
    if low is None or high is None:
        return f"{text} (n = {int(row['n'])})"
    return (f"{text} [{fmt_value(row['metric'], low)}, {fmt_value(row['metric'], high)}] "
            f"({level_text(float(row['value_level']))}, n = {int(row['n'])}{_basis_words(row)})")


def arm_label(row: pd.Series, by: str | None) -> str:
    """What varies in an effect row, in the comparison's own terms."""
    if by == "config" and row["config_id"] != row["baseline_config_id"]:
        return str(row["config_id"])
    if row["family"] != row["baseline_family"]:
        return f"{row['family']} ({row['phase_name']})"
    return f"{row['family']}: {row['phase_name']}"


def baseline_label(row: pd.Series, by: str | None) -> str:
    if by == "config" and row["config_id"] != row["baseline_config_id"]:
        return str(row["baseline_config_id"])
    if row["family"] != row["baseline_family"]:
        return f"{row['baseline_family']} ({row['baseline_phase_name']})"
    return str(row["baseline_phase_name"])


def question(campaign: Campaign) -> str:
    comparison = campaign.comparison
    if campaign.purpose == CHARACTERISE:
        return f"What does {campaign.name} do: throughput and latency of each step"
    if comparison is not None and comparison.description:
        return comparison.description
    if comparison is not None and comparison.by == "config":
        return f"What each cluster changes relative to {' and to '.join(comparison.baselines)}"
    return "What each client setting changes relative to its baseline step"


def headline(campaign: Campaign, findings: pd.DataFrame | None) -> tuple[str, list[str]]:
    """The first sentence (the question, answered) and one line per arm."""
    if findings is None or findings.empty:
        return f"{question(campaign)}? No findings yet: the analysis wrote no findings rows.", []
    head, lines = (compare_lines if campaign.purpose == COMPARE else characterise_lines)(campaign, findings)
    return head, [*lines, *shape_lines(findings)]


def _threshold() -> str:
    """sizing.criteria.stats' practical threshold as the report words it (read when worded, as the effects note
    does)."""
    return f"{PRACTICAL_EFFECT * 100:g} %"


def _flag(value: object) -> bool | None:
    """A nullable bool column's cell (None, NaN or pd.NA: not known)."""
    return None if value is None or pd.isna(value) else bool(value)  # type: ignore[arg-type]


def step_pair(row: pd.Series) -> str:
    """`confirms_in_flight 20 -> 200` (one varied setting), else `a -> b` with both labels."""
    before, after = str(row["baseline_phase_name"]), str(row["phase_name"])
    key, _, value = after.partition("=")
    if before.startswith(f"{key}=") and value:
        return f"{key} {before.partition('=')[2]} → {value}"
    return f"{before} → {after}"


def fmt_step_effect(row: pd.Series) -> str:
    return f"{fmt_effect(row)}: {row['verdict']}"


def shape_lines(findings: pd.DataFrame, metric: str = SHAPE_METRIC) -> list[str]:
    """Per stepped family and config, the curve's shape from its step rows: the largest change between adjacent
    steps and where the curve flattens (the knee), or why no knee is named, e.g. `qq-inflight on n1: publish rate's
    largest change is confirms_in_flight 20 → 200, +400 % [...]: higher; it flattens after confirms_in_flight=200:
    no later step is better than the one before within 5 % (200 → 1000 +2 % [...]; 1000 → 10000 -1 % [...])`."""
    steps = findings[(findings["kind"] == STEP) & (findings["metric"] == metric)]
    lines = []
    for (family, config_id), rows in steps.groupby(["family", "config_id"], sort=False):
        as_series = [r for _, r in rows.iterrows()]
        parts = []
        largest = [r for r in as_series if _flag(r["largest_step"])]
        if largest:
            parts.append(f"{METRIC[metric].label}'s largest change is {step_pair(largest[0])}, "
                         f"{fmt_step_effect(largest[0])}")
        knee = next((i for i, r in enumerate(as_series) if _flag(r["knee"])), None)
        flags = [_flag(r["no_better"]) for r in as_series]
        later = "; ".join(f"{step_pair(r)} {fmt_effect(r)}" for r in as_series[knee or 0:])
        if knee is not None:
            parts.append(f"it flattens after {as_series[knee]['baseline_phase_name']}: no later step is better "
                         f"than the one before within {_threshold()} ({later})")
        elif all(f is True for f in flags):
            parts.append(f"no step is better than the one before within {_threshold()} ({later})")
        elif flags[-1] is False:
            parts.append(f"still rising at the last step ({step_pair(as_series[-1])} "
                         f"{fmt_step_effect(as_series[-1])}): no knee within the steps measured")
        else:
            which = "the step before the flat ones" if flags[-1] is True else "the last step"
            who = "each run's own seconds cannot" if any(within_one_run(r) for r in as_series) else "the repeats cannot"
            parts.append(f"no knee can be named: {who} tell whether {which} gains more than "
                         f"{_threshold()} over the one before it")
        lines.append(f"{family} on {config_id}: " + "; ".join(parts))
    return lines


def compare_lines(campaign: Campaign, findings: pd.DataFrame) -> tuple[str, list[str]]:
    """Per arm, each headline metric's verdicts over the phases compared and the median effect, e.g. `st1, WAL on its
    own volume: publish rate lower in 4 of 4 (median -12 %); p99 inconclusive in 4 of 4 (median +40 %)`."""
    by = campaign.comparison.by if campaign.comparison else None
    effects = findings[findings["kind"] == EFFECT]
    if effects.empty:
        return f"{question(campaign)}? Nothing to compare: no arm had rows beside its baseline.", []
    effects = effects.assign(arm=[arm_label(r, by) for _, r in effects.iterrows()],
                             base=[baseline_label(r, by) for _, r in effects.iterrows()])
    lines = []
    for (arm, base), rows in effects.groupby(["arm", "base"], sort=False):
        parts = []
        for metric in HEADLINE_METRICS:
            mine = rows[rows["metric"] == metric]
            if mine.empty:
                continue
            counts = mine["verdict"].value_counts()
            verdict, count = counts.index[0], int(counts.iloc[0])
            median = float(mine["effect"].median())
            what = METRIC[metric].label
            scope = f"in {count} of {len(mine)}" if len(mine) > 1 else ""
            parts.append(f"{what} {verdict} {scope} ({'median ' if len(mine) > 1 else ''}{median:+.0%})".replace(
                "  ", " ").replace("%", " %"))
        lines.append(f"{arm} vs {base}: " + "; ".join(parts))
    n = effects["n"].max()
    within = any(within_one_run(r) for _, r in effects.iterrows())
    if (effects["verdict"] != INCONCLUSIVE).any():
        note = ""
    elif within:
        note = (" Every comparison is inconclusive: with one repeat per arm, not even each run's own seconds "
                f"separate the arms at {COMPARE_CONFIDENCE * 100:g} %.")
    else:
        note = (f" Every comparison is inconclusive: with {int(n)} repeat(s) per arm no interval reaches "
                f"{COMPARE_CONFIDENCE * 100:g} %.")
    basis = (f"each over its repeats, or, with one repeat per arm, over each run's own seconds ({WITHIN_RUN})"
             if within else "each over its repeats")
    return f"{question(campaign)}? {len(lines)} comparison(s), {basis}.{note}", lines


def characterise_lines(campaign: Campaign, findings: pd.DataFrame) -> tuple[str, list[str]]:
    """Per family and config: the step that carried most, with its publish rate and p99."""
    levels = findings[findings["kind"] == LEVEL]
    lines = []
    for (family, config_id), rows in levels.groupby(["family", "config_id"], sort=False):
        rates = rows[rows["metric"] == "publish_rate"]
        if rates.empty:
            continue
        best = rates.loc[rates["value"].astype(float).idxmax()]
        p99 = rows[(rows["metric"] == "e2e_p99_ms") & (rows["phase_name"] == best["phase_name"])]
        text = f"{family} on {config_id}: {fmt_level(best)} published"
        if len(rates) > 1:
            text += f" at its best step ({best['phase_name']})"
        if not p99.empty:
            text += f", p99 {fmt_level(p99.iloc[0])} (latency from the {p99.iloc[0]['latency_basis']} time)"
        lines.append(text)
    return f"{question(campaign)}:", lines


def render(ctx: ReportContext) -> list[object]:
    """The Findings section of a compare or characterise campaign (a sizing campaign's verdict says it all)."""
    return section(ctx.campaign, ctx.data.findings) if ctx.campaign.purpose != SIZE else []


def section(campaign: Campaign, findings: pd.DataFrame | None) -> list[object]:
    """Every finding: the effects against their baselines (compare) and every arm's medians (both)."""
    out: list[object] = [tag("h2", "Findings", id="findings")]
    if findings is None or findings.empty:
        return [*out, tag("p", "No findings rows.", class_="muted")]
    by = campaign.comparison.by if campaign.comparison else None
    effects = findings[findings["kind"] == EFFECT]
    confidence, effect = f"{COMPARE_CONFIDENCE * 100:g} %", _threshold()  # sizing.criteria.stats, read when worded
    if not effects.empty:
        body = [[arm_label(r, by), baseline_label(r, by), r["family"] if by == "config" else r["config_id"],
                 METRIC[r["metric"]].label, fmt_value(r["metric"], r["baseline_value"]),
                 fmt_value(r["metric"], r["value"]), fmt_effect(r),
                 (r["verdict"], "ok" if r["better"] is True else "bad" if r["better"] is False else "muted")]
                for _, r in effects.iterrows()]
        out.append(tag("h3", "Effects against the baseline"))
        out.append(table(["arm", "baseline", "scenario" if by == "config" else "config", "metric", "baseline",
                          "arm", "effect [interval] (coverage, n)", "verdict"], body, numeric=[4, 5]))
        out.append(tag("p", "Effect: the arm's relative change against its baseline (Hodges-Lehmann estimate on "
                            "logs of the repeats' figures) with the exact Mann-Whitney interval and its true "
                            f"coverage; higher/lower needs that interval at {confidence} on one side of no change "
                            f"and an effect of at least {effect}; unchanged: the whole interval within {effect}; "
                            f"otherwise, and always without enough repeats for a {confidence} interval (3 per arm), "
                            "inconclusive. Green: the arm is better on that metric; red: worse."
                            + _within_run_note(effects, confidence), class_="note"))
    steps = findings[findings["kind"] == STEP]
    if not steps.empty:
        out.append(tag("h3", "Each step against the previous one"))
        out.append(tag("ul", [tag("li", line) for line in shape_lines(findings)]))
        body = [[r["family"], r["config_id"], step_pair(r), METRIC[r["metric"]].label,
                 fmt_value(r["metric"], r["baseline_value"]), fmt_value(r["metric"], r["value"]), fmt_effect(r),
                 (r["verdict"], {True: "ok", False: "bad", None: "muted"}[_flag(r["better"])]), step_shape(r)]
                for _, r in steps.iterrows()]
        out.append(table(["scenario", "config", "step", "metric", "previous", "step", "effect [interval] "
                          "(coverage, n)", "verdict", "shape"], body, numeric=[4, 5]))
        out.append(tag("p", "Each step of a stepped client setting against the step before it, with the same "
                            "statistics as the effects. Largest change: the adjacent pair with the largest change "
                            f"(by the size of its log ratio). No better: the step's interval at {confidence} "
                            f"excludes a gain of more than {effect} over the previous step. Knee: the previous step "
                            "is where the curve flattens: every later step is no better than the one before, and the "
                            "step into it was a gain." + _within_run_note(steps, confidence), class_="note"))
    levels = findings[findings["kind"] == LEVEL]
    out.append(tag("h3", "Every arm's figures"))
    wide = _levels_wide(levels)
    out.append(table(["scenario", "step / phase", "config", *[METRIC[m].label for m in wide.metrics], "n"],
                     wide.rows, numeric=list(range(3, 3 + len(wide.metrics) + 1))))
    within = any(within_one_run(r) for _, r in levels.iterrows())
    out.append(tag("p", "Medians over repeats with their order-statistic interval and its coverage. " + (
        f"With one repeat, a rate's interval is its run's own (marked {WITHIN_RUN}: batch means of its steady "
        f"seconds, {level_text(INTERVAL_CONFIDENCE)} nominal); a latency has none." if within else
        "No interval with one repeat."), class_="note"))
    return out


def _within_run_note(rows: pd.DataFrame, confidence: str) -> str:
    """How a comparison of one run per arm is made, in words (sizing.criteria.stats' batch means and sectioning, read
    when worded), when some of the rows were made so."""
    if not any(within_one_run(r) for _, r in rows.iterrows()):
        return ""
    return (f" With one repeat per arm, a rate's interval comes from each run's own steady seconds instead (marked "
            f"{WITHIN_RUN}): batch means over {WITHIN_RUN_BATCHES} non-overlapping windows (a phase of at least "
            f"{WITHIN_RUN_MIN_SECONDS} s), Welch t on the log means, at a nominal {confidence} whose coverage was "
            "simulated on autocorrelated seconds; it says how precisely each run measured itself, not how a second "
            f"run would differ. A percentile's comes from the same windows: the percentile of each window's merged "
            f"histogram around the whole run's, on logs (sectioning; a phase of at least {SECTION_MIN_SECONDS} s, "
            f"each window holding at least {SECTION_TAIL_MIN} latencies beyond it; otherwise none).")


def step_shape(row: pd.Series) -> str:
    """What a step row says of the curve's shape, in words."""
    words = []
    if _flag(row["largest_step"]):
        words.append("largest change")
    if _flag(row["knee"]):
        words.append(f"knee at {row['baseline_phase_name']}")
    no_better = _flag(row["no_better"])
    words.append("no better" if no_better else "better" if no_better is False else "cannot tell")
    return ", ".join(words)


class _Wide:
    def __init__(self, metrics: Sequence[str], rows: list[list[object]]) -> None:
        self.metrics, self.rows = metrics, rows


def _levels_wide(levels: pd.DataFrame) -> _Wide:
    metrics = [m for m in METRIC if m in set(levels["metric"])]
    rows = []
    for (family, phase_name, config_id), part in levels.groupby(["family", "phase_name", "config_id"], sort=False):
        by_metric = {r["metric"]: r for _, r in part.iterrows()}
        rows.append([family, phase_name, config_id,
                     *[fmt_level(by_metric[m]) if m in by_metric else "n/a" for m in metrics],
                     int(part["n"].max())])
    return _Wide(metrics, rows)


def first_sentence(campaign: Campaign, findings: pd.DataFrame | None) -> Raw:
    """The verdict block of a compare / characterise campaign."""
    head, lines = headline(campaign, findings)
    body: list[object] = [tag("p", head, class_="headline")]
    if lines:
        body.append(tag("ul", [tag("li", line) for line in lines]))
    return tag("div", body, class_="verdict")
