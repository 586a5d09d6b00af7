"""The upgrade question (issue 33): a campaign comparing RabbitMQ versions opens with it. Each figure of the `upgrade`
table (sizing.judgement.upgrade: capacity, p99 at the target, drain rate, reduced publishing, memory per stored message,
node restart time) for the baseline version and the other, the change, the direction measured and the direction
published results lead one to expect, side by side. A measurement that contradicts a published result is stated as a
result. Every figure is the table's; this section only writes them. No table rows: no section."""

from __future__ import annotations

import math

import pandas as pd

from app.report import fmt
from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.criteria.stats import PRACTICAL_EFFECT
from sizing.judgement.upgrade import METRIC, METRICS

UNIT_FORMAT = {"msg/s": lambda v: f"{fmt.rate(v)} msg/s", "ms": fmt.ms, "s": fmt.secs,
               "bytes": lambda v: f"{fmt.rate(v)} B"}
HEADER = ["figure", "scenario", "baseline", "this version", "change", "measured", "published results expect",
          "agrees"]


def _value(v: object, unit: str) -> str:
    if v is None or pd.isna(v):
        return "n/a"
    return UNIT_FORMAT.get(unit, lambda x: fmt.num(x, 2))(float(v))  # type: ignore[arg-type]


def _change(v: object) -> str:
    return "n/a" if v is None or pd.isna(v) or not math.isfinite(float(v)) else f"{float(v) * 100:+,.0f}%"  # type: ignore[arg-type]


def _text(v: object) -> str | None:
    return None if v is None or pd.isna(v) else str(v)


def _flag(v: object) -> bool:
    """A bool cell as written (Python's or numpy's); null is false."""
    return v is not None and not pd.isna(v) and bool(v)


def _measured(row: pd.Series) -> tuple[str, str]:
    moved = _text(row["direction"])
    if moved is None:
        return "n/a", ""
    verdict = _text(row["verdict"])
    css = "" if row["better"] is None or pd.isna(row["better"]) else ("ok" if _flag(row["better"]) else "bad")
    return (moved + (f" (over repeats: {verdict})" if verdict else ""), css)


def _agrees(row: pd.Series) -> tuple[str, str]:
    if _text(row["expected"]) is None:
        return "", ""
    if row["agrees"] is None or pd.isna(row["agrees"]):
        return "not measured", "warn"
    return ("yes", "ok") if bool(row["agrees"]) else ("no: contradicts it", "bad")


def render(ctx: ReportContext) -> list[object]:
    rows = ctx.data.upgrade
    if rows is None or rows.empty:
        return []
    compared = rows[rows["baseline_config_id"].notna()]
    baseline = rows[rows["baseline_config_id"].isna()]
    base_version = str(compared["baseline_version"].iloc[0]) if len(compared) else str(
        baseline["rabbitmq_version"].iloc[0])
    others = list(dict.fromkeys(compared["config_id"]))
    versions = {c: str(compared.loc[compared["config_id"] == c, "rabbitmq_version"].iloc[0]) for c in others}
    title = f"Upgrading RabbitMQ {base_version} to {', '.join(versions.values()) or '?'}"
    out: list[object] = [tag("h2", title, id="upgrade", class_="first")]
    with_expectation = compared[compared["expected"].notna()]
    contradicted = with_expectation[with_expectation["agrees"].eq(False)]
    agreed = with_expectation[with_expectation["agrees"].eq(True)]
    headline = (f"Against the published results: {len(agreed)} agree, {len(contradicted)} contradict"
                + (" — " + "; ".join(f"RabbitMQ {r.rabbitmq_version}: {METRIC[r.metric].label} ({r.scenario}) "
                                     f"{r.direction}, published {r.expected}" for r in contradicted.itertuples())
                   if len(contradicted) else "") + ".") if len(with_expectation) else \
        "No figure here has a published expectation to check."
    out.append(tag("div", [tag("p", headline, class_="headline"), tag("p", (
        "Each figure is the median over a config's repeats, measured on this machine: the direction is what "
        "can be checked against the published results, not their magnitude. A direction is the change against "
        f"the practical threshold ({PRACTICAL_EFFECT:.0%}); over repeats, the exact Mann-Whitney verdict "
        "(sizing.criteria.stats), inconclusive with one repeat a side."))],
        class_="verdict" + (" none" if len(contradicted) else "")))
    order = {m.name: i for i, m in enumerate(METRICS)}
    for config in others:
        mine = compared[compared["config_id"] == config].assign(_o=lambda f: f["metric"].map(order))
        body = []
        for r in mine.sort_values(["_o", "scenario"]).to_dict("records"):
            row = pd.Series(r)
            expected = _text(row["expected"])
            value = ("at least " if _flag(row["lower_bound"]) else "") + _value(row["value"], row["unit"])
            body.append([METRIC[row["metric"]].label, row["scenario"], _value(row["baseline_value"], row["unit"]),
                         value, _change(row["change"]), _measured(row),
                         expected or "no published result", _agrees(row)])
        header = [*HEADER[:2], f"RabbitMQ {base_version}", f"RabbitMQ {versions[config]}", *HEADER[4:]]
        out.append(tag("p", f"{config} against the baseline {mine['baseline_config_id'].iloc[0]}:"))
        out.append(table(header, body, numeric=[2, 3, 4]))
    # a figure only the baseline has (the other version measured none) is shown too
    missing = baseline[~baseline.set_index(["metric", "scenario"]).index.isin(
        compared.set_index(["metric", "scenario"]).index)]
    if len(missing):
        out.append(tag("p", "Measured on the baseline only (the other version gave no figure: a backlog that never "
                            "drained, a node that did not come back, a search without a result; the Adverse and "
                            "Capacity search sections say which): " + "; ".join(
            f"{METRIC[r.metric].label} ({r.scenario}) {_value(r.value, r.unit)}" for r in missing.itertuples()),
            class_="note"))
    if rows["lower_bound"].eq(True).any():
        bounded = rows[rows["lower_bound"].eq(True)]
        out.append(tag("p", "A lower bound: " + "; ".join(
            f"RabbitMQ {r.rabbitmq_version}'s {METRIC[r.metric].label} ({r.scenario}) {_value(r.value, r.unit)}"
            for r in bounded.itertuples()) + ". The backlog drained within one second, the resolution of the client "
            "records it is counted in: the broker may have drained it faster, and a direction against it may be "
            "one the records cannot see.", class_="note"))
    sources = list(dict.fromkeys(s for s in compared["expected_source"] if _text(s)))
    if sources:
        out.append(tag("p", "Published results: " + "; ".join(sources) + ".", class_="note"))
    return out
