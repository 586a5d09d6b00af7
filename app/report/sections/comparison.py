"""Compared with a baseline run (issue 24): the section a run that names a baseline opens with, metric by metric,
from the comparison history.load_history made with sizing.judgement.comparison (the same function and table `sizing
compare` prints); what each run ran on, from the runs table. No baseline: no section."""

from __future__ import annotations

from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.criteria.stats import UNCHANGED, level_text
from sizing.judgement.comparison import IMPROVED, REGRESSED, TABLE_HEADER, recommendation_words, table_rows

VERDICT_CSS = {REGRESSED: "bad", IMPROVED: "ok", UNCHANGED: "", "inconclusive": "warn"}


def render(ctx: ReportContext) -> list[object]:
    """First section when the run has a baseline: how it compares, metric by metric."""
    history = ctx.history
    if not history.baseline_run:
        return []
    out: list[object] = [tag("h2", f"Compared with run {history.baseline_run}", id="comparison", class_="first")]
    c = history.comparison
    if c is None:
        return [*out, tag("div", tag("p", f"No comparison: {history.problem}", class_="headline"),
                          class_="verdict none")]
    counts = c.counts()
    regressed = [ch for ch in c.changes if ch.verdict == REGRESSED]
    headline = (f"Regressed: {len(regressed)} figure(s) — " + "; ".join(
        f"{ch.config_id} {ch.label} ({ch.scenario})" for ch in regressed[:4]) if regressed
        else "Nothing regressed against the baseline.")
    out.append(tag("div", [tag("p", headline, class_="headline"), tag("p", (
        f"{counts[IMPROVED]} improved, {counts[REGRESSED]} regressed, {counts[UNCHANGED]} unchanged, "
        f"{counts['inconclusive']} inconclusive. A change is called when its exact Mann-Whitney interval reaches "
        f"{level_text(c.confidence)} and the estimate is at least {c.threshold:.0%} (sizing.criteria.stats); three "
        "repeats a side reach 90 % and no more, fewer are inconclusive by construction. `sizing compare --campaign "
        f"{c.campaign} --base {c.base_run} --head {c.head_run}` prints the same table."))],
        class_="verdict" + (" none" if regressed else "")))
    if c.base_recommended or c.head_recommended:
        out.append(tag("p", f"Recommended (each run's recommendation table): {recommendation_words(c)}.",
                       class_="headline" if c.recommendation_changed else None))
    if c.spec_differences:
        out += [tag("p", f"The two runs ran different specs ({len(c.spec_differences)} difference(s), base -> "
                         "this run):"), tag("ul", [tag("li", line) for line in c.spec_differences[:30]])]
    fields = [("status", "status"), ("RabbitMQ", "rabbitmq_version"), ("Erlang", "erlang_version"),
              ("pika", "pika_version"), ("Spark", "spark_version"), ("spec", "spec_hash"), ("code", "code_commit"),
              ("instance types", "instance_types")]
    out.append(table(["", f"base {c.base_run}", f"this run {c.head_run}"],
                     [[label, str((c.base_record or {}).get(key) or "?"), str((c.head_record or {}).get(key) or "?")]
                      for label, key in fields]))
    rows = [[*row[:-1], (row[-1], VERDICT_CSS.get(row[-1], ""))] for row in table_rows(c)]
    out.append(table(TABLE_HEADER, rows, numeric=[3, 4]))
    notes = [f"{ch.config_id} / {ch.label}: {ch.note}" for ch in c.changes if ch.note and ch.verdict != UNCHANGED]
    if notes:
        out.append(tag("p", "Notes: " + "; ".join(notes[:12]), class_="note"))
    if c.only_in_base or c.only_in_head:
        out.append(tag("p", "Measured in one run only (not compared): " + "; ".join(
            [f"base: {x}" for x in c.only_in_base] + [f"this run: {x}" for x in c.only_in_head]), class_="note"))
    return out
