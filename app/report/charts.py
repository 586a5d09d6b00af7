"""Charts as inline SVG strings (matplotlib, Agg backend; no files, no external fonts or scripts).

Every function takes ready DataFrames and returns one `<svg>` element. One colour per config across
the whole report (`palette`), units on every axis, the title inside the SVG and in its aria-label.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from functools import partial

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, MaxNLocator

from sizing.contract.records import LATENCY_QUANTILES, quantile_label
from sizing.criteria.rules import NODE_CPU_SATURATION

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller, searchable, printable
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
    "legend.frameon": False,
})

WIDTH = 9.0  # inches; fits an A4 page at print scale


def palette(config_ids: Sequence[str]) -> dict[str, tuple]:
    cmap = plt.get_cmap("tab10" if len(config_ids) <= 10 else "tab20")
    return {c: cmap(i % cmap.N) for i, c in enumerate(config_ids)}


def _rate(value: float, _pos=None) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _ms(value: float, _pos=None) -> str:
    return f"{value / 1000:g} s" if value >= 1000 else f"{value:g} ms"


def _minor_ms(ax, value: float, _pos=None) -> str:
    """Label minor ticks only when the axis spans about a decade or less (no power of ten may be in view)."""
    low, high = ax.get_ylim()
    return _ms(float(f"{value:.2g}")) if low > 0 and math.log10(high / low) < 1.2 else ""


def to_svg(fig, title: str) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined in HTML
    svg = re.sub(r'<svg ', f'<svg role="img" aria-label="{_attr(title)}" class="chart" ', svg, count=1)
    # width/height in pt from matplotlib; CSS scales the chart to the page width
    return re.sub(r'\s(width|height)="[\d.]+pt"', "", svg, count=2)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _errorbars(ax, x, y, low, high, color) -> None:
    if low is None or high is None:
        return
    yerr = np.vstack([np.asarray(y) - np.asarray(low), np.asarray(high) - np.asarray(y)])
    if np.all(~np.isfinite(yerr)) or np.nanmax(np.abs(yerr)) == 0:
        return
    ax.errorbar(x, y, yerr=np.nan_to_num(yerr), fmt="none", ecolor=color, elinewidth=1, capsize=3, alpha=0.8)


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
SIDE_STEP = 0.008  # share of the x range between neighbouring configs' points


def side_by_side(config_ids: Sequence[str], x_span: float) -> dict[str, tuple[str, float]]:
    """Per config a marker and a small sideways offset of its points, so that configs with equal rates do
    not hide each other (each keeps its own marker and column of points around the true step)."""
    middle = (len(config_ids) - 1) / 2
    return {c: (MARKERS[i % len(MARKERS)], (i - middle) * SIDE_STEP * x_span) for i, c in enumerate(config_ids)}


def intensity_throughput_figure(summary: pd.DataFrame, config_ids: Sequence[str], colors: dict,
                                target_rate: float, title: str, with_ci: bool):
    """Achieved vs target rate per intensity step, one line per config (seed 000, Fig 1 and Fig 10)."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    steps = sorted(summary["target_rate"].unique())
    ax.plot(steps, steps, color="black", linestyle="--", linewidth=1, label="target (scheduled rate)")
    layout = side_by_side(list(config_ids), max(steps, default=0.0))
    for config_id in config_ids:
        rows = summary[summary["config_id"] == config_id].sort_values("target_rate")
        if rows.empty:
            continue
        marker, dx = layout[config_id]
        x = rows["target_rate"] + dx
        ax.plot(x, rows["confirm_rate"], marker=marker, markersize=4, markerfacecolor="none", linewidth=1.2,
                color=colors[config_id], label=config_id)
        if with_ci:
            _errorbars(ax, x, rows["confirm_rate"], rows.get("confirm_rate_low"),
                       rows.get("confirm_rate_high"), colors[config_id])
    ax.axvline(target_rate, color="firebrick", linewidth=1, alpha=0.6)
    ax.annotate(f"campaign target {_rate(target_rate)} msg/s", (target_rate, 0.02), xycoords=("data", "axes fraction"),
                rotation=90, fontsize=7, color="firebrick", ha="right", va="bottom")
    ax.set(title=title, xlabel="target publish rate (intensity step), msg/s",
           ylabel="achieved (confirmed) publish rate, msg/s")
    ax.xaxis.set_major_formatter(FuncFormatter(_rate))
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", ncols=2 if len(config_ids) > 6 else 1)
    return fig


def intensity_throughput(summary: pd.DataFrame, config_ids: Sequence[str], colors: dict, target_rate: float,
                         title: str, with_ci: bool) -> str:
    return to_svg(intensity_throughput_figure(summary, config_ids, colors, target_rate, title, with_ci), title)


def latency_panels(summary: pd.DataFrame, config_ids: Sequence[str], colors: dict, percentiles: Sequence[str],
                   slo_ms: float | None, title: str, with_ci: bool) -> str:
    """End-to-end latency per intensity, one panel per percentile, one line per config (Fig 2-5)."""
    labels = {f"e2e_{q}_ms": quantile_label(q) for q in LATENCY_QUANTILES}
    fig, axes = plt.subplots(1, len(percentiles), figsize=(WIDTH, 3.4), sharey=True, squeeze=False)
    for ax, column in zip(axes[0], percentiles, strict=True):
        for config_id in config_ids:
            rows = summary[summary["config_id"] == config_id].sort_values("target_rate")
            values = rows[column].where(rows[column] > 0)
            if rows.empty or values.isna().all():
                continue
            ax.plot(rows["target_rate"], values, marker="o", markersize=3, color=colors[config_id], label=config_id)
            if with_ci:
                _errorbars(ax, rows["target_rate"], values, rows.get(f"{column}_low"), rows.get(f"{column}_high"),
                           colors[config_id])
        if slo_ms and column == "e2e_p99_ms":
            ax.axhline(slo_ms, color="firebrick", linestyle=":", linewidth=1.2, label=f"p99 SLO {_ms(slo_ms)}")
        ax.set_yscale("log")
        ax.set_title(f"{labels.get(column, column)} end-to-end latency")
        ax.set_xlabel("target rate, msg/s")
        ax.xaxis.set_major_formatter(FuncFormatter(_rate))
        ax.yaxis.set_major_formatter(FuncFormatter(_ms))
        ax.yaxis.set_minor_formatter(FuncFormatter(partial(_minor_ms, ax)))
    axes[0][0].set_ylabel("latency (log scale)")
    handles, names = [], []
    for ax in axes[0]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=True):
            if n not in names:
                handles.append(h)
                names.append(n)
    rows = math.ceil(len(names) / 4)
    fig.legend(handles, names, loc="lower center", ncols=min(len(names), 4), bbox_to_anchor=(0.5, -0.02 - 0.05 * rows))
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


def leaderboard_bars(board: pd.DataFrame, value: str, colors: dict, title: str, xlabel: str, money: bool,
                     low: Sequence[float] | None = None, high: Sequence[float] | None = None) -> str:
    """Horizontal bars in leaderboard order (rank 1 on top), value printed at the bar's end."""
    board = board.sort_values("rank")
    fig, ax = plt.subplots(figsize=(WIDTH / 2 - 0.1, 0.42 * len(board) + 1.0))
    y = np.arange(len(board))[::-1]
    values = board[value].to_numpy(dtype=float)
    ax.barh(y, values, color=[colors.get(c, "grey") for c in board["config_id"]], height=0.6)
    if low is not None and high is not None:
        err = np.vstack([values - np.asarray(low, dtype=float), np.asarray(high, dtype=float) - values])
        if np.isfinite(err).any():
            ax.errorbar(values, y, xerr=np.nan_to_num(err), fmt="none", ecolor="black", capsize=3, elinewidth=1)
    for yi, v in zip(y, values, strict=True):
        ax.annotate(f"${v:,.0f}" if money else f"{v:,.0f} msg/s", (v, yi), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, [f"#{int(r)} {c}" for r, c in zip(board["rank"], board["config_id"], strict=True)])
    ax.set(title=title, xlabel=xlabel)
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, max(values.max() if len(values) else 1, 1) * 1.25)
    ax.xaxis.set_major_formatter(FuncFormatter((lambda v, _p: f"${v:,.0f}") if money else _rate))
    return to_svg(fig, title)


def _phase_lines(ax, events: pd.DataFrame | None) -> None:
    """Thin grey lines at phase boundaries (intensity steps, profile segments)."""
    if events is None or events.empty:
        return
    for second in events.loc[events["kind"] == "phase_start", "second"].unique():
        if second > 0:
            ax.axvline(second, color="grey", linewidth=0.8, alpha=0.5, linestyle="-.")


def _fault_spans(ax, events: pd.DataFrame | None, label: bool) -> None:
    _phase_lines(ax, events)
    if events is None or events.empty:
        return
    starts = events[events["kind"] == "fault_start"].sort_values("second")
    heals = events[events["kind"] == "fault_heal"]
    for _, start in starts.iterrows():
        heal = heals[(heals["fault_id"] == start["fault_id"]) & (heals["second"] >= start["second"])]
        end = float(heal["second"].min()) if len(heal) else None
        ax.axvline(start["second"], color="firebrick", linewidth=1.2)
        if end is not None:
            ax.axvspan(start["second"], end, color="firebrick", alpha=0.08)
            ax.axvline(end, color="seagreen", linewidth=1.2, linestyle="--")
        if label:  # written up along the fault line, clear of the data and the legend
            what = f"{start.get('fault_kind') or 'fault'} {start.get('node') or ''}".strip()
            ax.annotate(what, (start["second"], 0.03), xycoords=("data", "axes fraction"), xytext=(3, 0),
                        textcoords="offset points", rotation=90, fontsize=7, color="firebrick", va="bottom")


def _client_per_second(client: pd.DataFrame) -> pd.DataFrame:
    """The run's per-second totals over its groups (client_series): offered, confirmed, consumed (drawn as steps: a
    count covers [second, second + 1))."""
    return client.groupby("second").agg(target=("offered_rate", "max"), published=("confirmed", "sum"),
                                        consumed=("consumed", "sum")).sort_index()


def _backlog(per_second: pd.DataFrame, broker: pd.DataFrame | None) -> tuple[pd.Series, str]:
    """Messages in queues as the broker saw them (summed over nodes), else confirmed - consumed at the client."""
    if broker is not None and not broker.empty and broker["queue_messages"].notna().any():
        return broker.groupby("second")["queue_messages"].sum().sort_index(), "messages in queues (broker)"
    return ((per_second["published"].cumsum() - per_second["consumed"].cumsum()).clip(lower=0),
            "confirmed - consumed (client)")


def adverse_panels(runs: Sequence[tuple[str, pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]],
                   title: str, colors: dict | None = None) -> str:
    """Seed 002 Figs 3-12: one panel per config, on shared axes: the offered rate (dashed), the publish
    (confirmed) and consume rates per second, and the backlog shaded on a second axis; faults marked.
    `runs`: (config_id, client_series, events, broker_series) of one repeat each."""
    cols = 2 if len(runs) > 1 else 1
    rows = math.ceil(len(runs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH, 2.5 * rows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    backlog_axes = []
    peak_rate = peak_backlog = 1.0
    for ax, (config_id, client, events, broker) in zip(axes.flat, runs, strict=False):
        per_second = _client_per_second(client)
        ax.step(per_second.index, per_second["target"], where="post", color="black", linestyle="--", linewidth=0.9,
                label="offered rate")
        ax.step(per_second.index, per_second["published"], where="post", color="tab:blue", linewidth=1.2,
                label="publish (confirmed)")
        ax.step(per_second.index, per_second["consumed"], where="post", color="tab:orange", linewidth=1.0,
                label="consume")
        backlog, what = _backlog(per_second, broker)
        twin = ax.twinx()
        twin.fill_between(backlog.index, 0, backlog.values, color="tab:purple", alpha=0.18, label=f"backlog: {what}")
        twin.plot(backlog.index, backlog.values, color="tab:purple", linewidth=0.8)
        backlog_axes.append(twin)
        _fault_spans(ax, events, label=True)
        ax.set_title(config_id, fontsize=9, color=(colors or {}).get(config_id, "black"))
        peak_rate = max(peak_rate, float(per_second[["target", "published", "consumed"]].max().max()))
        peak_backlog = max(peak_backlog, float(backlog.max()) if len(backlog) else 0.0)
    for ax in axes.flat[len(runs):]:
        ax.set_visible(False)
    for ax in axes.flat[:len(runs)]:
        ax.set_ylim(0, peak_rate * 1.08)
        ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    for twin in backlog_axes:  # one backlog scale for every panel, as the rates share theirs
        _counts_axis(twin, peak_backlog)
        twin.spines["right"].set_visible(True)
    for ax in axes[:, 0]:
        ax.set_ylabel("msg/s")
    for ax in axes[-1, :]:
        ax.set_xlabel("seconds since scenario start")
    backlog_axes[-1].set_ylabel("backlog, messages")
    handles, names = axes.flat[0].get_legend_handles_labels()
    twin_handles, twin_names = backlog_axes[0].get_legend_handles_labels()
    fig.legend(handles + twin_handles, names + twin_names, loc="lower center", ncols=4,
               bbox_to_anchor=(0.5, -0.01))
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return to_svg(fig, title)


def latency_seconds_by_volume(series: dict[str, pd.DataFrame], volumes: dict[str, str], colors: dict,
                              title: str) -> str:
    """Seed 000 Figs 26-31: one cluster on each volume type at the target, end-to-end percentiles per second;
    p50/p75 on the left, p95/p99/p99.9 on the right (log scale), one colour per config, one line style per
    percentile."""
    fig, (low, high) = plt.subplots(1, 2, figsize=(WIDTH, 3.4), sharex=True)
    styles = {"p50": "-", "p75": "--", "p95": "-", "p99": "--", "p999": ":"}
    for config_id, rows in series.items():
        if rows.empty:
            continue
        x = rows["second"] - rows["second"].min()
        for ax, names in ((low, ("p50", "p75")), (high, ("p95", "p99", "p999"))):
            for name in names:
                ax.plot(x, rows[name], color=colors.get(config_id), linestyle=styles[name], linewidth=1.1,
                        label=f"{volumes.get(config_id, config_id)} {quantile_label(name)}")
    for ax, what in ((low, "p50 and p75"), (high, "p95, p99 and p99.9")):
        ax.set_yscale("log")
        ax.set(title=f"{what} per second", xlabel="seconds into the steady window", ylabel="latency (log scale)")
        ax.yaxis.set_major_formatter(FuncFormatter(_ms))
        ax.legend(loc="upper left", fontsize=7, ncols=2)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


def _counts_axis(ax, peak: float) -> None:
    """Whole-message axis that still reads well when the series is flat at zero."""
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.set_ylim(0, max(float(peak) if math.isfinite(peak) else 0, 10) * 1.1)


def broker_panels(broker: pd.DataFrame, events: pd.DataFrame | None, title: str) -> str:
    """Per node: memory used vs its high watermark, messages in queues it leads; alarms shaded."""
    fig, (mem, depth) = plt.subplots(1, 2, figsize=(WIDTH, 2.8), sharex=True)
    nodes = sorted(broker["node"].dropna().unique())
    cmap = plt.get_cmap("tab10")
    for i, node in enumerate(nodes):
        rows = broker[broker["node"] == node].sort_values("second")
        color = cmap(i % 10)
        mem.plot(rows["second"], rows["mem_used_bytes"] / 2**20, color=color, linewidth=1.1, label=node)
        depth.plot(rows["second"], rows["queue_messages"], color=color, linewidth=1.1, label=node)
        alarms = rows[rows["mem_alarm"].fillna(False).astype(bool) | rows["disk_alarm"].fillna(False).astype(bool)]
        if len(alarms):
            mem.scatter(alarms["second"], alarms["mem_used_bytes"] / 2**20, color="firebrick", marker="x", s=14,
                        zorder=3, label="alarm" if i == 0 else None)
    limit = broker["mem_limit_bytes"].dropna()
    if len(limit):
        mem.axhline(limit.min() / 2**20, color="firebrick", linestyle=":", linewidth=1,
                    label="memory high watermark")
    _fault_spans(mem, events, label=False)
    _fault_spans(depth, events, label=False)
    mem.set(title="memory used per node", ylabel="MiB", xlabel="seconds since scenario start")
    mem.set_ylim(bottom=0)
    depth.set(title="messages in queues led by node", ylabel="messages", xlabel="seconds since scenario start")
    _counts_axis(depth, broker["queue_messages"].max())
    mem.legend(loc="upper left", fontsize=7)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


def throughput_seconds_by_config(series: dict[str, pd.DataFrame], colors: dict, target_rate: float,
                                 title: str) -> str:
    """Seed 000 Figs 10/18/25: every config's confirmed publish rate per second in its phase at the target, one
    line per config, the target dashed: a config that carries the target on average but not second by second shows."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.0))
    for config_id, rows in series.items():
        if rows.empty:
            continue
        ax.plot(rows["second"] - rows["second"].min(), rows["confirmed"], color=colors.get(config_id),
                linewidth=1.1, label=config_id)
    ax.axhline(target_rate, color="black", linestyle="--", linewidth=1, label="target")
    ax.set(title="confirmed publish rate per second", ylabel="msg/s", xlabel="seconds into the steady window")
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower left", fontsize=7, ncols=3)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


def memory_share_by_config(series: dict[str, pd.Series], colors: dict, title: str) -> str:
    """Seed 002 Figs 7/8: every config's memory against its high watermark on one chart (per second, the node
    nearest its watermark), so configs are compared on one axis; 100 %: the memory alarm blocks publishers."""
    fig, ax = plt.subplots(figsize=(WIDTH, 2.8))
    for config_id, share in series.items():
        ax.plot(share.index, share.to_numpy() * 100, color=colors.get(config_id), linewidth=1.1, label=config_id)
    ax.axhline(100, color="firebrick", linestyle=":", linewidth=1, label="memory high watermark (alarm)")
    ax.set(title="memory used by the node nearest its watermark, % of the watermark", ylabel="% of watermark",
           xlabel="seconds since scenario start")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=7, ncols=2)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


MAX_POINTS = 600  # per line: longer series are shown as means over equal bins of seconds (the caption says so)


def _binned(rows: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, int]:
    """Display only: a node's series as means over bins of `width` seconds; a bin with no figures stays a gap."""
    span = float(rows["second"].max() - rows["second"].min()) if len(rows) else 0.0
    width = max(1, math.ceil(span / MAX_POINTS))
    if width == 1:
        return rows, 1
    grouped = rows.assign(bin=(rows["second"] // width) * width).groupby("bin")[list(columns)].mean()
    return grouped.reset_index().rename(columns={"bin": "second"}), width


def resource_panels(nodes: pd.DataFrame, events: pd.DataFrame | None, title: str) -> tuple[str, int]:
    """Seed 000 Figs 6-9 for one run: CPU and network per node (top), disk write MB/s and IOPS per node
    (bottom), over the run's increasing intensities. Missing seconds are gaps. Returns (svg, bin width in s)."""
    frame = nodes.copy()
    frame.loc[frame["missing"].fillna(False).astype(bool), ["cpu_busy"]] = float("nan")
    frame["cpu_pct"] = frame["cpu_busy"] * 100
    frame["net_mb_s"] = (frame["net_in_bytes_per_s"] + frame["net_out_bytes_per_s"]) / 1e6
    frame["client_mb_s"] = (frame["client_in_bytes_per_s"] + frame["client_out_bytes_per_s"]) / 1e6
    frame["write_mb_s"] = frame["disk_write_bytes_per_s"] / 1e6
    frame["write_iops"] = frame["disk_write_ops_per_s"]
    frame["write_kb"] = frame["disk_write_bytes_per_s"] / frame["disk_write_ops_per_s"] / 1000
    fig, axes = plt.subplots(2, 2, figsize=(WIDTH, 5.2), sharex=True)
    (cpu, net), (disk, iops) = axes
    cmap = plt.get_cmap("tab10")
    width = 1
    for i, node in enumerate(sorted(frame["node"].dropna().unique())):
        rows, width = _binned(frame[frame["node"] == node].sort_values("second"),
                              ["cpu_pct", "net_mb_s", "client_mb_s", "write_mb_s", "write_iops", "write_kb"])
        color = cmap(i % 10)
        cpu.plot(rows["second"], rows["cpu_pct"], color=color, linewidth=1.0, label=node)
        net.plot(rows["second"], rows["net_mb_s"], color=color, linewidth=1.0, label=node)
        net.plot(rows["second"], rows["client_mb_s"], color=color, linewidth=0.8, linestyle=":")
        disk.plot(rows["second"], rows["write_mb_s"], color=color, linewidth=1.0)
        iops.plot(rows["second"], rows["write_iops"], color=color, linewidth=1.0)
    cpu.axhline(NODE_CPU_SATURATION * 100, color="firebrick", linestyle=":", linewidth=1,
                label=f"{NODE_CPU_SATURATION * 100:g} % (cpu rule)")
    for ax in (cpu, net, disk, iops):
        _phase_lines(ax, events)
        _fault_spans(ax, events, label=False)
        ax.set_ylim(bottom=0)
    cpu.set(title="CPU busy per node", ylabel="% of the node's cores")
    net.set(title="network per node (in + out; dotted: AMQP clients)", ylabel="MB/s")
    disk.set(title="disk writes per node", ylabel="MB/s", xlabel="seconds since scenario start")
    if frame["write_iops"].notna().any():
        sizes = frame["write_kb"].replace([math.inf], float("nan")).dropna()
        iops.set(title="disk write IOPS per node" + (f" (median write {sizes.median():,.1f} KB)" if len(sizes) else ""),
                 ylabel="IOPS", xlabel="seconds since scenario start")
    else:
        iops.text(0.5, 0.5, "write IOPS not measured on this target\n(local without the scale model: not "
                  "attributable to one process)", ha="center", va="center", transform=iops.transAxes, fontsize=8,
                  color="0.4")
        iops.set(title="disk write IOPS per node", xlabel="seconds since scenario start")
    cpu.legend(loc="upper left", fontsize=7)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title), width


def settings_timeseries(client: pd.DataFrame, steps: Sequence[tuple[float, str]], title: str,
                        step_latency: pd.DataFrame | None = None, basis: str = "intended") -> str:
    """Client-setting steps (seed 003, Figs 1-9): confirmed and consumed rate per second over the whole run, a
    dotted line at each step boundary labelled with the step's setting=value (`steps`: (start second, label)).
    Below, latency over the run: each step's p50/p95/p99 over its steady window (`step_latency`: phase_summary's
    start_s, warmup_s, duration_s, e2e_p50_ms, e2e_p95_ms, e2e_p99_ms) and the exact worst latency per second
    (client_series' e2e_max_ms), measured from `basis`. Without confirms, the published rate stands in."""
    sent = "confirmed" if client["confirmed"].sum() > 0 or "published" not in client else "published"
    per_second = client.groupby("second").agg(published=(sent, "sum"), consumed=("consumed", "sum")).sort_index()
    worst = (client.groupby("second")["e2e_max_ms"].max().dropna() if "e2e_max_ms" in client
             else pd.Series(dtype=float))
    with_latency = (step_latency is not None and not step_latency.empty) or not worst.empty
    if with_latency:
        fig, (ax, lat) = plt.subplots(2, 1, figsize=(WIDTH, 6.0), sharex=True, height_ratios=[3, 2])
    else:
        fig, ax = plt.subplots(figsize=(WIDTH, 3.6))
    ax.step(per_second.index, per_second["published"], where="post", color="tab:blue", linewidth=1.4,
            label="publish (confirmed)" if sent == "confirmed" else "publish (sent; no confirms)")
    ax.step(per_second.index, per_second["consumed"], where="post", color="tab:orange", linewidth=1.2,
            label="consume")
    peak = max(float(per_second[["published", "consumed"]].max().max()), 1.0)
    ax.set_ylim(0, peak * 1.2)
    for start, label in steps:
        ax.axvline(start, color="grey", linestyle=":", linewidth=1)
        ax.text(start, peak * 1.17, f" {label}", fontsize=7, va="top", ha="left", color="dimgrey")
    ax.set(ylabel="rate, msg/s", xlabel="" if with_latency else "seconds since scenario start")
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2)
    if with_latency:
        if not worst.empty:
            lat.step(worst.index, worst.values, where="post", color="0.6", linewidth=0.9,
                     label="worst per second")
        rows = step_latency if step_latency is not None else pd.DataFrame()
        for i, r in enumerate(rows.itertuples(index=False)):
            x0, x1 = float(r.start_s) + float(r.warmup_s), float(r.start_s) + float(r.duration_s)
            for column, color in (("e2e_p50_ms", "tab:green"), ("e2e_p95_ms", "tab:purple"),
                                  ("e2e_p99_ms", "tab:red")):
                value = float(getattr(r, column))
                if math.isfinite(value) and value > 0:
                    lat.hlines(value, x0, x1, color=color, linewidth=1.8,
                               label=f"step {column[4:-3]}" if i == 0 else None)
        for start, _label in steps:
            lat.axvline(start, color="grey", linestyle=":", linewidth=1)
        lat.set(ylabel=f"e2e latency (from {basis})", xlabel="seconds since scenario start")
        lat.set_yscale("log")
        lat.yaxis.set_major_formatter(FuncFormatter(_ms))
        lat.yaxis.set_minor_formatter(FuncFormatter(partial(_minor_ms, lat)))
        lat.legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=7, ncols=4)
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


QUEUE_TYPE_COLORS = {"quorum": "tab:blue", "mirrored": "tab:red", "classic": "tab:green", "stream": "tab:purple"}


def settings_steps_by_queue_type(points: pd.DataFrame, step_labels: Sequence[str], setting: str, basis: str,
                                 title: str) -> str:
    """Seed 003, Figs 1-9 side by side: per step of one client setting, the achieved confirm and consume rate
    (top) and e2e p50/p95/p99 (bottom), one line per queue type on the same axes. `points`: one row per
    (line, step) with line, queue_type, step_index and the phase_summary figures; `step_labels[i]` is the tick of
    step i (the setting's value); `basis` is what the latencies are measured from (sent | intended)."""
    fig, (rates, latency) = plt.subplots(2, 1, figsize=(WIDTH, 6.4), sharex=True)
    for i, (line, rows) in enumerate(points.groupby("line", sort=True)):
        rows = rows.sort_values("step_index")
        color = QUEUE_TYPE_COLORS.get(str(rows["queue_type"].iloc[0]), f"C{i}")
        marker = MARKERS[i % len(MARKERS)]
        x = rows["step_index"]
        # without confirms a step's confirm rate is 0: its published rate is the measured throughput
        unconfirmed = (rows["confirm_rate"] <= 0) & (rows.get("publish_rate", 0) > 0)
        sent = rows["confirm_rate"].where(~unconfirmed, rows.get("publish_rate"))
        rates.plot(x, sent, color=color, marker=marker, linewidth=1.6,
                   label=f"{line}: confirmed" + (" (published where no confirms)" if unconfirmed.any() else ""))
        rates.plot(x, rows["consume_rate"], color=color, marker=marker, linewidth=1.0, linestyle="--",
                   markerfacecolor="none", label=f"{line}: consumed")
        for column, style, width in (("e2e_p50_ms", ":", 1.0), ("e2e_p95_ms", "-", 1.6), ("e2e_p99_ms", "--", 1.0)):
            finite = rows[column].where(rows[column] > 0)
            latency.plot(x, finite, color=color, marker=marker, linestyle=style, linewidth=width,
                         markerfacecolor="none" if style != "-" else color,
                         label=f"{line}: {column[4:-3]}")
    rates.set(title="achieved rate per step", ylabel="rate, msg/s")
    top = points[[c for c in ("confirm_rate", "publish_rate", "consume_rate") if c in points]].max().max()
    rates.set_ylim(0, max(float(top) if math.isfinite(top) else 0.0, 1.0) * 1.1)  # the highest marker in full
    rates.yaxis.set_major_formatter(FuncFormatter(_rate))
    rates.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    latency.set(title=f"end-to-end latency per step (from the {basis} time)", ylabel=f"latency (from {basis})",
                xlabel=f"{setting} (one step each)")
    if points[["e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms"]].gt(0).any().any():
        latency.set_yscale("log")
        latency.yaxis.set_minor_formatter(FuncFormatter(partial(_minor_ms, latency)))
    latency.yaxis.set_major_formatter(FuncFormatter(_ms))
    latency.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    latency.set_xticks(range(len(step_labels)), list(step_labels))
    fig.suptitle(title, fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_svg(fig, title)


# ------------------------------------------------------------------------------------ capacity search (issue 16)
PASS_COLOR, FAIL_COLOR = "#2a9d4b", "#c0392b"


def _inconclusive(probes: pd.DataFrame) -> np.ndarray:
    """Attempts the generator fell behind in (re-run, never judged); tables written before the column: none."""
    if "probe_inconclusive" not in probes:
        return np.zeros(len(probes), dtype=bool)
    return probes["probe_inconclusive"].fillna(False).astype(bool).to_numpy()


def search_progress(probes: pd.DataFrame, title: str) -> str:
    """One search as it ran: each probe's rate at its start time, a filled circle when it passed and a cross when
    it failed, and the bracket the generator held after each probe (probe_last_pass / probe_first_fail) narrowing
    as a shaded band. `probes`: phase_summary rows of one run and repeat."""
    probes = probes.sort_values("phase")
    fig, ax = plt.subplots(figsize=(WIDTH / 2 - 0.1, 3.2))
    t = probes["start_s"].to_numpy(dtype=float)
    ends = t + probes["duration_s"].to_numpy(dtype=float) if "duration_s" in probes else t
    low = probes["probe_last_pass"].to_numpy(dtype=float)
    high = probes["probe_first_fail"].to_numpy(dtype=float)
    for i in range(len(probes)):  # held from this probe's verdict until the next one's
        if np.isfinite(low[i]) and np.isfinite(high[i]):
            right = ends[i + 1] if i + 1 < len(probes) else ends[i] + (ends[i] - t[i])
            ax.fill_between([ends[i], right], low[i], high[i], color="grey", alpha=0.2, linewidth=0,
                            label="bracket (last pass .. first fail)" if i == int(np.argmax(np.isfinite(high)))
                            else None)
    passed = probes["probe_passed"].fillna(False).astype(bool).to_numpy()
    rerun = _inconclusive(probes)
    rate = probes["target_rate"].to_numpy(dtype=float)
    ax.plot(t, rate, color="grey", linewidth=0.8, alpha=0.6)
    ax.scatter(t[passed], rate[passed], marker="o", color=PASS_COLOR, zorder=3, label="pass")
    ax.scatter(t[~passed & ~rerun], rate[~passed & ~rerun], marker="x", color=FAIL_COLOR, s=50, zorder=3,
               label="fail")
    if rerun.any():
        ax.scatter(t[rerun], rate[rerun], marker="o", facecolors="none", edgecolors="grey", zorder=3,
                   label="inconclusive (re-run)")
    for ti, ri, stage in zip(t, rate, probes["probe_stage"].fillna(""), strict=True):
        ax.annotate(str(stage)[:1], (ti, ri), xytext=(4, 4), textcoords="offset points", fontsize=7, color="grey")
    ax.set(title=title, xlabel="time since the search started (s)", ylabel="probe rate (msg/s)")
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.legend(loc="lower right")
    return to_svg(fig, title)


def rate_vs_p99(probes: pd.DataFrame, slo_p99_ms: float, knee: float | None, bracket: tuple[float, float] | None,
                title: str) -> str:
    """Every probe's end-to-end p99 against its rate (pass / fail marks), the SLO line and the knee: the capacity
    table's sustainable rate, with its bracket shaded."""
    probes = probes[~_inconclusive(probes)].sort_values("target_rate")
    fig, ax = plt.subplots(figsize=(WIDTH / 2 - 0.1, 3.2))
    passed = probes["probe_passed"].fillna(False).astype(bool).to_numpy()
    rate = probes["target_rate"].to_numpy(dtype=float)
    p99 = probes["e2e_p99_ms"].to_numpy(dtype=float)
    worst = probes.groupby("target_rate")["e2e_p99_ms"].max()  # the curve through each rate's worst probe
    ax.plot(worst.index.to_numpy(dtype=float), worst.to_numpy(dtype=float), color="grey", linewidth=0.8, alpha=0.6)
    ax.scatter(rate[passed], p99[passed], marker="o", color=PASS_COLOR, zorder=3, label="pass")
    ax.scatter(rate[~passed], p99[~passed], marker="x", color=FAIL_COLOR, s=50, zorder=3, label="fail")
    ax.axhline(slo_p99_ms, color="black", linestyle="--", linewidth=0.8, label=f"SLO p99 {slo_p99_ms:g} ms")
    if bracket is not None and all(np.isfinite(bracket)):
        ax.axvspan(bracket[0], bracket[1], color="grey", alpha=0.2, linewidth=0, label="bracket")
    if knee is not None and np.isfinite(knee):
        ax.axvline(knee, color=PASS_COLOR, linewidth=1.2, label=f"knee: sustainable {knee:,.0f} msg/s")
    ax.set_yscale("log")
    ax.set(title=title, xlabel="probe rate (msg/s)", ylabel="end-to-end p99 (ms)")
    ax.xaxis.set_major_formatter(FuncFormatter(_rate))
    ax.yaxis.set_major_formatter(FuncFormatter(_ms))
    ax.legend(loc="upper left")
    return to_svg(fig, title)


def run_trend(series: Sequence[tuple[str, Sequence[object]]], change_runs: dict[str, Sequence[str]], colors: dict,
              title: str, ylabel: str, current_run: str | None = None) -> str:
    """One metric over the stored runs, oldest first (issue 24): per config a line through each run's median with
    its order-statistic interval, a change point (sizing.judgement.trends) as a dashed vertical line before its run, the
    report's own run marked. `series`: (config id, points with run_id, value, low, high)."""
    runs = list(dict.fromkeys(p.run_id for _, points in series for p in points))
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6))
    x_of = {run: i for i, run in enumerate(runs)}
    layout = side_by_side([c for c, _ in series], 8.0)  # about 0.06 of a run apart
    for config_id, points in series:
        marker, dx = layout[config_id]
        x = [x_of[p.run_id] + dx for p in points]
        y = [p.value for p in points]
        ax.plot(x, y, marker=marker, markersize=4, linewidth=1.2, color=colors.get(config_id), label=config_id)
        _errorbars(ax, x, y, [p.low if p.low is not None else p.value for p in points],
                   [p.high if p.high is not None else p.value for p in points], colors.get(config_id))
        for run in change_runs.get(config_id, ()):
            ax.axvline(x_of[run] - 0.5, color=colors.get(config_id), linestyle="--", linewidth=1)
            ax.annotate(f"change ({config_id})", (x_of[run] - 0.5, 0.98), xycoords=("data", "axes fraction"),
                        rotation=90, fontsize=7, ha="right", va="top", color=colors.get(config_id))
    if current_run in x_of:
        ax.axvspan(x_of[current_run] - 0.4, x_of[current_run] + 0.4, color="grey", alpha=0.12, label="this run")
    tilted = len(runs) > 6
    ax.set_xticks(range(len(runs)), runs, rotation=30 if tilted else 0, ha="right" if tilted else "center")
    ax.set(title=title, xlabel="run (oldest first)", ylabel=ylabel)
    ax.yaxis.set_major_formatter(FuncFormatter(_rate))
    ax.legend(loc="best")
    return to_svg(fig, title)
