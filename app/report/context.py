"""What every section of the report reads, worked out once per report: the campaign (spec), its tables
(tables.ReportData), the run's history (history.RunHistory: its runs row, the comparison with a baseline, the trends
across runs), the configs and their costs, the scenarios of each kind and phase_summary read as the spec's
scenario families, and the leaderboards step's medians and intervals over repeats (repeat_intervals, reshaped per
phase; never recomputed). Sections receive a ReportContext and number their
figures through it (`fig`), so the figures are numbered in page order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from app.report import charts, repeats
from app.report.history import RunHistory
from app.report.html import Raw, figure
from app.report.tables import ReportData, phase_interval_view, single_repeat_view
from sizing.campaign import Campaign, Scenario, as_family_row, families, family_phases
from sizing.criteria.rules import SEARCH, is_adverse, is_client_settings, is_intensity, scenario_kind
from sizing.planning.plan import ConfigPlan, plan_configs


def as_families(summary: pd.DataFrame, phases: dict[str, tuple[str, int | None]]) -> pd.DataFrame:
    """phase_summary with every isolated run's row as a phase of its family (sizing.campaign.as_family_row)."""
    if summary.empty or not any(number is not None for _, number in phases.values()):
        return summary
    return pd.DataFrame([as_family_row(r, phases) for r in summary.to_dict("records")], columns=summary.columns)


def over_repeats(intervals: pd.DataFrame | None, summary: pd.DataFrame) -> tuple[pd.DataFrame, int, float]:
    """Per phase the figures over repeats (tables.phase_interval_view of repeat_intervals), the most repeats a phase
    has, and the true coverage of an interval over that many (the table's). Without the table (a run analysed
    before it): the phases that ran once as phase_summary holds them, and no interval."""
    if intervals is None:
        seen = summary.groupby(["config_id", "scenario", "phase"])["repeat"].nunique().max() if len(summary) else 0
        return single_repeat_view(summary), int(seen), 0.0
    view = phase_interval_view(intervals)
    seen = int(view["n"].max()) if not view.empty else 0
    levels = intervals.loc[intervals["n"] == seen, "value_level"]
    return view, seen, float(levels.max()) if len(levels) else 0.0


@dataclass
class ReportContext:
    campaign: Campaign
    data: ReportData
    run_id: str
    generated_at: str
    history: RunHistory
    configs: list[ConfigPlan]
    config_ids: list[str]
    monthly: dict[str, float]  # as the leaderboards table holds them (the plan's for configs the table lacks)
    colors: dict[str, Any]  # one chart colour per config
    family_phases: dict[str, tuple[str, int | None]]  # sizing.campaign.family_phases
    summary: pd.DataFrame  # phase_summary, an isolated scenario's runs as the one scenario the spec wrote
    summary_ci: pd.DataFrame  # per phase the median and interval over repeats (tables.phase_interval_view)
    repeats_seen: int
    with_ci: bool  # the tables hold more than one repeat and their intervals: figures carry intervals
    intensity: list[Scenario]  # increasing-intensity scenario families
    adverse: list[Scenario]  # adverse scenario families
    searches: list[Scenario]  # capacity searches
    client_settings: list[Scenario]  # client-setting scenarios
    intervals_missing: bool = False  # the run's tables predate repeat_intervals: no figure over repeats to show
    interval_level: float = 0.0  # the true coverage of an interval over repeats_seen repeats (repeat_intervals')
    charts: int = 0  # figures numbered so far

    @classmethod
    def build(cls, campaign: Campaign, data: ReportData, run_id: str, generated_at: str,
              history: RunHistory | None = None) -> ReportContext:
        configs = plan_configs(campaign)
        config_ids = [c.config_id for c in configs]
        monthly = {c.config_id: c.monthly_cost for c in configs}
        monthly.update(zip(data.leaderboards["config_id"], data.leaderboards["monthly_cost"], strict=True))
        phases = family_phases(campaign.scenarios)
        summary = as_families(data.phase_summary, phases)
        summary_ci, repeats_seen, level = over_repeats(data.repeat_intervals, summary)
        missing = data.repeat_intervals is None
        written = families(campaign.scenarios)
        return cls(campaign, data, run_id, generated_at, history or RunHistory(), configs, config_ids, monthly,
                   charts.palette(config_ids), phases, summary, summary_ci, repeats_seen,
                   repeats_seen > 1 and not missing,
                   intensity=[s for s in written if is_intensity(s)],
                   adverse=[s for s in written if is_adverse(s)],
                   searches=[s for s in campaign.scenarios if scenario_kind(s) == SEARCH],
                   client_settings=[s for s in campaign.scenarios if is_client_settings(s)],
                   intervals_missing=missing, interval_level=level)

    def interval_note(self) -> str:
        """What the brackets mean for this run's repeats (their coverage as the table states it)."""
        return repeats.interval_note(self.repeats_seen, self.interval_level)

    @property
    def without_intervals(self) -> bool:
        """The run has repeats whose figures and intervals the report cannot show: its tables predate them."""
        return self.intervals_missing and self.repeats_seen > 1

    def fig(self, svg: str, caption: str) -> Raw:
        """The next numbered figure of the page."""
        self.charts += 1
        return figure(svg, f"Fig {self.charts}. {caption}")
