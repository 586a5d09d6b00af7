"""phase_summary's client columns: the fold's partials per (run, phase, group), percentiles from the merged
histograms (client_phase_stats)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame

from sizing.contract import records
from sizing.criteria import stats
from sizing.criteria.rules import prefetch_ceiling, publisher_window_ceiling
from spark_jobs.lib import histmerge
from spark_jobs.lib.phase_summary.client_fold import HIST_COLS, SUM_COLS, TRIP_SUMS, WINDOW_HISTS
from spark_jobs.lib.phase_summary.keys import GROUP_KEY, summary_columns
from spark_jobs.lib.s3source import ddl_to_arrow

LAT_NAMES = [*histmerge.QUANTILES, "max"]
SPREAD_QUANTILES = records.SPREAD_QUANTILES  # phase_summary's e2e_<q>_ms_rse
# _final_client's rows: phase_summary's client columns, one row per (run, phase, group).
CLIENT_COLUMNS = (*records.RUN_KEY, *summary_columns(
    "phase", "group", "workers", "steady_seconds_observed", *SUM_COLS, "blocked_share", "worker_cpu_max",
    "publish_delay_p99_ms", "publish_delay_max_ms", "e2e_samples", *(f"e2e_{q}_ms" for q in LAT_NAMES),
    *(f"e2e_{q}_ms_rse" for q in SPREAD_QUANTILES), *(f"confirm_{q}_ms" for q in LAT_NAMES),
    "confirm_mean_ms", "publisher_window_ceiling", "consumer_ceiling", "consumer_hold_mean_ms",
    "consumer_refill_mean_ms", "prefetch_ceiling"))
CLIENT_DDL = records.columns_ddl(CLIENT_COLUMNS)


def _final_client(table: pa.Table) -> pa.Table:
    """One (run, phase): add the per-worker partials, read percentiles from the merged histograms."""
    frame = table.drop_columns(list(HIST_COLS)).to_pandas()
    zeros = np.zeros(table.num_rows, dtype=np.int64)
    row: dict[str, object] = {k: frame[k].iloc[0] for k in GROUP_KEY}
    per_worker = frame.groupby("worker").agg(rows=("rows", "sum"), cpu=("cpu_s", "sum"),
                                             publishers=("publishers", "max"),
                                             consumer_capacity=("consumer_capacity", "sum"),
                                             consumers=("consumers", "max"))
    row["workers"] = len(per_worker)
    row["steady_seconds_observed"] = int(frame["last_second"].max() - frame["first_second"].min() + 1)
    for col in SUM_COLS:
        row[col] = int(frame[col].sum())
    worker_seconds = float(frame["rows"].sum())
    row["blocked_share"] = float(frame["blocked_ms"].sum()) / (worker_seconds * 1000.0) if worker_seconds else 0.0
    row["worker_cpu_max"] = float((per_worker["cpu"] / per_worker["rows"]).max())
    delay = histmerge.dense_counts(table.column("publish_delay_hist"), zeros, 1)[0]
    row["publish_delay_p99_ms"] = histmerge.quantiles_ms(delay)["p99"]
    delay_max = frame["publish_delay_max_us"].max()
    row["publish_delay_max_ms"] = None if pd.isna(delay_max) else float(delay_max) / 1000.0
    e2e = histmerge.dense_counts(table.column("e2e_hist"), zeros, 1)[0]
    row["e2e_samples"] = int(e2e.sum())
    for name, value in histmerge.quantiles_ms(e2e).items():
        row[f"e2e_{name}_ms"] = value
    row.update(_percentile_spreads(table, row))
    confirm = histmerge.dense_counts(table.column("confirm_hist"), zeros, 1)[0]
    for name, value in histmerge.quantiles_ms(confirm).items():
        row[f"confirm_{name}_ms"] = value
    row.update(_client_ceilings(frame, per_worker, histmerge.mean_ms(confirm)))
    return pa.Table.from_pylist([row], schema=ddl_to_arrow(CLIENT_DDL))


def _client_ceilings(frame: pd.DataFrame, per_worker: pd.DataFrame, confirm_mean_ms: float | None
                     ) -> dict[str, float | None]:
    """Issue 44: the phase's client ceilings. The publishers of every worker through the widest window in force
    (a step sets one for all) over the mean confirm latency; the consumers' mean per-second ceiling, summed over
    workers (unknown when some second had none: a 0 ms processing time); the consumers of every worker through the
    largest prefetch in force over the mean hold and refill (none when no message waited for a slot)."""
    window, prefetch = frame["confirms_in_flight"].max(), frame["prefetch"].max()
    capacity = float((per_worker["consumer_capacity"] / per_worker["rows"]).sum())
    trips = {c: int(frame[c].sum()) for c in TRIP_SUMS}
    hold_ms = trips["ack_hold_us"] / trips["ack_holds"] / 1000 if trips["ack_holds"] else None
    refill_ms = trips["refill_us"] / trips["refills"] / 1000 if trips["refills"] else None
    return {"confirm_mean_ms": confirm_mean_ms,
            "publisher_window_ceiling": publisher_window_ceiling(
                int(per_worker["publishers"].sum()), None if pd.isna(window) else float(window), confirm_mean_ms),
            "consumer_ceiling": capacity if math.isfinite(capacity) and capacity > 0 else None,
            "consumer_hold_mean_ms": hold_ms, "consumer_refill_mean_ms": refill_ms,
            "prefetch_ceiling": prefetch_ceiling(int(per_worker["consumers"].sum()),
                                                 None if pd.isna(prefetch) else float(prefetch), hold_ms, refill_ms)}


def _percentile_spreads(table: pa.Table, row: dict[str, object]) -> dict[str, float | None]:
    """Issue 32: each SPREAD_QUANTILES percentile's spread within the run (sizing.criteria.stats.sectioned_rse), from
    the window histograms of every partial of the phase (none when any partial lacks them)."""
    spreads: dict[str, float | None] = {f"e2e_{q}_ms_rse": None for q in SPREAD_QUANTILES}
    if any(table.column(col).null_count for col in WINDOW_HISTS):
        return spreads
    zeros = np.zeros(table.num_rows, dtype=np.int64)
    windows = [histmerge.dense_counts(table.column(col), zeros, 1)[0] for col in WINDOW_HISTS]
    figures = [histmerge.quantiles_ms(counts) for counts in windows]
    samples = [int(counts.sum()) for counts in windows]
    for q in SPREAD_QUANTILES:
        whole = stats.number(row[f"e2e_{q}_ms"])
        spreads[f"e2e_{q}_ms_rse"] = None if whole is None else stats.sectioned_rse(
            whole, [f[q] for f in figures], samples, histmerge.QUANTILES[q])
    return spreads


def client_phase_stats(partials: DataFrame) -> DataFrame:
    """Steady-window (warm-up excluded) totals and merged-histogram percentiles per (run, phase, group), from the
    folded partials (fold_client_seconds)."""
    return partials.groupBy(*GROUP_KEY).applyInArrow(_final_client, CLIENT_DDL)
