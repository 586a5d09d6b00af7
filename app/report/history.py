"""What the report knows of the run's history (issue 24), read once per report: its `runs` row, the comparison with
a baseline run (the argument, else the one its row names) and the headline metrics across every stored run up to it.
Every figure is sizing.judgement.comparison's or sizing.judgement.trends' (the same functions `sizing compare` and
`sizing trend` call), computed from the runs' stored table rows (app.history reads them); nothing here computes one. The
sections that show them: sections.header (the runs row), sections.comparison, sections.trends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sizing.campaign import Campaign
from sizing.judgement.comparison import SUSTAINABLE, TOP_THROUGHPUT, Comparison
from sizing.judgement.trends import Trend


@dataclass
class RunHistory:
    """What the report knows of the run's history: its `runs` row, the comparison with its baseline (or why there
    is none), and the headline metrics' trends over every stored run up to it."""

    record: dict[str, Any] | None = None
    baseline_run: str | None = None
    comparison: Comparison | None = None
    problem: str | None = None  # why the baseline could not be compared
    trends: list[Trend] = field(default_factory=list)


def trend_metrics(campaign: Campaign) -> list[str]:
    """The headline metrics the report follows across runs: the capacity from a search when the campaign has one,
    else the top throughput within the SLO."""
    return [SUSTAINABLE.name] if any(s.search is not None for s in campaign.scenarios) else [TOP_THROUGHPUT.name]


# ------------------------------------------------------------------------------------------ reading (I/O)


def load_history(store, campaign: Campaign, run_id: str, baseline_run: str | None = None) -> RunHistory:
    """The run's `runs` row, its comparison with `baseline_run` (default: the baseline its row names) and the
    headline trends over every stored run that started no later than it."""
    from app.history import run_spec, run_tables, stored_run_records
    from sizing.contract.layout import RunRef
    from sizing.judgement.comparison import compare_runs
    from sizing.judgement.trends import run_order, trend

    records = {r["run_id"]: r for r in stored_run_records(store, campaign.name)}
    record = records.get(run_id)
    history = RunHistory(record=record, baseline_run=baseline_run or (record or {}).get("baseline_run"))
    tables = {r: run_tables(store, RunRef(campaign.name, r), rec) for r, rec in records.items()}
    if history.baseline_run:
        base = records.get(history.baseline_run)
        if base is None:
            history.problem = (f"run {history.baseline_run} has no runs-table row in campaign {campaign.name} "
                               f"(stored runs: {', '.join(records) or 'none'})")
        elif record is None:
            history.problem = f"this run ({run_id}) has no runs-table row"
        else:
            _, base_raw = run_spec(base)
            _, head_raw = run_spec(record)
            history.comparison = compare_runs(campaign, tables[history.baseline_run], tables[run_id],
                                              base_spec=base_raw, head_spec=head_raw)
    upto = run_order(record, run_id)
    earlier = [tables[r] for r, rec in records.items() if run_order(rec, r) <= upto] if record else []
    for metric in trend_metrics(campaign):
        for shape in campaign.clusters:
            try:
                series = trend(campaign, earlier, shape.config_id, metric)
            except ValueError:  # measured in several scenarios: the report shows none rather than guess
                continue
            if series.points:
                history.trends.append(series)
    return history
