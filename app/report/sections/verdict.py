"""The first section: which config to buy (a sizing campaign), as the analysis wrote it in the `recommendation`
table (sizing.judgement.recommendation decides; this section words it); a compare or characterise campaign gets its
answer's first sentences instead (app.report.answer)."""

from __future__ import annotations

import math

from app.report import answer, fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from app.report.sections.resources import bottleneck_verdict, bound_by_answer
from app.report.tables import BOARD_MATCHED_TARGET, BOARD_TOP_MATCHED, ReportData
from sizing.judgement.findings import SIZE
from sizing.judgement.recommendation import ConfigVerdict, recommended_ids, version_changes


def verdicts(data: ReportData) -> list[ConfigVerdict] | None:
    """The analysis' answer as written in the `recommendation` table (sizing.judgement.recommendation decided it there),
    in its standing order; None when the run has no such table (analysed before it existed)."""
    if data.recommendation is None or data.recommendation.empty:
        return None
    return [ConfigVerdict.from_row(row) for row in data.recommendation.to_dict("records")]


def _answer(ctx: ReportContext, rows: list[ConfigVerdict], best: ConfigVerdict | None, prefix: str) -> object:
    """The headline and its reasons for one set of configs (a campaign's, or one RabbitMQ version's)."""
    c = ctx.campaign
    target = f"{c.target.rate:,.0f} msg/s at p99 < {fmt.ms(c.target.p99_latency_ms)}"
    required = [s.name for s in ctx.adverse if s.required]
    optional = [s.name for s in ctx.adverse if not s.required]
    if best is not None:
        headline = (f"{prefix}Recommended: {best.config_id} — {fmt.money(best.cost_at_target)} per 1000 msg/s per "
                    f"month at the {c.target.rate:,.0f} msg/s target ({fmt.money(best.monthly_cost)}/month)")
        others = ", ".join(f"{v.config_id} ({fmt.money(v.cost_at_target)})"
                           for v in [v for v in rows if v.passes_all and v is not best][:4])
        stretch = ("Beyond what is required it " + (f"also fails {', '.join(best.optional_failed)}"
                                                      if best.optional_failed else
                                                      f"also holds {', '.join(optional)}") + "."
                   if optional else "")
        body = [tag("p", headline, class_="headline"),
                tag("p", f"Meets {target} under ideal conditions"
                         + (f" and holds every required adverse scenario ({', '.join(required)})"
                            if required else "") + ", at the lowest cost per 1000 msg/s. " + stretch),
                tag("p", f"Runners-up: {others}.") if others else ""]
        # Cheaper at the target but passed over because a required scenario was not judged: say so, and why.
        skipped = [v for v in rows if v.meets_ideal and not v.adverse_failed and v.adverse_unjudged
                   and (v.target_rank or 0) < (best.target_rank or 0)]
        if skipped:
            body.append(tag("p", "Cheaper at the target but not recommended, a required adverse scenario not "
                                 "judged: " + "; ".join(f"{v.config_id} ({fmt.money(v.cost_at_target)}): "
                                                        f"{v.not_judged_text()}" for v in skipped) + "."))
        return tag("div", body, class_="verdict")
    ideal = [v for v in rows if v.meets_ideal]
    # A config kept out only by scenarios that were not judged is not shown to fail them: nothing is known.
    headline = prefix + ("No config can be recommended: every config that meets the target under ideal conditions "
                         "fails or was not judged in a required adverse scenario."
                         if any(v.adverse_unjudged for v in ideal) else
                         "No config meets the target and SLO in every scenario.")
    detail = ("Best under ideal conditions only: " + ", ".join(
        f"{v.config_id} ({fmt.money(v.cost_at_target)}; " + "; ".join(
            part for part in (f"fails {', '.join(v.adverse_failed)}" if v.adverse_failed else "",
                              f"not judged: {v.not_judged_text()}" if v.adverse_unjudged else "")
            if part) + ")" for v in ideal[:3])
              + ". Consider larger clusters." if ideal else
              f"No config reached {target} even under ideal conditions. Consider larger clusters.")
    return tag("div", [tag("p", headline, class_="headline"), tag("p", detail)], class_="verdict none")


def render(ctx: ReportContext) -> list[object]:
    """The first section answers the campaign's own question: which config to buy (size), what a layout or a
    setting changes (compare), what a setup does (characterise)."""
    c = ctx.campaign
    if c.purpose != SIZE:
        return [tag("h2", "Answer", id="verdict", class_="first"), answer.first_sentence(c, ctx.data.findings),
                *bound_by_answer(ctx)]
    out: list[object] = [tag("h2", "Verdict", id="verdict", class_="first")]
    stored = verdicts(ctx.data)
    if stored is None:
        out.append(tag("div", [tag("p", "This run's tables have no recommendation table (analysed before it "
                                        "existed): re-run its analysis to get the verdict.", class_="headline")],
                       class_="verdict none"))
        return out
    rows = stored
    chosen = set(recommended_ids(ctx.data.recommendation.to_dict("records")))
    versions = list(dict.fromkeys(v.rabbitmq_version for v in rows))
    for version in versions:
        arm = [v for v in rows if v.rabbitmq_version == version]
        best = next((v for v in arm if v.config_id in chosen), None)
        out.append(_answer(ctx, arm, best, f"On RabbitMQ {version}: " if len(versions) > 1 else ""))
    if len(versions) > 1:
        changes = version_changes(rows, chosen)
        out.append(tag("p", "Where the RabbitMQ version changes a conclusion (each version's configs judged by "
                            "the same criteria, on this run's measurements): "
                            + ("; ".join(change.words() for change in changes) if changes else
                               "nowhere: every shape gets the same answers on every version") + "."))
    required = [s.name for s in ctx.adverse if s.required]
    optional = [s.name for s in ctx.adverse if not s.required]
    lb = ctx.data.leaderboards
    top = {b: dict(zip(lb.loc[lb["board"] == b, "config_id"], lb.loc[lb["board"] == b, "value"], strict=True))
           for b in (BOARD_TOP_MATCHED, BOARD_MATCHED_TARGET)}
    table_rows = []
    for v in rows:
        status = ("recommended", "ok") if v.passes_all else (
            ("fails adverse", "bad") if v.meets_ideal and v.adverse_failed else
            ("adverse not judged", "bad") if v.meets_ideal else ("misses target/SLO", "bad"))
        adverse = "—" if not required else (
            f"{len(v.adverse_passed)}/{len(required)}" + (f" (fails {', '.join(v.adverse_failed)})"
                                                          if v.adverse_failed else "")
            + (f" (not judged: {v.not_judged_text()})" if v.adverse_unjudged else ""))
        if optional:
            adverse += (f"; not required: fails {', '.join(v.optional_failed)}" if v.optional_failed
                        else "; not required: all held")
        table_rows.append([v.config_id, fmt.money(v.monthly_cost),
                           fmt.money(v.cost_at_target) if v.meets_ideal else "—",
                           fmt.rate(top[BOARD_TOP_MATCHED].get(v.config_id, math.nan)),
                           fmt.rate(top[BOARD_MATCHED_TARGET].get(v.config_id, math.nan)),
                           (adverse, "ok" if required and not v.adverse_failed and not v.adverse_unjudged
                            else "bad" if v.adverse_failed or v.adverse_unjudged else ""),
                           (str(v.invalid_phases), "bad" if v.invalid_phases else ""),
                           (status[0], status[1])])
    out.append(table(["config", "cluster $/month", "$/1000 msg/s/mo at target", "top msg/s in SLO",
                      "top target met", "adverse held", "invalid phases", "status"], table_rows,
                     numeric=[1, 2, 3, 4, 6]))
    out.extend(bottleneck_verdict(ctx))
    out.append(tag("p", "Cost per 1000 msg/s per month = cluster monthly cost / (rate / 1000) (seed 000). "
                        "'At target' lists configs the analysis found to match the target rate within the SLO "
                        "under ideal conditions. Each adverse scenario is judged by its study's own criterion "
                        "(see Adverse scenarios): a fault scenario holds when its judged phases matched the target "
                        "and lost nothing; a consumer slowdown or publish peak holds when publishers carried on "
                        "unaffected, nothing was lost and the backlog drained. A phase the load generator fell "
                        "behind in (see Phases flagged invalid) is evidence neither way: a scenario left without a "
                        "valid repeat of a judged phase is not judged, and a config is not recommended on it. A "
                        "scenario marked 'not required' is judged and reported but does not decide the "
                        "recommendation.",
                        class_="note"))
    return out
