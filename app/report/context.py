"""What every section of the report reads, worked out once per report: the campaign (spec), its tables
(tables.ReportData), the run's history (history.RunHistory: its runs row, the comparison with a baseline, the trends
across runs), the configs and their costs, the scenarios of each kind and phase_summary read as the spec's
scenario families (with its median and interval over repeats). Sections receive a ReportContext and number their
figures through it (`fig`), so the figures are numbered in page order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from app.report import charts, repeats
from app.report.history import RunHistory
from app.report.html import Raw, figure
from app.report.tables import ReportData
from sizing.plan import ConfigPlan, plan_configs
from sizing.rules import SEARCH, is_adverse, is_client_settings, is_intensity, scenario_kind
from sizing.spec import Campaign, Scenario, as_family_row, families, family_phases


def as_families(summary: pd.DataFrame, phases: dict[str, tuple[str, int | None]]) -> pd.DataFrame:
    """phase_summary with every isolated run's row as a phase of its family (sizing.spec.as_family_row)."""
    if summary.empty or not any(number is not None for _, number in phases.values()):
        return summary
    return pd.DataFrame([as_family_row(r, phases) for r in summary.to_dict("records")], columns=summary.columns)


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
    family_phases: dict[str, tuple[str, int | None]]  # sizing.spec.family_phases
    summary: pd.DataFrame  # phase_summary, an isolated scenario's runs as the one scenario the spec wrote
    summary_ci: pd.DataFrame  # `summary`'s median and interval over repeats (repeats.summarize_repeats)
    repeats_seen: int
    with_ci: bool  # the tables hold more than one repeat: figures carry intervals
    intensity: list[Scenario]  # increasing-intensity scenario families
    adverse: list[Scenario]  # adverse scenario families
    searches: list[Scenario]  # capacity searches
    client_settings: list[Scenario]  # client-setting scenarios
    per_repeat: pd.DataFrame  # capacity_repeats: the leaderboards step's per-repeat figures, never recomputed
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
        summary_ci = repeats.summarize_repeats(summary)
        repeats_seen = int(summary_ci["n"].max()) if not summary_ci.empty else 0
        written = families(campaign.scenarios)
        return cls(campaign, data, run_id, generated_at, history or RunHistory(), configs, config_ids, monthly,
                   charts.palette(config_ids), phases, summary, summary_ci, repeats_seen, repeats_seen > 1,
                   intensity=[s for s in written if is_intensity(s)],
                   adverse=[s for s in written if is_adverse(s)],
                   searches=[s for s in campaign.scenarios if scenario_kind(s) == SEARCH],
                   client_settings=[s for s in campaign.scenarios if is_client_settings(s)],
                   per_repeat=data.capacity_repeats)

    def fig(self, svg: str, caption: str) -> Raw:
        """The next numbered figure of the page."""
        self.charts += 1
        return figure(svg, f"Fig {self.charts}. {caption}")
