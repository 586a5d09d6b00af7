"""phase_summary's dynamics columns: faults, recovery, client backlog and rate spreads per (run, group, phase), from
the client fold's series blocks and the run's fault events (phase_dynamics)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sizing.contract import records
from sizing.criteria import stats
from sizing.criteria.rules import GENERATOR_FAULTS
from sizing.criteria.search import backlog_slope
from sizing.judgement import adverse
from spark_jobs.lib.phase_summary.client_fold import series_rows
from spark_jobs.lib.phase_summary.keys import RUN_COLS, summary_columns
from spark_jobs.lib.recovery import fault_impact

# run_dynamics' rows: phase_summary's dynamics columns, one row per (run, group, phase).
DYNAMICS_COLUMNS = (*records.RUN_KEY, *summary_columns(
    "group", "phase", "backlog_max_client", "faults", "fault_kinds", "pre_fault_rate", "time_to_recover_s",
    "recovered", "unavailable_s", "worst_dip_ratio", "backlog_slope", "reduced_publish_s", "publishers_blocked_s",
    "backlog_peak_s", "backlog_end_client", "backlog_last_above_s", "drain_level_msgs", "publish_rate_rse",
    "confirm_rate_rse", "consume_rate_rse", "rate_batches", "publish_rate_cv", "publish_rate_cv_rse"))
DYNAMICS_DDL = records.columns_ddl(DYNAMICS_COLUMNS)
# phase_summary's rate -> the per-second count whose batch means give its spread within the run
RATE_SERIES = {"publish_rate_rse": "published", "confirm_rate_rse": "confirmed", "consume_rate_rse": "consumed"}


def run_dynamics(series: pd.DataFrame, faults: pd.DataFrame) -> pd.DataFrame:
    """Per run, phase and workload group: client-side backlog, the impact of every fault on the per-second
    throughput, (issue 16) sizing.criteria.search.backlog_slope over the steady seconds, as the generator computes it,
    and (issue 22) the per-second figures of the backlog criterion (sizing.judgement.adverse): seconds of reduced
    publish rate and of blocked publishers, and where the backlog peaked, ended and last stood above the run's drain
    level.

    `series`: per (group, phase, warmup, second), all workers summed: published, confirmed, consumed, acked,
    scheduled, and the most blocked worker's blocked_ms. `faults`: the run's fault_start events: phase, second,
    fault_kind.
    """
    columns = [c.name for c in DYNAMICS_COLUMNS]
    if series.empty:
        return pd.DataFrame(columns=columns)
    if series["group"].nunique() > 1:  # issue 14: each workload group on its own
        return pd.concat([run_dynamics(part, faults) for _group, part in series.groupby("group")],
                         ignore_index=True)
    key = {k: series[k].iloc[0] for k in [*RUN_COLS, "group"]}
    if not faults.empty:  # a known client round trip is a condition of the run, nothing to recover from
        faults = faults[~faults["fault_kind"].isin(GENERATOR_FAULTS)]
    slopes = _steady_backlog_slopes(series)
    # One row per second: a worker's boundary second may still count in the phase before.
    series = (series.groupby("second", as_index=False)
              .agg(phase=("phase", "max"), warmup=("warmup", "max"), published=("published", "sum"),
                   confirmed=("confirmed", "sum"), consumed=("consumed", "sum"), scheduled=("scheduled", "sum"),
                   blocked_ms=("blocked_ms", "max"))
              .sort_values("second", ignore_index=True))
    # Throughput the broker accepted; without publisher confirms there is only the consume side.
    signal = "confirmed" if series["confirmed"].sum() > 0 else "consumed"
    accepted = "confirmed" if series["confirmed"].sum() > 0 else "published"
    backlog = (series[accepted] - series["consumed"]).cumsum().clip(lower=0)
    dense = series.set_index("second").reindex(range(int(series["second"].max()) + 1), fill_value=0)
    reduced = pd.Series(adverse.reduced_publish(dense["scheduled"].to_numpy(), dense[accepted].to_numpy()),
                        index=dense.index)
    scheduled = series[series["phase"] > 0]
    last_phase = scheduled[scheduled["phase"] == scheduled["phase"].max()] if len(scheduled) else scheduled
    level = adverse.drain_level(float(last_phase["scheduled"].mean()) if len(last_phase) else 0.0)
    rows = []
    for phase, part in series.groupby("phase"):
        in_phase = faults[faults["phase"] == phase] if not faults.empty else faults
        impacts = [fault_impact(part["second"].to_numpy(), part[signal].to_numpy(), float(f.second))
                   for f in in_phase.itertuples()]
        ttrs = [i.time_to_recover_s for i in impacts]
        steady = part[~part["warmup"].astype(bool)]
        held = adverse.phase_backlog(part["second"].to_numpy(), backlog.loc[part.index].to_numpy(), level)
        row = {**key, "phase": int(phase), "backlog_max_client": held.peak,
               "faults": len(impacts),
               "fault_kinds": ",".join(sorted({str(k) for k in in_phase["fault_kind"]})) if impacts else None,
               "pre_fault_rate": None, "time_to_recover_s": None, "recovered": None, "unavailable_s": None,
               "worst_dip_ratio": None, "backlog_slope": slopes.get(int(phase)),
               "reduced_publish_s": float(reduced.loc[steady["second"]].sum()),
               "publishers_blocked_s": float(steady["blocked_ms"].fillna(0.0).clip(upper=1000.0).sum()) / 1000.0,
               "backlog_peak_s": held.peak_s, "backlog_end_client": held.end,
               "backlog_last_above_s": held.last_above_s, "drain_level_msgs": level, **_rate_spreads(steady)}
        if impacts:
            levels = [i.pre_fault_rate for i in impacts if i.pre_fault_rate is not None]
            dips = [i.worst_dip_ratio for i in impacts if i.worst_dip_ratio is not None]
            row.update(pre_fault_rate=min(levels) if levels else None,
                       recovered=all(t is not None for t in ttrs),
                       time_to_recover_s=max(t for t in ttrs if t is not None) if any(
                           t is not None for t in ttrs) else None,
                       unavailable_s=float(sum(i.unavailable_s for i in impacts)),
                       worst_dip_ratio=min(dips) if dips else None)
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _rate_spreads(steady: pd.DataFrame) -> dict[str, float | int | None]:
    """Issue 32: each rate's relative standard error within the run, from batch means over the phase's steady
    seconds in time order (sizing.criteria.stats.batch_means; null when too short, or nothing counted)."""
    out: dict[str, float | int | None] = {"rate_batches": None}
    for column, count in RATE_SERIES.items():
        spread = stats.batch_means(steady[count].astype(float).tolist())
        rse = spread.rse if spread is not None and spread.mean > 0 else None
        out[column] = rse
        if rse is not None:
            out["rate_batches"] = spread.batches
    # Choppiness of the publish rate the findings read (confirmed; published when nothing was confirmed).
    accepted = "confirmed" if steady["confirmed"].sum() > 0 else "published"
    variation = stats.batch_variation(steady[accepted].astype(float).tolist())
    out["publish_rate_cv"] = variation.mean if variation is not None else None
    out["publish_rate_cv_rse"] = variation.rse if variation is not None and variation.mean > 0 else None
    return out


def _steady_backlog_slopes(series: pd.DataFrame) -> dict[int, float]:
    """phase -> sizing.criteria.search.backlog_slope over the phase's steady seconds (phases after the first), all
    workers summed, as the generator judges a capacity-search probe."""
    steady = series[~series["warmup"].astype(bool) & (series["phase"] > 0)]
    per_second = steady.groupby(["phase", "second"], as_index=False)[["published", "acked"]].sum()
    return {int(phase): backlog_slope(part["second"].astype(float).tolist(), part["published"].astype(float).tolist(),
                                      part["acked"].astype(float).tolist())
            for phase, part in per_second.groupby("phase")}


def phase_dynamics(client_series: DataFrame, events: DataFrame) -> DataFrame:
    """Per run and workload group: each group's own throughput series (the fold's blocks, SERIES_DDL) against the
    run's faults, and its backlog slope per phase."""
    faults = (events.filter(F.col("kind") == "fault_start")
              .select(*RUN_COLS, "phase", "second", "fault_kind"))
    return (client_series.groupBy(*RUN_COLS).cogroup(faults.groupBy(*RUN_COLS))
            .applyInPandas(_block_dynamics, DYNAMICS_DDL))


def _block_dynamics(blocks: pd.DataFrame, faults: pd.DataFrame) -> pd.DataFrame:
    return run_dynamics(series_rows(blocks), faults)
