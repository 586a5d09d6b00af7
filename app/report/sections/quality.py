"""Data quality: the Great Expectations results of every batch, the phases flagged invalid and the
(config, scenario) pairs without a phase summary."""

from __future__ import annotations

from app.report.context import ReportContext
from app.report.html import table, tag


def render(ctx: ReportContext) -> list[object]:
    out: list[object] = [tag("h2", "Data quality", id="quality")]
    validations = sorted(ctx.data.validations, key=lambda v: (v.config_id, v.batch, v.run_id))
    if validations:
        failed = [v for v in validations if not v.success]
        out.append(tag("p", [tag("span", f"{len(validations) - len(failed)} of {len(validations)} batches passed "
                                         "Great Expectations validation", class_="badge " + ("bad" if failed
                                                                                               else "ok"))]))
        out.append(table(["batch", "config", "run", "status", "expectations met", "failed expectations"], [
            [v.batch, v.config_id, v.run_id, ("passed", "ok") if v.success else ("FAILED", "bad"),
             f"{v.successful}/{v.evaluated}" if v.evaluated is not None else "n/a", ", ".join(v.failed) or "—"]
            for v in validations], numeric=[4]))
    else:
        out.append(tag("p", [tag("span", "no validation results found", class_="badge warn")]))
    summary = ctx.data.phase_summary
    invalid = summary[~summary["valid"].fillna(True).astype(bool)]
    if len(invalid):
        out.append(tag("h3", "Phases flagged invalid"))
        out.append(table(["config", "scenario", "repeat", "phase", "reason"], [
            [r.config_id, r.scenario, int(r.repeat), r.phase_name, r.invalid_reason or "—"]
            for r in invalid.itertuples(index=False)]))
    else:
        out.append(tag("p", "No phase was flagged invalid (the load generator kept up with its schedule).",
                       class_="muted"))
    missing = [c for c in ctx.config_ids if c not in set(summary["config_id"])]
    expected = {(c, s.name) for c in ctx.config_ids for s in ctx.campaign.scenarios}
    seen = set(zip(summary["config_id"], summary["scenario"], strict=True))
    gaps = sorted(expected - seen)
    if missing or gaps:
        out.append(tag("p", [tag("span", "missing data", class_="badge bad"), " no phase summary for: " +
                             ", ".join(f"{c}/{s}" for c, s in gaps)]))
    return out
