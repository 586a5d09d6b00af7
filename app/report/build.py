"""Assemble the campaign report: verdict, intensity charts, leaderboards, adverse scenarios, broker
metrics, data quality. `render_report` is pure (data in, HTML out); `build_report` does the I/O."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from adapters.objectstore import S3Settings
from app.report import answer, charts, repeats
from app.report.history import RunHistory, comparison_section, load_history, record_line, trend_section
from app.report.html import Raw, esc, figure, page, table, tag
from app.report.tables import (
    BOARD_COST_AT_TARGET,
    BOARD_COST_AT_TOP,
    BOARD_MATCHED_TARGET,
    BOARD_TOP_MATCHED,
    BOARDS,
    ReportData,
    load_report_data,
)
from sizing import layout
from sizing.cost import cost_per_1000_msgs
from sizing.disks import VOLUME_ROLES, placement, volume_label
from sizing.findings import SIZE
from sizing.plan import plan_configs
from sizing.rules import BACKLOG_ADVERSE, SEARCH, is_adverse, is_client_settings, is_intensity, scenario_kind
from sizing.spec import (
    Campaign,
    Scenario,
    WorkloadGroup,
    as_family_row,
    families,
    family_phases,
    load_campaign,
)
from sizing.stats import level_text

MAX_GROUP = 7  # configs per latency chart (the seed splits 7 clusters into 4 + 3 for readability)
MAX_BROKER_CHARTS = 24
MAX_ADVERSE_PANELS = 8  # configs per adverse chart (two columns of four)
LATENCY_LOW = ["e2e_p50_ms", "e2e_p75_ms"]
LATENCY_HIGH = ["e2e_p95_ms", "e2e_p99_ms", "e2e_p999_ms"]


def _rate(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.0f}"


def _money(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"${v:,.0f}"


def _ms(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v / 1000:,.2f} s" if v >= 1000 else f"{v:,.1f} ms"


def _int(v: object) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{int(v):,}"


def _secs(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:,.1f} s"


def _dip(ratio: float) -> str:
    """The adverse table's worst dip: the lowest 5 s mean after a fault over the pre-fault rate. At or above
    the pre-fault rate (a catch-up burst, or a fault that never dented throughput) there was no dip."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    return "no dip" if ratio >= 1.0 else f"{ratio:.0%} of pre-fault rate"


def _ci(row: pd.Series, metric: str, fmt: str, with_ci: bool) -> str:
    n = int(row.get("n", 1)) if with_ci else 1
    return repeats.format_interval(row.get(metric, math.nan), row.get(f"{metric}_low", math.nan),
                                   row.get(f"{metric}_high", math.nan), n, fmt)


def _all_true(values: pd.Series) -> bool | None:
    known = values.dropna()
    return None if known.empty else bool(known.astype(bool).all())


# ------------------------------------------------------------------------------------------ verdict


@dataclass(frozen=True)
class ConfigVerdict:
    config_id: str
    monthly_cost: float
    cost_at_target: float | None  # None: did not meet target + SLO under ideal conditions
    target_rank: int | None
    adverse_passed: list[str]
    adverse_failed: list[str]
    invalid_phases: int
    adverse_unjudged: tuple[str, ...] = ()  # adverse scenarios the `adverse` table has no row for
    optional_failed: tuple[str, ...] = ()  # adverse scenarios with `required: false` it did not hold (reported only)

    @property
    def meets_ideal(self) -> bool:
        return self.cost_at_target is not None

    @property
    def passes_all(self) -> bool:
        """Meets the target under ideal conditions and holds every adverse scenario, each judged."""
        return self.meets_ideal and not self.adverse_failed and not self.adverse_unjudged


def verdicts(campaign: Campaign, data: ReportData, monthly: dict[str, float]) -> list[ConfigVerdict]:
    """Per config: its place on the cost-at-target board and its adverse scenarios as the `adverse` table judged
    them (sizing.adverse: each by its own criterion); a scenario without a row is "not judged", never a guess.
    Ordered by cost at target (configs off the board last, by monthly cost)."""
    board = data.leaderboards[data.leaderboards["board"] == BOARD_COST_AT_TARGET].sort_values("rank")
    on_board = {row.config_id: row for row in board.itertuples(index=False)}
    held = {}
    if data.adverse is not None:
        held = {(r.config_id, r.scenario): bool(r.held) for r in data.adverse.itertuples(index=False)
                if r.held is not None and not pd.isna(r.held)}
    written = families(campaign.scenarios)  # an isolated scenario's runs are judged as the one scenario
    adverse = [s.name for s in written if is_adverse(s) and s.required]
    optional = [s.name for s in written if is_adverse(s) and not s.required]
    summary = data.phase_summary
    out = []
    for config_id in monthly:
        rows = summary[summary["config_id"] == config_id]
        passed = [name for name in adverse if held.get((config_id, name)) is True]
        failed = [name for name in adverse if held.get((config_id, name)) is False]
        unjudged = tuple(name for name in adverse if (config_id, name) not in held)
        optional_failed = tuple(name for name in optional if held.get((config_id, name)) is not True)
        entry = on_board.get(config_id)
        cost = float(entry.value) if entry is not None else None
        invalid = int((~rows["valid"].fillna(True).astype(bool)).sum())
        out.append(ConfigVerdict(config_id, monthly[config_id], cost, int(entry.rank) if entry is not None else None,
                                 passed, failed, invalid, unjudged, optional_failed))
    return sorted(out, key=lambda v: (v.target_rank is None, v.target_rank or 0, v.monthly_cost))


# ------------------------------------------------------------------------------------------ sections


class Report:
    def __init__(self, campaign: Campaign, data: ReportData, run_id: str, generated_at: str,
                 history: RunHistory | None = None) -> None:
        self.campaign, self.data, self.run_id, self.generated_at = campaign, data, run_id, generated_at
        self.history = history or RunHistory()
        self.configs = plan_configs(campaign)
        self.config_ids = [c.config_id for c in self.configs]
        # Monthly costs as the leaderboards table holds them (the plan's for configs the table lacks).
        self.monthly = {c.config_id: c.monthly_cost for c in self.configs}
        self.monthly.update(zip(data.leaderboards["config_id"], data.leaderboards["monthly_cost"], strict=True))
        self.colors = charts.palette(self.config_ids)
        # An isolated scenario's runs (one per rate or step) read as the one scenario the spec wrote.
        self.family_phases = family_phases(campaign.scenarios)
        self.summary = as_families(data.phase_summary, self.family_phases)
        self.summary_ci = repeats.summarize_repeats(self.summary)
        self.repeats_seen = int(self.summary_ci["n"].max()) if not self.summary_ci.empty else 0
        self.with_ci = self.repeats_seen > 1
        self.intensity = [s for s in families(campaign.scenarios) if is_intensity(s)]
        self.adverse = [s for s in families(campaign.scenarios) if is_adverse(s)]
        self.searches = [s for s in campaign.scenarios if scenario_kind(s) == SEARCH]
        self.client_settings = [s for s in campaign.scenarios if is_client_settings(s)]
        self.per_repeat = data.capacity_repeats  # the leaderboards step's per-repeat figures, never recomputed
        self.charts = 0

    def fig(self, svg: str, caption: str) -> Raw:
        self.charts += 1
        return figure(svg, f"Fig {self.charts}. {caption}")

    # -- header
    def header(self) -> list[object]:
        c = self.campaign
        scenarios = ", ".join(s.name for s in c.scenarios)
        toc = [tag("a", t, href=f"#{i}") for i, t in [("verdict", "Verdict"), ("intensity", "Increasing intensity"),
                                                      ("leaderboards", "Leaderboards"), ("adverse", "Adverse"),
                                                      ("broker", "Broker metrics"), ("resources", "Node resources"),
                                                      ("quality", "Data quality")]]
        runs = sorted(self.data.phase_summary["run_id"].astype(str).unique())
        return [Raw('<header class="top">'), tag("h1", f"RabbitMQ sizing report: {c.name}"),
                tag("p", c.description, class_="meta") if c.description else "",
                tag("p", f"Campaign run {self.run_id} · data from run(s) {', '.join(runs)} · generated "
                         f"{self.generated_at} · spec {c.spec_hash} · catalog {c.catalog_name}", class_="meta"),
                tag("p", record_line(self.history.record), class_="meta"),
                tag("p", f"Target {c.target.rate:,.0f} msg/s with end-to-end p99 < {_ms(c.target.p99_latency_ms)} · "
                         f"{len(self.configs)} configs · scenarios: {scenarios} · repeats: {c.repeats}"
                         + (f" (tables hold up to {self.repeats_seen})" if self.repeats_seen != c.repeats else "")
                         + " · "
                         f"{c.workload.queues.count} {c.workload.queues.type} queues, "
                         f"{c.workload.publishers.count} publishers, {c.workload.consumers.count} consumers, "
                         f"{c.workload.message.size_bytes} B messages", class_="meta"),
                tag("nav", toc, class_="toc"), Raw("</header>")]

    # -- verdict
    def verdict(self) -> list[object]:
        """The first section answers the campaign's own question: which config to buy (size), what a layout or a
        setting changes (compare), what a setup does (characterise)."""
        c = self.campaign
        if c.purpose != SIZE:
            return [tag("h2", "Answer", id="verdict", class_="first"), answer.first_sentence(c, self.data.findings)]
        rows = verdicts(c, self.data, self.monthly)
        recommended = [v for v in rows if v.passes_all]
        out: list[object] = [tag("h2", "Verdict", id="verdict", class_="first")]
        target = f"{c.target.rate:,.0f} msg/s at p99 < {_ms(c.target.p99_latency_ms)}"
        required = [s.name for s in self.adverse if s.required]
        optional = [s.name for s in self.adverse if not s.required]
        if recommended:
            best = recommended[0]
            headline = (f"Recommended: {best.config_id} — {_money(best.cost_at_target)} per 1000 msg/s per month "
                        f"at the {c.target.rate:,.0f} msg/s target ({_money(best.monthly_cost)}/month)")
            others = ", ".join(f"{v.config_id} ({_money(v.cost_at_target)})" for v in recommended[1:5])
            stretch = ("Beyond what is required it " + (f"also fails {', '.join(best.optional_failed)}"
                                                          if best.optional_failed else
                                                          f"also holds {', '.join(optional)}") + "."
                       if optional else "")
            body = [tag("p", headline, class_="headline"),
                    tag("p", f"Meets {target} under ideal conditions"
                             + (f" and holds every required adverse scenario ({', '.join(required)})"
                                if required else "") + ", at the lowest cost per 1000 msg/s. " + stretch),
                    tag("p", f"Runners-up: {others}.") if others else ""]
            out.append(tag("div", body, class_="verdict"))
        else:
            ideal = [v for v in rows if v.meets_ideal]
            headline = "No config meets the target and SLO in every scenario."
            detail = ("Best under ideal conditions only: " + ", ".join(
                f"{v.config_id} ({_money(v.cost_at_target)}; " + "; ".join(
                    part for part in (f"fails {', '.join(v.adverse_failed)}" if v.adverse_failed else "",
                                      f"not judged: {', '.join(v.adverse_unjudged)}" if v.adverse_unjudged else "")
                    if part) + ")" for v in ideal[:3])
                      + ". Consider larger clusters." if ideal else
                      f"No config reached {target} even under ideal conditions. Consider larger clusters.")
            out.append(tag("div", [tag("p", headline, class_="headline"), tag("p", detail)], class_="verdict none"))
        lb = self.data.leaderboards
        top = {b: dict(zip(lb.loc[lb["board"] == b, "config_id"], lb.loc[lb["board"] == b, "value"], strict=True))
               for b in (BOARD_TOP_MATCHED, BOARD_MATCHED_TARGET)}
        table_rows = []
        for v in rows:
            status = ("recommended", "ok") if v.passes_all else (
                ("fails adverse", "bad") if v.meets_ideal else ("misses target/SLO", "bad"))
            adverse = "—" if not required else (
                f"{len(v.adverse_passed)}/{len(required)}" + (f" (fails {', '.join(v.adverse_failed)})"
                                                              if v.adverse_failed else "")
                + (f" (not judged: {', '.join(v.adverse_unjudged)})" if v.adverse_unjudged else ""))
            if optional:
                adverse += (f"; not required: fails {', '.join(v.optional_failed)}" if v.optional_failed
                            else "; not required: all held")
            table_rows.append([v.config_id, _money(v.monthly_cost), _money(v.cost_at_target) if v.meets_ideal else "—",
                               _rate(top[BOARD_TOP_MATCHED].get(v.config_id, math.nan)),
                               _rate(top[BOARD_MATCHED_TARGET].get(v.config_id, math.nan)),
                               (adverse, "ok" if required and not v.adverse_failed and not v.adverse_unjudged
                                else "bad" if v.adverse_failed or v.adverse_unjudged else ""),
                               (str(v.invalid_phases), "bad" if v.invalid_phases else ""),
                               (status[0], status[1])])
        out.append(table(["config", "cluster $/month", "$/1000 msg/s/mo at target", "top msg/s in SLO",
                          "top target met", "adverse held", "invalid phases", "status"], table_rows,
                         numeric=[1, 2, 3, 4, 6]))
        out.extend(self.bottleneck_verdict())
        out.append(tag("p", "Cost per 1000 msg/s per month = cluster monthly cost / (rate / 1000) (seed 000). "
                            "'At target' lists configs the analysis found to match the target rate within the SLO "
                            "under ideal conditions. Each adverse scenario is judged by its study's own criterion "
                            "(see Adverse scenarios): a fault scenario holds when its judged phases matched the target "
                            "and lost nothing; a consumer slowdown or publish peak holds when publishers carried on "
                            "unaffected, nothing was lost and the backlog drained. A scenario marked 'not required' "
                            "is judged and reported but does not decide the recommendation.", class_="note"))
        return out

    # -- increasing intensity
    def groups(self, config_ids: list[str]) -> list[list[str]]:
        if len(config_ids) <= MAX_GROUP:
            return [config_ids]
        by_volume: dict[str, list[str]] = {}
        for plan in self.configs:
            if plan.config_id in config_ids:
                by_volume.setdefault(plan.shape.volume.type, []).append(plan.config_id)
        groups = []
        for ids in by_volume.values():
            groups.extend(ids[i:i + MAX_GROUP] for i in range(0, len(ids), MAX_GROUP))
        return groups

    def intensity_section(self) -> list[object]:
        out: list[object] = [tag("h2", "Increasing intensity (ideal conditions)", id="intensity")]
        if not self.intensity:
            return [*out, tag("p", "This campaign has no increasing-intensity scenario.", class_="muted")]
        ci_note = " " + repeats.interval_note(self.repeats_seen) if self.with_ci else ""
        slo = self.campaign.target.p99_latency_ms
        for scenario in self.intensity:
            rows = self.summary_ci[self.summary_ci["scenario"] == scenario.name]
            out.append(tag("h3", f"Scenario {scenario.name}"))
            if scenario.description:
                out.append(tag("p", scenario.description, class_="muted"))
            present = [c for c in self.config_ids if c in set(rows["config_id"])]
            for group in self.groups(present):
                label = f" ({group[0]} … {group[-1]})" if len(present) > len(group) else ""
                out.append(self.fig(charts.intensity_throughput(
                    rows, group, self.colors, self.campaign.target.rate,
                    f"{scenario.name}: achieved vs target publish rate{label}", self.with_ci),
                    "Achieved (confirmed) publish rate per intensity step, one line and marker per config "
                    "(points shifted slightly sideways so that equal rates stay visible); the dashed diagonal is a "
                    "perfect match." + ci_note))
            out.append(self.intensity_table(rows, present))
            for group in self.groups(present):
                label = f" ({group[0]} … {group[-1]})" if len(present) > len(group) else ""
                out.append(self.fig(charts.latency_panels(rows, group, self.colors, LATENCY_LOW, None,
                                                          f"{scenario.name}: p50 and p75 end-to-end latency{label}",
                                                          self.with_ci),
                                    "End-to-end latency (intended send time to delivery) per intensity." + ci_note))
                out.append(self.fig(charts.latency_panels(
                    rows, group, self.colors, LATENCY_HIGH, slo,
                    f"{scenario.name}: p95, p99 and p99.9 end-to-end latency{label}", self.with_ci),
                    f"Tail latency per intensity; the dotted line is the p99 SLO ({_ms(slo)})." + ci_note))
        return out

    def intensity_table(self, rows: pd.DataFrame, config_ids: list[str]) -> Raw:
        steps = sorted(rows["target_rate"].unique())
        body = []
        raw = self.summary
        for config_id in config_ids:
            cells: list[object] = [config_id]
            for step in steps:
                row = rows[(rows["config_id"] == config_id) & (rows["target_rate"] == step)]
                if row.empty:
                    cells.append("—")
                    continue
                r = row.iloc[0]
                src = raw[(raw["config_id"] == config_id) & (raw["scenario"] == r["scenario"]) &
                          (raw["phase"] == r["phase"])]
                matched = _all_true(src["matched_target"])
                css = "badbg" if r.get("valid") is False else (
                    "okbg" if matched else "warnbg" if matched is False else "")
                cells.append((Raw(f"{esc(_ci(r, 'confirm_rate', '{:,.0f}', self.with_ci))}<br>"
                                  f"<span class=muted>p99 {esc(_ms(r['e2e_p99_ms']))}</span>"), css))
            body.append(cells)
        headers = ["config \\ target msg/s", *[f"{s:,.0f}" for s in steps]]
        return Raw(str(table(headers, body, numeric=list(range(1, len(steps) + 1))))
                   + str(tag("p", "Achieved publish rate, msg/s (with p99 latency) per intensity step. Green: "
                                  "matched the target rate within the SLO; amber: missed the rate or the SLO; red: "
                                  "phase flagged invalid." + (" " + repeats.interval_note(self.repeats_seen)
                                                              if self.with_ci else ""), class_="note")))

    # -- leaderboards
    def board_values(self, board: str) -> dict[str, list[float]]:
        """Each config's per-repeat figures of a board (capacity_repeats, as the leaderboards step wrote them)."""
        if not self.with_ci or self.per_repeat.empty:
            return {}
        per_repeat = self.per_repeat
        if board == BOARD_TOP_MATCHED:
            return repeats.config_values(per_repeat, "top_matched_throughput")
        if board == BOARD_MATCHED_TARGET:
            return repeats.config_values(per_repeat, "max_matched_target_rate")
        if board == BOARD_COST_AT_TOP:
            return repeats.config_values(per_repeat, "top_matched_throughput", transform=lambda c, v: [
                cost_per_1000_msgs(self.monthly[c], x) for x in v if x > 0])
        return {}  # cost at target is cost / target: no trial-to-trial spread

    def leaderboards_section(self) -> list[object]:
        titles = {BOARD_TOP_MATCHED: ("Top throughput within the SLO", "msg/s", False),
                  BOARD_MATCHED_TARGET: ("Highest intensity matched", "target rate matched, msg/s", False),
                  BOARD_COST_AT_TOP: ("Cost per 1000 msg/s per month at top throughput", "USD per month", True),
                  BOARD_COST_AT_TARGET: (f"Cost per 1000 msg/s per month at the {self.campaign.target.rate:,.0f} "
                                         "msg/s target", "USD per month", True)}
        out: list[object] = [tag("h2", "Leaderboards", id="leaderboards")]
        boards = []
        lb = self.data.leaderboards
        for board in BOARDS:
            rows = lb[lb["board"] == board].sort_values("rank")
            title, unit, money = titles[board]
            if rows.empty:
                boards.append(tag("div", [tag("h3", title), tag("p", "no entries", class_="muted")], class_="board"))
                continue
            value = "value"
            values = self.board_values(board)
            intervals = repeats.config_intervals(values)
            notes = {n.config_id: n.text() for n in repeats.annotate_adjacent(list(rows["config_id"]), values)}
            body = []
            for r in rows.itertuples(index=False):
                interval = intervals.get(r.config_id)
                shown = _money(getattr(r, value)) if money else _rate(getattr(r, value))
                if interval is not None and interval.has_interval:
                    fmt = _money if money else _rate
                    shown += f" [{fmt(interval.low)},\u00a0{fmt(interval.high)}]"
                extra = f" ({_rate(r.rate)} msg/s)" if money else ""
                note = notes.get(r.config_id, "")
                body.append([int(r.rank), r.config_id, shown + extra, (note, "muted" if note.startswith("ahead") else
                                                                       "warn")])
            low = [intervals[c].low if c in intervals else math.nan for c in rows["config_id"]] if intervals else None
            high = [intervals[c].high if c in intervals else math.nan for c in rows["config_id"]] if intervals else None
            svg = charts.leaderboard_bars(rows, value, self.colors, title, unit, money, low, high)
            headers = ["#", "config", unit, "vs next" if intervals else ""]
            boards.append(tag("div", [tag("h3", title), self.fig(svg, f"Leaderboard: {title}."),
                                      table(headers, body, numeric=[0, 2])], class_="board"))
        out.append(tag("div", boards, class_="boards"))
        if self.with_ci:
            out.append(tag("p", repeats.interval_note(self.repeats_seen) + " 'vs next' compares each config's "
                                "repeats with the next one's (exact Mann-Whitney interval of the relative difference, "
                                "90 %): 'not distinguishable' means their order may be noise, 'too few repeats' that "
                                "the repeats cannot give an interval of that level.", class_="note"))
        if self.data.pareto is not None and not self.data.pareto.empty:
            out += [tag("h3", "Pareto front (cost vs capacity)"), self.pareto_table(self.data.pareto)]
        return out

    @staticmethod
    def pareto_table(pareto: pd.DataFrame) -> Raw:
        """The configs no other config beats on both cost and capacity, cheapest first, formatted like the boards."""
        body = [[r.config_id, r.queue_type, _money(r.monthly_cost), _rate(r.top_matched_throughput),
                 _money(r.cost_per_1k_at_top)]
                for r in pareto.sort_values(["monthly_cost", "config_id"]).itertuples(index=False)]
        return Raw(str(table(["config", "queue type", "cluster $/month", "top msg/s in SLO",
                              "$/1000 msg/s/mo at top"], body, numeric=[2, 3, 4]))
                   + str(tag("p", "No other config is both cheaper per month and carries more within the SLO.",
                             class_="note")))

    # -- volumes at the target (seed 000 Figs 26-31)
    def volumes_section(self) -> list[object]:
        """One cluster shape (the top of the throughput board) on each volume type at the campaign target: its
        phase_summary figures side by side, and its end-to-end percentiles second by second."""
        if not self.data.at_target:
            return []
        ids = list(self.data.at_target)
        volumes = {p.config_id: volume_label(p.shape.volume) for p in self.configs}
        target = self.campaign.target.rate
        out: list[object] = [tag("h2", "Volume types at the target", id="volumes")]
        rows = self.summary[self.summary["config_id"].isin(ids) & (self.summary["target_rate"] == target)
                            & self.summary["scenario"].isin([s.name for s in self.intensity])]
        body = []
        for config_id in ids:
            mine = rows[rows["config_id"] == config_id].sort_values("repeat")
            if mine.empty:
                continue
            r = mine.iloc[0]
            body.append([config_id, volumes.get(config_id, ""), _rate(r["confirm_rate"]),
                         *[_ms(r[f"e2e_{q}_ms"]) for q in ("p50", "p75", "p95", "p99", "p999")]])
        out.append(table(["config", "volume", "publish rate", "p50", "p75", "p95", "p99", "p99.9"], body,
                         numeric=[2, 3, 4, 5, 6, 7]))
        title = f"End-to-end latency per second at {_rate(target)} msg/s, one cluster on each volume type"
        out.append(self.fig(charts.latency_seconds_by_volume(self.data.at_target, volumes, self.colors, title),
                            f"{title} (seed 000 Figs 26-31): p50 and p75 (left), p95, p99 and p99.9 (right) of each "
                            "second, all workers' histograms of that second merged; the table gives the phase's own "
                            "percentiles (phase_summary, first repeat)."))
        return out

    # -- client settings (issue 13)
    def client_settings_section(self) -> list[object]:
        """Per step of a client-setting scenario: the setting's value, the achieved rates and the latency
        percentiles with their basis (`sent` for max mode: measured from the actual send time, not a schedule)."""
        if not self.client_settings:
            return []
        out: list[object] = [tag("h2", "Client settings", id="client-settings")]
        summary = self.data.phase_summary
        for scenario in self.client_settings:
            out.append(tag("h3", f"Scenario {scenario.name}"))
            if scenario.description:
                out.append(tag("p", scenario.description, class_="muted"))
            rows = summary[summary["scenario"] == scenario.name].sort_values(["config_id", "phase"])
            body = []
            for r in rows.itertuples(index=False):
                basis = getattr(r, "latency_basis", None) or "intended"
                mode = getattr(r, "rate_mode", None) or "scheduled"
                body.append([r.config_id, r.phase_name, "max" if mode == "max" else _rate(r.target_rate),
                             f"{r.confirm_rate:,.0f}", f"{r.consume_rate:,.0f}", _ms(r.e2e_p50_ms),
                             _ms(r.e2e_p95_ms), _ms(r.e2e_p99_ms), basis,
                             ("yes", "ok") if r.valid else ("no", "bad")])
            out.append(table(["config", "step", "rate", "confirm rate", "consume rate", "p50", "p95", "p99",
                              "latency from", "generator kept up"], body, numeric=[3, 4, 5, 6, 7]))
            for (cid, name, run_id), client in sorted(self.data.client_seconds.items()):
                if name != scenario.name or client is None or client.empty:
                    continue
                first = client["repeat"].min()
                phases = rows[(rows["config_id"] == cid) & (rows["run_id"] == run_id) & (rows["repeat"] == first)]
                steps = [(float(r.start_s), str(r.phase_name)) for r in phases.itertuples(index=False)
                         if hasattr(r, "start_s")]
                title = f"{scenario.name} on {cid}"
                basis = "/".join(sorted(set(phases["latency_basis"].dropna().astype(str)))) or "intended"
                windows = phases if {"start_s", "warmup_s", "duration_s"} <= set(phases.columns) else None
                out.append(self.fig(charts.settings_timeseries(_repeat(client, first), steps, title, windows, basis),
                                    f"{title} (run {run_id}, repeat {first}): confirmed and consumed rate per "
                                    "second; dotted lines mark the step boundaries and their setting. Below: "
                                    f"each step's e2e p50/p95/p99 (phase_summary, from the {basis} time) and the "
                                    "worst latency of each second."))
        out.extend(self.settings_by_queue_type())
        out.append(tag("p", "Latency from `sent`: max mode (closed loop) has no intended send time, so end-to-end "
                            "latency is measured from the actual send; `intended`: from the open-loop schedule.",
                       class_="note"))
        return out

    def settings_by_queue_type(self) -> list[object]:
        """Seed 003's per-step charts: per varied setting, every scenario that steps it (quorum and mirrored)
        as one line on shared axes, its figures as phase_summary holds them (mean over repeats)."""
        out: list[object] = []
        for setting, group in settings_step_points(self.client_settings, self.data.phase_summary,
                                                   len(self.config_ids) > 1).items():
            title = f"{setting} per step, one line per queue type"
            caption = (f"{title}: achieved confirm and consume rate (top) and end-to-end p50/p95/p99 latency "
                       f"measured from the {group.basis} time (bottom), as phase_summary holds them; the x axis "
                       f"marks each step's value.")
            out.append(self.fig(charts.settings_steps_by_queue_type(group.points, group.step_labels, setting,
                                                                    group.basis, title), caption))
        return out

    # -- capacity search (issue 16)
    def search_section(self) -> list[object]:
        """Per search: the capacity table's answer per config and repeat, the search as it ran and the rate-vs-p99
        curve with the knee. Figures come from the capacity table and phase_summary's probe rows, never recomputed."""
        if not self.searches:
            return []
        out: list[object] = [tag("h2", "Capacity search", id="search")]
        capacity = self.data.capacity if self.data.capacity is not None else pd.DataFrame()
        summary = self.data.phase_summary
        for scenario in self.searches:
            spec = scenario.search
            assert spec is not None
            out.append(tag("h3", f"Scenario {scenario.name}"))
            out.append(tag("p", f"Ladder from {_rate(spec.start_rate)} msg/s (x{spec.growth:g}, at most "
                                f"{_rate(spec.upper_rate)}), then bisection to "
                                + (f"{spec.resolution:.0%}" if spec.resolution_relative else
                                   f"{_rate(spec.resolution)} msg/s")
                                + f"; each probe {spec.warmup_s:g} s warm-up + {spec.measure_s:g} s measured; SLO p99 "
                                  f"{_ms(spec.slo_p99_ms)}; at most {spec.worst_case_probes()} probes.",
                           class_="muted"))
            rows = capacity[capacity["scenario"] == scenario.name] if not capacity.empty else capacity
            if rows.empty:
                out.append(tag("p", "No capacity table rows for this search yet.", class_="muted"))
                continue
            body = []
            for r in rows.sort_values(["config_id", "run_id", "repeat"]).itertuples(index=False):
                interval = (f"{_rate(r.sustainable_median)} (n = {int(r.repeats)}, no interval)"
                            if pd.isna(r.sustainable_ci_low) else
                            f"{_rate(r.sustainable_median)} [{_rate(r.sustainable_ci_low)}, "
                            f"{_rate(r.sustainable_ci_high)}] ({level_text(r.sustainable_ci_level)}, "
                            f"n = {int(r.repeats)})")
                body.append([r.config_id, f"{r.run_id} #{int(r.repeat)}", r.status, _rate(r.sustainable_rate),
                             f"{_rate(r.last_pass)} .. {_rate(r.first_fail)}",
                             f"{int(r.probes_used)} / {int(r.worst_case_probes)}"
                             + (f" (+{int(r.inconclusive_attempts)} re-run)" if r.inconclusive_attempts else ""),
                             _ms(r.p99_at_sustainable_ms),
                             r.bottleneck_at_sustainable or "n/a", interval,
                             ("yes", "ok") if r.verdicts_agree else ("no", "bad")])
            out.append(table(["config", "run", "status", "sustainable msg/s", "bracket", "probes / worst case",
                              "p99 there", "bottleneck there", "median [interval, coverage] over repeats",
                              "online = recomputed"], body, numeric=[3, 5, 6]))
            for r in rows.sort_values(["config_id", "run_id", "repeat"]).itertuples(index=False):
                probes = summary[(summary["config_id"] == r.config_id) & (summary["scenario"] == scenario.name)
                                 & (summary["run_id"] == r.run_id) & (summary["repeat"] == r.repeat)]
                if probes.empty:
                    continue
                name = f"{scenario.name} on {r.config_id} (run {r.run_id}, repeat {int(r.repeat)})"
                out.append(self.fig(charts.search_progress(probes, f"Search {name}"),
                                    f"Search {name}: each probe's rate when it started (o pass, x fail; letter: "
                                    "ladder / bisect / confirm) and the bracket held after it narrowing to "
                                    f"{_rate(r.last_pass)} .. {_rate(r.first_fail)} msg/s."))
                bracket = (float(r.last_pass), float(r.first_fail)) if not (
                    pd.isna(r.last_pass) or pd.isna(r.first_fail)) else None
                knee = None if pd.isna(r.sustainable_rate) else float(r.sustainable_rate)
                out.append(self.fig(charts.rate_vs_p99(probes, spec.slo_p99_ms, knee, bracket, f"p99 vs rate {name}"),
                                    f"End-to-end p99 against probe rate, {name}: the knee is the sustainable rate "
                                    f"{_rate(knee)} msg/s (capacity table)."))
        return out

    # -- adverse
    def adverse_section(self) -> list[object]:
        out: list[object] = [tag("h2", "Adverse scenarios", id="adverse")]
        if not self.adverse:
            return [*out, tag("p", "This campaign has no adverse scenario.", class_="muted")]
        for scenario in self.adverse:
            out.append(tag("h3", f"Scenario {scenario.name}"))
            faults = ", ".join(f"{f.kind}" + (f" (heal after {f.heal_after_s:g} s)" if f.heal_after_s else "")
                               for f in scenario.faults)
            intro = (scenario.description + " " if scenario.description else "") + (
                f"Faults: {faults}." if faults else "No injected fault (load/processing profile).")
            out.append(tag("p", intro, class_="muted"))
            out.append(tag("p", criterion_text(scenario, self.campaign.target.rate), class_="note"))
            out.extend(self.adverse_verdict_table(scenario))
            rows = self.summary_ci[self.summary_ci["scenario"] == scenario.name]
            body = []
            for config_id in self.config_ids:
                for r in rows[rows["config_id"] == config_id].itertuples(index=False):
                    s = pd.Series(r._asdict())
                    src = self.summary
                    src = src[(src["config_id"] == config_id) & (src["scenario"] == scenario.name) &
                              (src["phase"] == r.phase)]
                    matched = _all_true(src["matched_target"])
                    body.append([config_id, r.phase_name, _rate(r.target_rate),
                                 _ci(s, "confirm_rate", "{:,.0f}", self.with_ci),
                                 _ci(s, "consume_rate", "{:,.0f}", self.with_ci),
                                 _ci(s, "e2e_p99_ms", "{:,.0f} ms", self.with_ci),
                                 _ci(s, "backlog_max", "{:,.0f}", self.with_ci),
                                 _ci(s, "time_to_recover_s", "{:,.1f} s", self.with_ci),
                                 f"{int(src['lost'].fillna(0).sum())}/{int(src['duplicates'].fillna(0).sum())}",
                                 ("yes", "ok") if matched else ("no", "warn" if is_backlog(scenario) else "bad")])
            out.append(table(["config", "phase", "target", "publish rate", "consume rate", "p99", "max backlog",
                              "time to recover", "lost/dup", "rate and SLO matched"], body,
                             numeric=[2, 3, 4, 5, 6, 7, 8]))
            out.extend(self.adverse_charts(scenario))
        return out

    def adverse_verdict_table(self, scenario: Scenario) -> list[object]:
        """The `adverse` table's rows of one scenario, the figures its criterion reads first."""
        verdict = (self.data.adverse[self.data.adverse["scenario"] == scenario.name]
                   if self.data.adverse is not None else pd.DataFrame())
        if verdict.empty:
            return [tag("p", "Not judged: the adverse table has no row for this scenario (its analysis has not run "
                             "or wrote nothing).", class_="warn")]
        body = []
        for r in verdict.sort_values("config_id").itertuples(index=False):
            held = ("held", "ok") if r.held else ("not held", "bad")
            reason = r.reason if isinstance(r.reason, str) else "—"
            if is_backlog(scenario):
                reduced = f"{_secs(r.reduced_publish_s)} (tolerance {_secs(r.publish_tolerance_s)})"
                body.append([r.config_id, held, reduced, _secs(r.publishers_blocked_s), _int(r.peak_backlog_msgs),
                             _pct(r.peak_memory_share),
                             f"yes, {_secs(r.drain_s)} after the peak" if r.drained else ("no", "bad"),
                             _int(r.lost), _ms(r.max_e2e_p99_ms), reason])
            else:
                body.append([r.config_id, held, f"{_int(r.phases_held)}/{_int(r.phases_judged)}",
                             _secs(r.max_time_to_recover_s), _dip(r.worst_dip_ratio), _secs(r.unavailable_s),
                             _int(r.lost), _ms(r.max_e2e_p99_ms), reason])
        if is_backlog(scenario):
            headers = ["config", "verdict", "reduced publish rate", "publishers blocked", "peak backlog",
                       "peak memory (of watermark)", "drained", "lost", "worst p99 (reported)", "why"]
            numeric = [3, 4, 5, 7, 8]
        else:
            headers = ["config", "verdict", "phases held", "longest recovery", "worst dip", "unavailable", "lost",
                       "worst p99", "why"]
            numeric = [2, 3, 4, 5, 6, 7]
        return [table(headers, body, numeric=numeric)]

    def adverse_charts(self, scenario: Scenario) -> list[object]:
        """Seed 002's per-second charts: one panel per config (first run and repeat of each)."""
        runs = []
        for config_id in self.config_ids:
            found = sorted(k for k, v in self.data.client_seconds.items()
                           if k[0] == config_id and self.family_phases.get(k[1], (k[1],))[0] == scenario.name
                           and v is not None and not v.empty)
            if not found:
                continue
            key = found[0]
            client = self.data.client_seconds[key]
            first = client["repeat"].min()
            runs.append((config_id, _repeat(client, first), _repeat(self.data.events.get(key), first),
                         _repeat(self.data.broker_samples.get(key), first)))
        figures = []
        for start in range(0, len(runs), MAX_ADVERSE_PANELS):
            part = runs[start:start + MAX_ADVERSE_PANELS]
            title = f"{scenario.name}: publish, consume and backlog per second" + (
                f" ({part[0][0]} … {part[-1][0]})" if len(runs) > len(part) else "")
            figures.append(self.fig(charts.adverse_panels(part, title, self.colors),
                                    f"{title}, one panel per config (first repeat; axes shared): offered rate "
                                    "dashed, publish (confirmed) blue, consume orange, backlog shaded (right axis); "
                                    "red line = fault injected, green dashed = healed."))
        return figures

    # -- broker
    def broker_section(self) -> list[object]:
        """Table: the phase_summary broker_* figures (max over phases and repeats); charts: raw samples."""
        out: list[object] = [tag("h2", "Broker-side metrics", id="broker")]
        summary = self.data.phase_summary
        body = []
        for config_id in self.config_ids:
            for scenario in self.campaign.scenarios:
                rows = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario.name)]
                if rows.empty:
                    continue
                mem, frac = rows["broker_mem_max_bytes"].max(), rows["broker_mem_max_fraction"].max()
                alarm, down = _any_true(rows["broker_alarm"]), _any_true(rows["broker_node_down_seen"])
                body.append([config_id, scenario.name,
                             f"{mem / 2**20:,.0f} MiB" if pd.notna(mem) else "n/a",
                             f"{frac * 100:,.0f}%" if pd.notna(frac) else "n/a",
                             _rate(rows["broker_queue_max"].max()),
                             ("yes", "bad") if alarm else ("no" if alarm is False else "n/a"),
                             ("yes", "warn") if down else ("no" if down is False else "n/a")])
        if body:
            out.append(table(["config", "scenario", "peak memory (any node)", "peak % of watermark",
                              "peak messages in queues", "memory/disk alarm", "node seen down"], body,
                             numeric=[2, 3, 4]))
        figures = []
        for config_id in self.config_ids:
            for (cid, scenario, run_id), broker in sorted(self.data.broker_samples.items()):
                if cid != config_id or broker is None or broker.empty or len(figures) >= MAX_BROKER_CHARTS:
                    continue
                first = broker["repeat"].min()
                events = _repeat(self.data.events.get((cid, scenario, run_id)), first)
                figures.append(self.fig(charts.broker_panels(_repeat(broker, first), events,
                                                             f"Broker metrics: {config_id}, {scenario}"),
                                        f"Broker metrics of {config_id} during {scenario} (run {run_id}, repeat "
                                        f"{first}), sampled from the management API; alarms marked x."))
        if not body and not figures:
            return [*out, tag("p", "No broker samples were recorded.", class_="muted")]
        out.extend(figures)
        if len(figures) == MAX_BROKER_CHARTS:
            out.append(tag("p", f"Charts limited to the first {MAX_BROKER_CHARTS}.", class_="note"))
        return out

    # -- node resources (issue 15; seed 000 Figs 6-9)
    def bottleneck_verdict(self) -> list[object]:
        """Per config, what ran out at the first intensity it did not match (phase_summary.bottleneck)."""
        items = []
        for config_id in self.config_ids:
            found = stopped_matching(self.summary, config_id, [s.name for s in self.intensity])
            if found is None:
                continue
            rate, label, detail = found
            items.append(tag("li", [tag("b", config_id), f": stopped matching at {_rate(rate)} msg/s; bottleneck "
                                    f"{label or 'unknown (no node figures)'}" + (f" ({detail})" if detail else "")]))
        if not items:
            return []
        return [tag("p", "Where each config stopped matching its target, and what ran out there (sizing.rules "
                         "bottleneck: cpu, disk, network, memory, generator, or none = coordination):"),
                tag("ul", items)]

    def resource_section(self) -> list[object]:
        out: list[object] = [tag("h2", "Node resources", id="resources")]
        summary = self.summary
        body = []
        for config_id in self.config_ids:
            for scenario in self.intensity:
                rows = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario.name)]
                for r in rows.sort_values(["repeat", "phase"]).itertuples(index=False):
                    if pd.isna(r.cpu_busiest_mean) and r.bottleneck is None:
                        continue
                    body.append([config_id, int(r.repeat), r.phase_name, _pct(r.cpu_busiest_mean),
                                 _pct(r.cpu_busiest_p95), _pct(r.machine_cpu_busy_mean), _num(r.disk_write_mb_s, 1),
                                 _num(r.disk_write_iops, 0), _num(r.net_mb_s, 1),
                                 (r.bottleneck or "—", "bad" if r.bottleneck not in (None, "none") else "")])
        if body:
            out.append(table(["config", "repeat", "phase", "busiest CPU mean", "p95", "machine CPU", "disk write MB/s",
                              "write IOPS", "network MB/s", "bottleneck"], body, numeric=[3, 4, 5, 6, 7, 8]))
        figures = []
        for (config_id, scenario, run_id), nodes in sorted(self.data.node_seconds.items()):
            if nodes is None or nodes.empty:
                continue
            first = nodes["repeat"].min()
            phases = summary[(summary["config_id"] == config_id) & (summary["scenario"] == scenario)
                             & (summary["run_id"] == run_id) & (summary["repeat"] == first)]
            boundaries = pd.DataFrame({"kind": "phase_start", "second": phases.get("start_s", pd.Series(dtype=float))})
            svg, width = charts.resource_panels(_repeat(nodes, first), boundaries,
                                                f"Node resources: {config_id}, {scenario}")
            figures.append(self.fig(svg, f"CPU, network and disk per node of {config_id} over the increasing "
                                         f"intensities of {scenario} (run {run_id}, repeat {first}; node_seconds"
                                         + (f", means over {width} s bins" if width > 1 else "")
                                         + "; gaps = seconds without figures)."))
        if not body and not figures:
            return [*out, tag("p", "No node resource figures were recorded.", class_="muted")]
        return [*out, *figures]

    # -- data quality
    def quality_section(self) -> list[object]:
        out: list[object] = [tag("h2", "Data quality", id="quality")]
        validations = sorted(self.data.validations, key=lambda v: (v.config_id, v.batch, v.run_id))
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
        summary = self.data.phase_summary
        invalid = summary[~summary["valid"].fillna(True).astype(bool)]
        if len(invalid):
            out.append(tag("h3", "Phases flagged invalid"))
            out.append(table(["config", "scenario", "repeat", "phase", "reason"], [
                [r.config_id, r.scenario, int(r.repeat), r.phase_name, r.invalid_reason or "—"]
                for r in invalid.itertuples(index=False)]))
        else:
            out.append(tag("p", "No phase was flagged invalid (the load generator kept up with its schedule).",
                           class_="muted"))
        missing = [c for c in self.config_ids if c not in set(summary["config_id"])]
        expected = {(c, s.name) for c in self.config_ids for s in self.campaign.scenarios}
        seen = set(zip(summary["config_id"], summary["scenario"], strict=True))
        gaps = sorted(expected - seen)
        if missing or gaps:
            out.append(tag("p", [tag("span", "missing data", class_="badge bad"), " no phase summary for: " +
                                 ", ".join(f"{c}/{s}" for c, s in gaps)]))
        return out

    # -- disk layouts (issue 14)
    def disks_section(self) -> list[object]:
        """Each config's volumes by role; on a local target, that disk types have no effect there."""
        out: list[object] = [tag("h2", "Disk layouts", id="disks")]
        rows = []
        for plan in self.configs:
            holders = placement([v.role for v in plan.shape.dedicated])
            rows.append([plan.config_id] + [
                volume_label(next(v.volume for v in plan.shape.volumes if v.role == holders[role]))
                + ("" if holders[role] == role else " (on data)") for role in VOLUME_ROLES])
        out.append(table(["config", *VOLUME_ROLES], rows))
        if self.campaign.deployment == "local":
            out.append(tag("p", "Local target: each role with a volume of its own is a directory of its own on "
                                "the machine's one filesystem, so disk types, sizes, IOPS and throughput have no "
                                "effect on these results; only where RabbitMQ writes differs.", class_="note"))
        return out

    # -- workload groups (issue 14)
    def groups_section(self) -> list[object]:
        """Per scenario with workload groups: what each group runs, and every group's figures per phase. The
        verdicts, boards and charts above read the foreground group's rows only."""
        grouped = [s for s in self.campaign.scenarios if s.groups]
        if not grouped:
            return []
        out: list[object] = [tag("h2", "Workload groups", id="groups")]
        every = self.data.group_summary if self.data.group_summary is not None else self.data.phase_summary
        for scenario in grouped:
            out.append(tag("h3", f"Scenario {scenario.name}"))
            lines = [tag("li", [tag("b", g.name), f" ({'foreground' if g.name == scenario.foreground else 'background'}"
                                f"): {describe_group(g)}"]) for g in scenario.workload_groups]
            out.append(tag("ul", lines))
            background = ", ".join(f"{g.name}: {describe_group(g)}" for g in scenario.background_groups)
            out.append(tag("p", f"Background load: {background}. The verdicts, leaderboards and charts judge the "
                                f"foreground group ({scenario.foreground}) only.", class_="note"))
            rows = every[every["scenario"] == scenario.name].sort_values(["config_id", "repeat", "phase", "group"])
            body = [[r.config_id, int(r.repeat), r.phase_name, r.group,
                     "foreground" if r.foreground else "background",
                     "max" if (getattr(r, "rate_mode", None) or "scheduled") == "max" else _rate(r.target_rate),
                     f"{r.confirm_rate:,.0f}", f"{r.consume_rate:,.0f}", _ms(r.e2e_p50_ms), _ms(r.e2e_p99_ms),
                     _int(r.lost), ("yes", "ok") if r.valid else ("no", "bad")]
                    for r in rows.itertuples(index=False)]
            out.append(table(["config", "repeat", "phase", "group", "role", "target", "confirm rate", "consume rate",
                              "p50", "p99", "lost", "generator kept up"], body, numeric=[5, 6, 7, 8, 9, 10]))
        return out

    def render(self) -> str:
        findings = answer.section(self.campaign, self.data.findings) if self.campaign.purpose != SIZE else []
        # A run compared with a baseline opens with the comparison (issue 24).
        body = [*self.header(), *comparison_section(self.history), *self.verdict(), *findings,
                *self.intensity_section(), *self.leaderboards_section(),
                *trend_section(self.history, self.colors, self.run_id, self.fig),
                *self.volumes_section(),
                *self.search_section(),
                *self.groups_section(),
                *self.adverse_section(), *self.client_settings_section(), *self.broker_section(),
                *self.resource_section(), *self.disks_section(), *self.quality_section(),
                tag("p", f"rabbit-sizing report · {self.charts} charts · self-contained (no external resources)",
                    class_="note")]
        return page(f"Sizing report {self.campaign.name} / {self.run_id}", body)


def is_backlog(scenario: Scenario) -> bool:
    return scenario_kind(scenario) == BACKLOG_ADVERSE


def criterion_text(scenario: Scenario, target_rate: float) -> str:
    """The scenario's criterion in words (sizing.rules, sizing.adverse)."""
    if is_backlog(scenario):
        tolerance = (f"at most {scenario.publish_tolerance_s:g} s of" if scenario.publish_tolerance_s else "no")
        return ("Criterion (seed 002): publishing continues unaffected while the backlog absorbs the difference. "
                f"Holds with {tolerance} reduced publish rate (a second whose 5 s confirm rate fell below 98 % of "
                "the offered rate), nothing confirmed lost, and the backlog drained (back under 1 s of the final "
                "offered rate) before the end. Peak backlog, memory against the high watermark and seconds of "
                "publishers blocked by an alarm are reported; end-to-end latency is reported, not judged: messages "
                "wait in a backlog by design.")
    where = (f"phases offered at most the {target_rate:,.0f} msg/s target" if scenario.step_rates is not None
             and scenario.publish_rate is None else "every phase")
    return (f"Criterion (seeds 000/002): {where} match their target rate within the SLO and lose no confirmed "
            "message; the time to recover from each fault is reported.")


def describe_group(group: WorkloadGroup) -> str:
    """A group's workload in words (from the spec): queues, message size, clients and its rate."""
    w = group.workload
    args = ", ".join(f"{k}: {v}" for k, v in w.queues.arguments.items())
    rate = ""
    if group.hold == "max":
        rate = ", publishing at max (closed loop)"
    elif group.hold:
        total = (group.schedule.step_rates or (0.0,))[0]
        per = group.hold.removesuffix("/publisher")
        rate = f", held at {per} msg/s per publisher ({total:g} msg/s)" if per != group.hold else \
            f", held at {total:g} msg/s"
    if not w.publishers.confirms_in_flight:
        rate += ", no publisher confirms (its confirm rate is 0)"
    return (f"{w.queues.count} {w.queues.type} queue(s){f' ({args})' if args else ''}, {w.publishers.count} "
            f"publisher(s), {w.consumers.count} consumer(s), {w.message.size_bytes} B messages{rate}")


def _pct(v: float) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{v * 100:,.0f}%"


def _num(v: float, digits: int) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{v:,.{digits}f}"


def stopped_matching(summary: pd.DataFrame, config_id: str, scenarios: list[str]
                     ) -> tuple[float, str | None, str | None] | None:
    """The lowest intensity (target rate) of the config's capacity scenarios that some repeat did not match, with
    the bottleneck label phase_summary gave it (the most common over repeats) and one repeat's detail; None when
    every intensity matched."""
    rows = summary[(summary["config_id"] == config_id) & summary["scenario"].isin(scenarios)]
    missed = rows[~rows["matched_target"].fillna(False).astype(bool)]
    if missed.empty:
        return None
    rate = float(missed["target_rate"].min())
    at = missed[missed["target_rate"] == rate].sort_values("repeat")
    labels = at["bottleneck"].dropna()
    label = str(labels.mode().iloc[0]) if not labels.empty else None
    details = at.loc[at["bottleneck"] == label, "bottleneck_detail"].dropna() if label else pd.Series(dtype=object)
    return rate, label, (str(details.iloc[0]) if not details.empty else None)


def _any_true(values: pd.Series) -> bool | None:
    known = values.dropna()
    return None if known.empty else bool(known.astype(bool).any())


@dataclass(frozen=True)
class SettingSteps:
    """One varied client setting's steps across scenarios: `points` has one row per (line, step)."""

    points: pd.DataFrame
    step_labels: list[str]  # tick of each step_index: the setting's value (the whole label for a sequence)
    basis: str  # what the e2e figures are measured from: sent | intended (both, joined, if the steps mix them)


SETTING_STEP_METRICS = ("confirm_rate", "publish_rate", "consume_rate", "e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms")


def settings_step_points(scenarios: list[Scenario], phase_summary: pd.DataFrame,
                         name_configs: bool) -> dict[str, SettingSteps]:
    """Per varied setting (`steps_dimension`), one line per scenario as written (an isolated scenario's runs
    joined back by `isolated_from`) labelled with its queue type, one point per step: the phase_summary figures
    of the phase whose name is the step's label, never recomputed (the mean over repeats, as everywhere)."""
    mine = phase_summary[phase_summary["scenario"].isin([s.name for s in scenarios])]
    summary_ci = repeats.summarize_repeats(mine, SETTING_STEP_METRICS) if not mine.empty else pd.DataFrame(
        columns=["config_id", "scenario", "phase_name", *SETTING_STEP_METRICS])
    groups: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        groups.setdefault(scenario.steps_dimension or "sequence", []).append(scenario)
    out: dict[str, SettingSteps] = {}
    for setting, members in groups.items():
        labels = list(dict.fromkeys(s.label for m in members for s in m.step_settings or ()))
        names = {m.name for m in members}
        rows = summary_ci[summary_ci["scenario"].isin(names) & summary_ci["phase_name"].isin(labels)]
        if rows.empty:
            continue
        points = rows[["config_id", "scenario", "phase_name",
                       *(m for m in SETTING_STEP_METRICS if m in rows.columns)]].copy()
        family = points["scenario"].map({m.name: m.isolated_from or m.name for m in members})
        points["queue_type"] = points["scenario"].map({m.name: m.workload.queues.type for m in members})
        points["line"] = points["queue_type"] + " (" + family + ")"
        if name_configs:
            points["line"] += " on " + points["config_id"]
        points["step_index"] = points["phase_name"].map(labels.index)
        raw = phase_summary[phase_summary["scenario"].isin(names)]
        bases = sorted(set(raw["latency_basis"].dropna().astype(str))) if "latency_basis" in raw else []
        ticks = [label.split("=", 1)[1] if setting != "sequence" and "=" in label else label for label in labels]
        out[setting] = SettingSteps(points, ticks, "/".join(bases) or "intended")
    return out


def as_families(summary: pd.DataFrame, phases: dict[str, tuple[str, int | None]]) -> pd.DataFrame:
    """phase_summary with every isolated run's row as a phase of its family (sizing.spec.as_family_row)."""
    if summary.empty or not any(number is not None for _, number in phases.values()):
        return summary
    return pd.DataFrame([as_family_row(r, phases) for r in summary.to_dict("records")], columns=summary.columns)


def _repeat(df: pd.DataFrame | None, repeat: int) -> pd.DataFrame | None:
    return None if df is None else df[df["repeat"] == repeat]


def render_report(campaign: Campaign, data: ReportData, run_id: str, generated_at: str | None = None,
                  history: RunHistory | None = None) -> str:
    """The whole report as one self-contained HTML document (pure)."""
    stamp = generated_at or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Report(campaign, data, run_id, stamp, history).render()


# ---------------------------------------------------------------------------------------------- I/O


def volume_siblings(campaign: Campaign) -> dict[str, list[str]]:
    """config id -> every config of the same cluster shape (nodes x instance type, one volume each) on another
    volume type too (seed 000 compares one cluster on io1, gp2 and st1 at the target, its Figs 26-31)."""
    shapes: dict[tuple[int, str], list[str]] = {}
    for shape in campaign.clusters:
        if not shape.dedicated:
            shapes.setdefault((shape.nodes, shape.instance_type), []).append(shape.config_id)
    return {config_id: ids for ids in shapes.values() if len(ids) > 1 for config_id in ids}


def time_series_scenarios(campaign: Campaign) -> list[str]:
    """Scenarios whose per-second raw series the report reads: the adverse ones (seed 002's charts) and the
    client-setting runs (seed 003's rate and latency over the run)."""
    return [s.name for s in campaign.scenarios if not is_intensity(s)]


def build_report(campaign_spec_path: str, run_id: str, settings: S3Settings | None = None,
                 local_path: str | Path | None = None, resource_configs: list[str] | None = None,
                 baseline_run: str | None = None) -> str:
    """Read the run's tables from S3, render the report, write it to S3 (and to `local_path`,
    default build/reports/<campaign>/<run>/report.html). Returns the report's s3:// URI. With a baseline run (the
    argument, else the one the run's `runs` row names), the report opens with the comparison."""
    settings = settings or S3Settings.from_env()
    campaign = load_campaign(campaign_spec_path)
    data = load_report_data(settings, campaign.name, [c.config_id for c in plan_configs(campaign)],
                            time_series_scenarios(campaign),
                            campaign.target.rate,
                            resource_scenarios=[s.name for s in campaign.scenarios if is_intensity(s)],
                            resource_configs=resource_configs,  # None: the top and bottom of the leaderboard
                            volume_siblings=volume_siblings(campaign), run_id=run_id)
    history = load_history(settings.store(), campaign, run_id, baseline_run)
    document = render_report(campaign, data, run_id, history=history)
    key = layout.report_key(campaign.name, run_id)
    settings.store().put(key, document.encode(), content_type="text/html; charset=utf-8")
    path = Path(local_path) if local_path else Path("build/reports") / campaign.name / run_id / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document)
    return layout.s3_uri(settings.bucket, key)


def fetch_report(campaign: str, run_id: str, settings: S3Settings | None = None) -> bytes:
    settings = settings or S3Settings.from_env()
    return settings.store().get(layout.report_key(campaign, run_id))
