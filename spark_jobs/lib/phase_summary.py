"""phase_summary: one row per campaign, config, scenario, run, repeat, phase and group (schema:
spark_jobs/README.md). The first step of the `analysis` job (spark_jobs/jobs/analysis.py runs it).

Reads the raw records of the given configs and runs (never "latest"), and overwrites exactly the
`tables/phase_summary/campaign=C/config=K/run=R/` partitions of those configs and runs: every other run of a
config keeps its rows (issue 24).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.objectstore import StoreSpec
from sizing import adverse, layout, records, stats
from sizing.disks import DATA_ROLE, VOLUME_ROLES
from sizing.histogram import encode_counts
from sizing.records import Column as Declared  # a fold's column: name, type, meaning (pyspark's Column is another)
from sizing.rules import GENERATOR_FAULTS, consumer_ceiling, judged_against_target, publisher_window_ceiling
from sizing.scalemodel import config_limits
from sizing.search import PROBE_EVENT, SearchSpec, backlog_slope
from sizing.spec import Campaign
from spark_jobs.lib import gate, histmerge, rules_columns, series
from spark_jobs.lib.recovery import fault_impact
from spark_jobs.lib.s3source import align_to_schema, ddl_to_arrow, gathered, gathered_whole
from spark_jobs.lib.tableio import ObjectFold, RawObjects, replace_table

TABLE = "phase_summary"
RUN_COLS = [c.name for c in records.RUN_KEY]
PHASE_KEY = [*RUN_COLS, "phase"]
# Issue 14: client figures are per workload group; broker, event and node figures per phase (the cluster's).
GROUP_KEY = [*PHASE_KEY, "group"]
RUN_KEY_DDL = records.columns_ddl(records.RUN_KEY)  # derived: the run key is declared once (sizing.records)
# Issue 47: every intermediate schema below is declared as columns (sizing.records.Column) beside the fold that yields
# it, and its DDL derived from them (records.columns_ddl); none is spelled as a DDL string.
_SUMMARY = {c.name: c for c in records.PHASE_SUMMARY}


def summary_columns(*names: str) -> tuple[Declared, ...]:
    """phase_summary's own columns (sizing.records.PHASE_SUMMARY), for a fold that yields them as they are."""
    return tuple(_SUMMARY[name] for name in names)


def _union_ddl(*ddls: str) -> str:
    """The columns of several DDLs, each name once (the first DDL's type)."""
    seen: set[str] = set()
    parts = []
    for ddl in ddls:
        for part in ddl.split(", "):
            name = part.split()[0].strip("`")
            if name not in seen:
                seen.add(name)
                parts.append(part)
    return ", ".join(parts)


@dataclass(frozen=True)
class Rules:
    """The campaign's part of the verdicts; thresholds are sizing.rules' (spark_jobs/README.md, "Rules").

    Publish lateness alone is no verdict on the load generator: with confirms it is mostly broker
    back-pressure (the in-flight limit is full) or an outage during a fault. The generator says itself
    when it fell behind (`worker_behind` events: its tick loop lagged or its CPU was saturated).
    """

    slo_p99_ms: float
    # Capacity-search scenarios (issue 16) and their specs: each probe's verdict is recomputed with its SLO.
    searches: tuple[tuple[str, SearchSpec], ...] = ()

    @classmethod
    def of(cls, campaign: Campaign) -> Rules:
        return cls(slo_p99_ms=campaign.target.p99_latency_ms,
                   searches=tuple((s.name, s.search) for s in campaign.scenarios if s.search is not None))


# ------------------------------------------------------------------------- client seconds -> per phase

SUM_COLS = ["scheduled", "published", "confirmed", "nacked", "returned", "consumed", "redelivered"]
HIST_COLS = {"e2e_hist": "e2e", "confirm_hist": "confirm", "publish_delay_hist": "publish_delay"}
# Issue 32: the end-to-end histogram of each window of the phase's planned steady seconds (sizing.stats.window_layout:
# the windows a percentile's spread within one run comes from, sizing.stats.sectioned_rse); null where the fold was
# not given the phases' windows.
WINDOW_HISTS = [f"e2e_hist_w{i}" for i in range(stats.WITHIN_RUN_BATCHES)]
# _partials' rows: one per worker phase (a worker phase split over two fold calls: two).
PARTIAL_COLUMNS = (*records.RUN_KEY,
    Declared("phase", "int32", "phase"),
    Declared("group", "string", "workload group (records written before groups: main)"),
    Declared("worker", "int32", "worker process"),
    Declared("rows", "int64", "steady seconds folded"),
    Declared("first_second", "int32", "first steady second folded"),
    Declared("last_second", "int32", "last steady second folded"),
    *(Declared(c, "int64", f"{c}, summed over the steady seconds") for c in SUM_COLS),
    Declared("blocked_ms", "float64", "blocked connection-ms, summed"),
    Declared("cpu_s", "float64", "the worker's CPU seconds, summed"),
    Declared("publish_delay_max_us", "float64", "worst send lateness, us"),
    *(Declared(c, "binary", f"{c} merged over the steady seconds (wire format)") for c in HIST_COLS),
    *(Declared(c, "binary", "end-to-end histogram of one window (WINDOW_HISTS; null without the windows)")
      for c in WINDOW_HISTS),
    # issue 44: the client settings the phase's ceilings come from (_client_settings)
    Declared("publishers", "int64", "the most publishers of the worker in a steady second"),
    Declared("confirms_in_flight", "float64", "the largest confirm window in force in a steady second"),
    Declared("consumer_capacity", "float64", "consumer ceilings (sizing.rules.consumer_ceiling), summed over the "
             "steady seconds"))
PARTIAL_DDL = records.columns_ddl(PARTIAL_COLUMNS)
LAT_NAMES = [*histmerge.QUANTILES, "max"]
SPREAD_QUANTILES = records.SPREAD_QUANTILES  # phase_summary's e2e_<q>_ms_rse
# _final_client's rows: phase_summary's client columns, one row per (run, phase, group).
CLIENT_COLUMNS = (*records.RUN_KEY, *summary_columns(
    "phase", "group", "workers", "steady_seconds_observed", *SUM_COLS, "blocked_share", "worker_cpu_max",
    "publish_delay_p99_ms", "publish_delay_max_ms", "e2e_samples", *(f"e2e_{q}_ms" for q in LAT_NAMES),
    *(f"e2e_{q}_ms_rse" for q in SPREAD_QUANTILES), *(f"confirm_{q}_ms" for q in LAT_NAMES),
    "confirm_mean_ms", "publisher_window_ceiling", "consumer_ceiling"))
CLIENT_DDL = records.columns_ddl(CLIENT_COLUMNS)


SERIES_KEY = [*RUN_COLS, "group", "phase", "warmup", "second"]
SERIES_COUNTS = ["published", "confirmed", "consumed", "acked", "scheduled"]  # summed over workers
# the most blocked worker (a second in which some publisher was blocked); the run's offered rate; the exact worst
# latencies (client_series)
SERIES_MAX = ["blocked_ms", "target_rate", "e2e_max_us", "publish_delay_max_us"]
SERIES_SUMS = [*SERIES_COUNTS, "workers"]  # workers: the worker rows of the second
# The series travels as blocks: one row per (run, group, phase, warm-up) of a fold call, its seconds and their
# figures as little-endian arrays (SERIES_ARRAYS: column -> (block column, dtype)). As a row per second it was most
# of the fold's rows, and building the cache of them and shuffling them cost the JVM ~8 CPU-s per seed scale.
SERIES_BLOCK_KEY = [*RUN_COLS, "group", "phase", "warmup"]
SERIES_ARRAYS = {"second": ("seconds", "<i4"), **{c: (f"{c}_per_second", "<i8") for c in SERIES_SUMS},
                 **{c: (f"{c}_per_second", "<f8") for c in SERIES_MAX}}
# Issue 35: and each second's merged histograms (series.HIST_ARRAYS), for client_series' percentiles.
# _series' rows: one block per (run, group, phase, warm-up) of a fold call.
SERIES_BLOCK_COLUMNS = (
    *(Declared(block, "binary", f"{column} of each second of the block, {dtype} array")
      for column, (block, dtype) in SERIES_ARRAYS.items()),)
SERIES_COLUMNS = (*records.RUN_KEY,
    Declared("group", "string", "workload group"),
    Declared("phase", "int32", "phase"),
    Declared("warmup", "bool", "the block's seconds are warm-up seconds"),
    *SERIES_BLOCK_COLUMNS)
SERIES_DDL = records.columns_ddl(SERIES_COLUMNS) + ", " + series.HIST_BLOCK_DDL
# What the run's dynamics read of the blocks (not the histograms).
COUNT_BLOCK_COLUMNS = [*SERIES_BLOCK_KEY, *(block for block, _ in SERIES_ARRAYS.values())]
# What one fold of client_seconds yields, told apart by `kind`: partial rows (PARTIAL_DDL's columns), series blocks
# (SERIES_DDL's) and the raw gate's check rows (gate.CLIENT_CHECK_DDL's), the other kinds' columns null. One read
# serves the two passes and the gate.
PARTIAL, SERIES, CHECK = "partial", "series", "check"
FOLDED_DDL = _union_ddl(PARTIAL_DDL, records.columns_ddl((
    Declared("kind", "string", "which of the fold's row kinds: partial | series | check"),
    Declared("warmup", "bool", "a series block's warm-up flag"), *SERIES_BLOCK_COLUMNS)),
    series.HIST_BLOCK_DDL, gate.CLIENT_CHECK_DDL)


def fold_client_seconds(batches: Iterator[pa.RecordBatch], arguments: list[list] | None = None,
                        whole_directories: bool = False) -> Iterator[pa.RecordBatch]:
    """Combiner of raw client_seconds, batch by batch, before anything is shuffled (FOLDED_DDL):

    - partial rows: the steady (warm-up excluded) seconds folded into one row per (run, phase, group, worker).
      A raw object holds one worker's phase, so ~600 wide rows with three histograms each become 1;
    - series blocks: the per-second counts summed per (run, group, phase, warm-up, second), as one block per
      (run, group, phase, warm-up) (SERIES_ARRAYS). Objects are read in key order, so a batch holds whole phases
      of all of a run's workers: ~8 x 600 rows become 1;
    - check rows: every row (warm-up and drain seconds too) checked for the raw gate (gate.client_checks), one
      per worker phase.

    The job runs it where objects are read (CLIENT_FOLD). The batches are gathered into tables of about
    s3source.BATCH_ROWS rows, folded one table at a time (bounded memory); a group split over two tables just
    yields two rows, which the final stages add. `whole_directories` (the data source says so: each raw directory,
    one phase of a run, read by one call of this function in key order): tables are cut between phases, so a
    phase's seconds are final in its block and only the seconds at a block's edges ship histogram entries;
    otherwise (a mapInArrow over rows in any partition) a table's first and last phases may continue elsewhere.
    At 10x seed scale (6,000 s phases) those phases' entries were most of what reached the JVM.

    `arguments`: the phases' windows (phase_windows), for the partials' window histograms (WINDOW_HISTS); without
    them those stay null.
    """
    out_schema = ddl_to_arrow(FOLDED_DDL)
    windows = None if arguments is None else steady_windows(arguments)
    tables = gathered_whole(batches, PHASE_KEY) if whole_directories else \
        ((table, True, True) for table in gathered(batches))
    for table, opens_inside, closes_inside in tables:
        table = _with_group(table)
        steady = pc.fill_null(pc.invert(table.column("warmup")), False).to_numpy(zero_copy_only=False)
        for kind, folded in ((PARTIAL, _partials(table, steady, windows)),
                             (SERIES, _series(table, (opens_inside, closes_inside))),
                             (CHECK, gate.client_checks(table) if table.num_rows else None)):
            if folded is not None:
                folded = folded.append_column("kind", pa.array([kind] * folded.num_rows, pa.string()))
                yield from align_to_schema(folded, out_schema).to_batches()


PARTIAL_READS = [*GROUP_KEY, "worker", "second", *SUM_COLS, "blocked_ms", "cpu_s", "publish_delay_max_us"]
# Issue 44: the per-second client settings behind the phase's client ceilings (sizing.rules.publisher_window_ceiling,
# consumer_ceiling); per second, as a client-setting step changes them at its boundary.
SETTING_READS = ["publishers", "confirms_in_flight", "consumers", "processing_ms"]


def _partials(table: pa.Table, steady: np.ndarray, windows: pd.DataFrame | None = None) -> pa.Table | None:
    """The `steady` rows folded per worker phase (the warm-up rows are masked, not filtered out: a filter would
    copy every histogram byte); with the phases' `windows` (steady_windows), the end-to-end histogram per window
    too (WINDOW_HISTS)."""
    if not steady.any():
        return None
    keys = [*GROUP_KEY, "worker"]
    frame = _client_settings(table.select([*PARTIAL_READS, *SETTING_READS]).to_pandas()[steady])
    gid = frame.groupby(keys, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    agg = frame.groupby(gid).agg(**{k: (k, "first") for k in keys}, rows=("second", "size"),
                                 first_second=("second", "min"), last_second=("second", "max"),
                                 **{c: (c, "sum") for c in SUM_COLS}, blocked_ms=("blocked_ms", "sum"),
                                 cpu_s=("cpu_s", "sum"), publish_delay_max_us=("publish_delay_max_us", "max"),
                                 publishers=("publishers", "max"), confirms_in_flight=("confirms_in_flight", "max"),
                                 consumer_capacity=("consumer_capacity", "sum"))
    row_group = np.full(table.num_rows, -1, dtype=np.int64)  # a warm-up row adds to no partial
    row_group[steady] = gid
    for col in HIST_COLS:
        if col == "e2e_hist" and windows is not None:
            continue
        dense = histmerge.dense_counts(table.column(col), row_group, len(agg))
        agg[col] = [encode_counts(row) for row in dense]
    if windows is not None:  # one pass: slots 0..k-1 the windows, slot k the steady seconds in none
        k = stats.WITHIN_RUN_BATCHES
        window = window_of(frame, windows)
        slot = np.full(table.num_rows, -1, dtype=np.int64)
        slot[steady] = gid * (k + 1) + np.where(window >= 0, window, k)
        dense = histmerge.dense_counts(table.column("e2e_hist"), slot, len(agg) * (k + 1)).reshape(
            len(agg), k + 1, -1)
        agg["e2e_hist"] = [encode_counts(row) for row in dense.sum(axis=1)]
        for i, col in enumerate(WINDOW_HISTS):
            agg[col] = [encode_counts(row) for row in dense[:, i]]
    return pa.Table.from_pandas(agg.reset_index(drop=True), preserve_index=False)


def _client_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """Each second's consumer ceiling (sizing.rules.consumer_ceiling, summed per worker phase and averaged by
    _final_client): a worker without consumers adds none, a 0 ms processing time makes it unknown (inf)."""
    consumers = frame["consumers"].to_numpy(dtype=float, na_value=0.0)
    processing = frame["processing_ms"].to_numpy(dtype=float, na_value=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = consumer_ceiling(consumers, processing)
    return frame.assign(consumer_capacity=np.where(consumers > 0, ceiling, 0.0))


def steady_windows(arguments: list[list]) -> pd.DataFrame:
    """Per phase (PHASE_KEY), where its windows lie (sizing.stats.window_layout over its planned steady seconds,
    at least SECTION_MIN_SECONDS of them): the first second of the first window and a window's length; phases too
    short for a percentile's spread are left out."""
    phases = pd.DataFrame(arguments, columns=[*PHASE_KEY, *WINDOW_COLUMNS])
    rows = []
    for phase in phases.itertuples(index=False):
        steady_s = int(phase.duration_s) - int(phase.warmup_s)
        layout = stats.window_layout(steady_s, min_seconds=stats.SECTION_MIN_SECONDS)
        if layout is not None:
            dropped, size = layout
            rows.append([*phase[:len(PHASE_KEY)], int(phase.start_s) + int(phase.warmup_s) + dropped, size])
    return pd.DataFrame(rows, columns=[*PHASE_KEY, "window_start_s", "window_s"])


def window_of(frame: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Each row's window (0 .. WITHIN_RUN_BATCHES - 1) within its phase, -1 in none (before the first window, or a
    phase without windows)."""
    rows = frame[[*PHASE_KEY, "second"]].merge(windows, on=PHASE_KEY, how="left")
    index = ((rows["second"] - rows["window_start_s"]) // rows["window_s"]).to_numpy(dtype=float, na_value=np.nan)
    inside = np.isfinite(index) & (index >= 0) & (index < stats.WITHIN_RUN_BATCHES)
    return np.where(inside, index, -1).astype(np.int64)


def _series(table: pa.Table, open_edges: tuple[bool, bool] = (True, True)) -> pa.Table | None:
    frame = table.select([*SERIES_KEY, *SERIES_COUNTS, *SERIES_MAX]).to_pandas()
    held = frame["second"].notna().to_numpy()
    frame = frame[held].assign(workers=1)
    if frame.empty:
        return None
    # groups numbered in order of first appearance, as the sort=False aggregation lists them: group i is row i
    gid = frame.groupby(SERIES_KEY, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    summed = frame.groupby(SERIES_KEY, sort=False, dropna=False, observed=True, as_index=False).agg(
        **{c: (c, "sum") for c in SERIES_SUMS}, **{c: (c, "max") for c in SERIES_MAX})
    block = summed.groupby(SERIES_BLOCK_KEY, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    order = np.lexsort((summed["second"].to_numpy(), block))
    owners, blocks = block[order], int(block.max()) + 1
    firsts = order[np.r_[True, owners[1:] != owners[:-1]]]  # each block's first row: block i is row i
    out = summed.iloc[firsts][SERIES_BLOCK_KEY].reset_index(drop=True)
    for column, (name, dtype) in SERIES_ARRAYS.items():
        floats = dtype == "<f8"  # a second in which no worker said how long it was blocked stays NaN
        values = summed[column].to_numpy(dtype=float if floats else np.int64, na_value=np.nan if floats else 0)
        out[name] = gate.blobs_per_group(owners, values[order].astype(dtype), blocks)
    if all(column in table.column_names for column in series.HISTOGRAMS):
        row_group = np.full(table.num_rows, -1, dtype=np.int64)
        row_group[held] = gid
        for name, blobs in series.hist_blocks(table, row_group, order, owners, blocks,
                                              _maybe_split(frame, summed, order, owners, open_edges)).items():
            out[name] = blobs
    return pa.Table.from_pandas(out, preserve_index=False)


def _maybe_split(frame: pd.DataFrame, summed: pd.DataFrame, order: np.ndarray, owners: np.ndarray,
                 open_edges: tuple[bool, bool] = (True, True)) -> np.ndarray:
    """Per (block key, second) group of a fold call: may another fold call hold rows of it too? Objects are read in
    key order (run, phase, worker), so only the phases of the call's first and last row can be split between calls
    (and only if that edge is open: `open_edges`, first and last), and a boundary second (a block's first or last)
    may be counted by some workers in the phase before."""
    key = [*RUN_COLS, "phase"]
    phases = frame.groupby(key, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    if np.count_nonzero(phases[1:] != phases[:-1]) + 1 > phases.max() + 1:  # not in key order: any may be split
        return np.ones(len(summed), dtype=bool)
    maybe = np.zeros(len(summed), dtype=bool)
    for edge in [row for row, open_edge in zip((frame.iloc[0], frame.iloc[-1]), open_edges, strict=True)
                 if open_edge]:
        same = np.ones(len(summed), dtype=bool)
        for column in key:
            same &= (summed[column] == edge[column]).to_numpy()
        maybe |= same
    change = owners[1:] != owners[:-1]
    maybe[order[np.r_[True, change] | np.r_[change, True]]] = True
    return maybe


def block_seconds(blocks: pd.DataFrame) -> pd.DataFrame:
    """Series blocks (SERIES_DDL) as one row per block and second, in block order."""
    seconds, dtype = SERIES_ARRAYS["second"]
    rows = blocks.loc[blocks.index.repeat(blocks[seconds].map(len) // np.dtype(dtype).itemsize),
                      SERIES_BLOCK_KEY].reset_index(drop=True)
    for column, (name, dtype) in SERIES_ARRAYS.items():
        rows[column] = np.frombuffer(b"".join(blocks[name]), dtype=dtype)
    return rows


def series_rows(blocks: pd.DataFrame) -> pd.DataFrame:
    """Series blocks (SERIES_DDL) back as rows per (run, group, phase, warm-up, second), a second held by several
    blocks (a run's workers read in two fold calls) summed, or its most blocked worker kept."""
    key = [*SERIES_BLOCK_KEY, "second"]
    if blocks.empty:
        return pd.DataFrame(columns=[*key, *SERIES_SUMS, *SERIES_MAX])
    return block_seconds(blocks).groupby(key, sort=False, dropna=False, as_index=False).agg(
        **{c: (c, "sum") for c in SERIES_SUMS}, **{c: (c, "max") for c in SERIES_MAX})


def client_series(blocks: DataFrame) -> DataFrame:
    """The client_series table (sizing.records.CLIENT_SERIES) from the fold's series blocks, run by run."""
    return blocks.groupBy(*RUN_COLS).applyInPandas(_client_series_of_run, records.table_ddl("client_series"))


def _client_series_of_run(blocks: pd.DataFrame) -> pd.DataFrame:
    return series.client_rows(block_seconds(blocks), blocks, RUN_COLS)


def _with_group(table: pa.Table) -> pa.Table:
    """with_group on Arrow rows: records written before workload groups are the implicit one."""
    group = table.column("group") if "group" in table.column_names else pa.nulls(table.num_rows, pa.string())
    table = table.drop_columns(["group"]) if "group" in table.column_names else table
    return table.append_column("group", pc.fill_null(group, records.DEFAULT_GROUP))


# The fold decodes only the columns a phase figure, the series or the gate's checks come from: 32 of client_seconds'
# 38 (issue 44 added the four settings of the client ceilings, SETTING_READS).
CLIENT_FOLD = ObjectFold("spark_jobs.lib.phase_summary:fold_client_seconds", FOLDED_DDL, records.spark_ddl(
    "client_seconds", list(dict.fromkeys([*GROUP_KEY, "worker", "second", "warmup", *SUM_COLS, *SERIES_COUNTS,
                                          *SERIES_MAX, "cpu_s", *HIST_COLS, *SETTING_READS,
                                          *gate.CLIENT_CHECK_READS]))))


def _final_client(table: pa.Table) -> pa.Table:
    """One (run, phase): add the per-worker partials, read percentiles from the merged histograms."""
    frame = table.drop_columns(list(HIST_COLS)).to_pandas()
    zeros = np.zeros(table.num_rows, dtype=np.int64)
    row: dict[str, object] = {k: frame[k].iloc[0] for k in GROUP_KEY}
    per_worker = frame.groupby("worker").agg(rows=("rows", "sum"), cpu=("cpu_s", "sum"),
                                             publishers=("publishers", "max"),
                                             consumer_capacity=("consumer_capacity", "sum"))
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
    workers (unknown when some second had none: a 0 ms processing time)."""
    window = frame["confirms_in_flight"].max()
    capacity = float((per_worker["consumer_capacity"] / per_worker["rows"]).sum())
    return {"confirm_mean_ms": confirm_mean_ms,
            "publisher_window_ceiling": publisher_window_ceiling(
                int(per_worker["publishers"].sum()), None if pd.isna(window) else float(window), confirm_mean_ms),
            "consumer_ceiling": capacity if math.isfinite(capacity) and capacity > 0 else None}


def _percentile_spreads(table: pa.Table, row: dict[str, object]) -> dict[str, float | None]:
    """Issue 32: each SPREAD_QUANTILES percentile's spread within the run (sizing.stats.sectioned_rse), from the
    window histograms of every partial of the phase (none when any partial lacks them)."""
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


@dataclass(frozen=True)
class ClientRecords:
    """client_seconds as phase_summary reads it: `partials`, the steady seconds folded per worker (PARTIAL_DDL:
    the wide histogram columns, folded where they are read), and `series`, the per-second counts as blocks
    (SERIES_DDL) for the run's dynamics and backlog slope."""

    partials: DataFrame
    series: DataFrame
    checks: DataFrame | None = None  # the raw gate's check rows (gate.CLIENT_CHECK_DDL), when read by the fold
    cached: DataFrame | None = None  # what `release` drops once the table is written

    @classmethod
    def folded(cls, folded: DataFrame) -> ClientRecords:
        """All from one fold's output (FOLDED_DDL). Cached: two passes and the gate read it, and the fold (a read of
        every client_seconds object) must run once."""
        folded = folded.persist()
        return cls(_partial_rows(folded), _rows_of(folded, SERIES, SERIES_DDL), _rows_of(folded, CHECK,
                                                                                         gate.CLIENT_CHECK_DDL), folded)

    def release(self) -> None:
        """Drop the cached fold (the analysis job's next step shares the driver and the executors' memory)."""
        if self.cached is not None:
            self.cached.unpersist()

    @classmethod
    def of(cls, client_seconds: DataFrame, phases: DataFrame | None = None) -> ClientRecords:
        """From raw client_seconds rows already in Spark (as the tests build them): the fold as a mapInArrow (the
        S3A path's way); given the `phases`, with the window histograms."""
        fold = fold_client_seconds if phases is None else functools.partial(fold_client_seconds,
                                                                             arguments=phase_windows(phases))
        folded = client_seconds.mapInArrow(fold, FOLDED_DDL)
        return cls(_partial_rows(folded), _rows_of(folded, SERIES, SERIES_DDL))


def _partial_rows(folded: DataFrame) -> DataFrame:
    return _rows_of(folded, PARTIAL, PARTIAL_DDL)


def _rows_of(folded: DataFrame, kind: str, ddl: str) -> DataFrame:
    """One kind of a fold's rows (FOLDED_DDL), with that kind's columns (`ddl`)."""
    return folded.filter(F.col("kind") == kind).select(*ddl_to_arrow(ddl).names)


@dataclass(frozen=True)
class NodeRecords:
    """node_seconds as phase_summary reads it: `partials`, each node phase folded where read (NODE_PARTIAL_DDL),
    and the raw gate's `checks` (gate.NODE_CHECK_DDL). node_series is not among them: it is node_seconds' own
    columns, written from the raw objects by the driver (series.write_node_series), never through the JVM."""

    partials: DataFrame
    checks: DataFrame
    cached: DataFrame | None = None  # what `release` drops once the table is written

    @classmethod
    def folded(cls, folded: DataFrame) -> NodeRecords:
        """Both from one fold's output (NODE_FOLDED_DDL), cached: the summary and the gate read it."""
        folded = folded.persist()
        return cls(_rows_of(folded, PARTIAL, NODE_PARTIAL_DDL), _rows_of(folded, CHECK, gate.NODE_CHECK_DDL), folded)

    @classmethod
    def of(cls, node_seconds: DataFrame, phases: DataFrame) -> NodeRecords:
        """From raw node_seconds rows already in Spark (as the tests build them): the fold as a mapInArrow."""
        fold = functools.partial(fold_node_seconds, arguments=phase_windows(phases))
        return cls.folded(node_seconds.mapInArrow(fold, NODE_FOLDED_DDL))

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()


def with_group(frame: DataFrame) -> DataFrame:
    """Records written before workload groups have no group: they are the implicit one (records.DEFAULT_GROUP)."""
    if "group" not in frame.columns:
        frame = frame.withColumn("group", F.lit(None).cast("string"))
    return frame.withColumn("group", F.coalesce(F.col("group"), F.lit(records.DEFAULT_GROUP)))


# ------------------------------------------------------------------- faults, recovery, client backlog

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
    throughput, (issue 16) sizing.search.backlog_slope over the steady seconds, as the generator computes it, and
    (issue 22) the per-second figures of the backlog criterion (sizing.adverse): seconds of reduced publish rate and
    of blocked publishers, and where the backlog peaked, ended and last stood above the run's drain level.

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
    seconds in time order (sizing.stats.batch_means; null when too short, or nothing counted)."""
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
    """phase -> sizing.search.backlog_slope over the phase's steady seconds (phases after the first), all workers
    summed, as the generator judges a capacity-search probe."""
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


# --------------------------------------------------------------------------- broker, events, accounting


def broker_phase_stats(samples: DataFrame) -> DataFrame:
    per_second = (samples.groupBy(*PHASE_KEY, F.floor("second").alias("sample_second"))
                  .agg(F.sum("queue_messages").alias("queue_messages"),
                       F.min(F.col("running").cast("int")).alias("all_running")))
    depth = per_second.groupBy(*PHASE_KEY).agg(
        F.max("queue_messages").alias("broker_queue_max"),
        (F.min("all_running") == 0).alias("broker_node_down_seen"))
    nodes = samples.groupBy(*PHASE_KEY).agg(
        F.max("mem_used_bytes").alias("broker_mem_max_bytes"),
        F.max(F.col("mem_used_bytes") / F.col("mem_limit_bytes")).alias("broker_mem_max_fraction"),
        F.max((F.col("mem_alarm") | F.col("disk_alarm")).cast("int")).cast("boolean").alias("broker_alarm"),
        F.min("disk_free_bytes").alias("broker_disk_free_min_bytes"))
    return nodes.join(depth, PHASE_KEY, "outer")


def event_phase_stats(events: DataFrame) -> DataFrame:
    def count(kind: str) -> F.Column:
        return F.sum((F.col("kind") == kind).cast("int"))

    return events.groupBy(*PHASE_KEY).agg(
        count("worker_behind").alias("worker_behind_events"),
        count("connection_blocked").alias("connection_blocked_events"),
        count("fault_error").alias("fault_errors"))


# ------------------------------------------------------------------------------------ capacity-search probes

def probe_decisions(events: DataFrame) -> DataFrame:
    """The generator's online verdict, stage and bracket after every search probe, from its search_probe event."""
    return (events.filter(F.col("kind") == PROBE_EVENT)
            .select(*PHASE_KEY, F.get_json_object("detail", "$.stage").alias("probe_stage"),
                    F.get_json_object("detail", "$.passed").cast("boolean").alias("probe_online_passed"),
                    F.coalesce(F.get_json_object("detail", "$.inconclusive").cast("boolean"),
                               F.lit(False)).alias("probe_inconclusive"),
                    F.get_json_object("detail", "$.last_pass").cast("double").alias("probe_last_pass"),
                    F.get_json_object("detail", "$.first_fail").cast("double").alias("probe_first_fail")))


def recomputed_probe_verdict(rules: Rules) -> Column:
    """sizing.rules.probe_verdict with each search scenario's SLO; null outside search scenarios."""
    verdict = F.lit(None).cast("boolean")
    for name, search in rules.searches:
        verdict = F.when(F.col("scenario") == name,
                         rules_columns.probe_passes(search.slo_p99_ms, search.slo_p999_ms)).otherwise(verdict)
    return verdict


def accounting_stats(accounting: DataFrame) -> DataFrame:
    return with_group(accounting).select(*GROUP_KEY, "lost", "duplicates", "reordered",
                             F.col("consumed_unique"), F.col("redelivered").alias("redelivered_accounted"))


# ------------------------------------------------------------------------------------------ node resources

# resource_limits_frame's rows: one per config (sizing.scalemodel.config_limits).
RESOURCE_LIMITS_COLUMNS = (
    Declared("config_id", "string", "cluster config"),
    Declared("network_limit_mbit_s", "float64", "the instance's network limit, Mbit/s"),
    Declared("volume_iops_limit", "float64", "a data volume's IOPS limit"),
    Declared("volume_mb_s_limit", "float64", "a data volume's throughput limit, MB/s"),
    Declared("ebs_iops_limit", "float64", "the instance's EBS IOPS ceiling"),
    Declared("ebs_mb_s_limit", "float64", "the instance's EBS throughput ceiling, MB/s"),
    *(column for role in VOLUME_ROLES for column in (
        Declared(f"{role}_iops_limit", "float64", f"the {role} volume's own IOPS limit (null: none of its own)"),
        Declared(f"{role}_mb_s_limit", "float64", f"the {role} volume's own MB/s limit (null: none of its own)"))))
RESOURCE_LIMITS_DDL = records.columns_ddl(RESOURCE_LIMITS_COLUMNS)
MB = 1e6


# What the node fold reads of node_seconds (the reader has no column pruning): the figures and the gate's checks.
ROLE_FIGURES = [f"{role}_write_{what}_per_s" for role in VOLUME_ROLES for what in ("bytes", "ops")]
NODE_COLUMNS = list(dict.fromkeys([
    *PHASE_KEY, "second", "node", "target", "missing", "shared_cores", "cpu_busy", "machine_cpu_busy_s",
    "machine_cores", "run_queue", "disk_write_bytes_per_s", "disk_read_bytes_per_s", "disk_write_ops_per_s",
    "net_in_bytes_per_s", "net_out_bytes_per_s", "client_in_bytes_per_s", "client_out_bytes_per_s",
    "internode_in_bytes_per_s", "internode_out_bytes_per_s", "nic_in_bytes_per_s", "nic_out_bytes_per_s",
    *ROLE_FIGURES, *gate.NODE_CHECK_READS]))
WINDOW_COLUMNS = ["start_s", "warmup_s", "duration_s"]


def _sum(frame: pd.DataFrame, *columns: str) -> pd.Series:
    """Spark SQL's a + b: null when either is."""
    return sum((frame[c] for c in columns[1:]), frame[columns[0]])


# Each node's means over its present steady seconds (nulls skipped, as Spark's avg): name -> figure of a row.
NODE_MEANS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "cpu": lambda f: f["cpu_busy"],
    "machine": lambda f: (f["machine_cpu_busy_s"] / f["machine_cores"]).replace([np.inf, -np.inf], np.nan),
    "write_bytes": lambda f: f["disk_write_bytes_per_s"],
    "read_bytes": lambda f: f["disk_read_bytes_per_s"],
    "write_ops": lambda f: f["disk_write_ops_per_s"],
    "net_bytes": lambda f: _sum(f, "net_in_bytes_per_s", "net_out_bytes_per_s"),
    "client_bytes": lambda f: _sum(f, "client_in_bytes_per_s", "client_out_bytes_per_s"),
    "internode_bytes": lambda f: _sum(f, "internode_in_bytes_per_s", "internode_out_bytes_per_s"),
    "nic_in": lambda f: f["nic_in_bytes_per_s"].fillna(f["net_in_bytes_per_s"]),
    "nic_out": lambda f: f["nic_out_bytes_per_s"].fillna(f["net_out_bytes_per_s"]),
    **{f"{role}_{what}": (lambda column: lambda f: f[column])(f"{role}_write_{what}_per_s")
       for role in VOLUME_ROLES for what in ("bytes", "ops")},
}
NODE_KEY = [*PHASE_KEY, "node"]
# One row per node phase (a node phase split over two fold calls: two rows): its steady and present seconds, the
# sums and counts of each mean, and its present cpu_busy values (float64: the p95 is exact).
_NODE_PHASE = (*records.RUN_KEY,
    Declared("phase", "int32", "phase"),
    Declared("node", "string", "node name"),
    Declared("steady_rows", "int64", "the node's rows in the phase's steady window"),
    Declared("seconds", "int64", "of them, the present ones (not missing)"),
    Declared("missing_seconds", "int64", "of them, the missing ones"),
    Declared("target", "string", "local | aws"),
    Declared("shared", "int32", "1: the node shared its cores with the load generator"))
NODE_PARTIAL_COLUMNS = (*_NODE_PHASE,
    Declared("run_queue_max", "float64", "highest run queue"),
    Declared("cpu_values", "binary", "the present cpu_busy values, <f8 array"),
    *(column for m in NODE_MEANS for column in (
        Declared(f"{m}_sum", "float64", f"sum of the node's {m} figures (NODE_MEANS)"),
        Declared(f"{m}_n", "int64", f"count of the node's {m} figures"))))
NODE_PARTIAL_DDL = records.columns_ddl(NODE_PARTIAL_COLUMNS)


NODE_FOLDED_DDL = _union_ddl(NODE_PARTIAL_DDL, records.columns_ddl((
    Declared("kind", "string", "which of the fold's row kinds: partial | check"),)), gate.NODE_CHECK_DDL)


def fold_node_seconds(batches: Iterator[pa.RecordBatch], arguments: list[list], whole_directories: bool = False
                      ) -> Iterator[pa.RecordBatch]:
    """Combiner of raw node_seconds where they are read (NODE_FOLDED_DDL): per node phase, its partial row over the
    phase's steady window (`arguments`: the windows, [*PHASE_KEY, start_s, warmup_s, duration_s] per phase: the
    rows do not know them), and the raw gate's check row (gate.node_checks). ~500 rows of a node phase become 2.
    Its rows fold however they are split: `whole_directories` is not needed."""
    windows = pd.DataFrame(arguments, columns=[*PHASE_KEY, *WINDOW_COLUMNS])
    out_schema = ddl_to_arrow(NODE_FOLDED_DDL)
    for table in gathered(batches):
        frame = table.to_pandas()
        for kind, folded in ((PARTIAL, _node_partials(frame, windows)), (CHECK, gate.node_checks(frame))):
            folded = folded.append_column("kind", pa.array([kind] * folded.num_rows, pa.string()))
            yield from align_to_schema(folded, out_schema).to_batches()


def _node_partials(frame: pd.DataFrame, windows: pd.DataFrame) -> pa.Table:
    # A second is steady inside its phase's window past the warm-up (a row of no known phase never is); present
    # when steady and not missing (a null `missing` is neither, as in Spark SQL).
    rows = frame.merge(windows, on=PHASE_KEY, how="left")
    second = rows["second"]
    steady = ((second >= rows["start_s"] + rows["warmup_s"]) & (second < rows["start_s"] + rows["duration_s"]))
    present = steady & rows["missing"].eq(False)
    gid = rows.groupby(NODE_KEY, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    groups = int(gid.max()) + 1 if len(gid) else 0
    out = rows.groupby(gid)[NODE_KEY].first()

    def count(mask: pd.Series) -> np.ndarray:
        return np.bincount(gid, weights=mask.to_numpy(bool), minlength=groups).astype(np.int64)

    out["steady_rows"], out["seconds"] = count(steady), count(present)
    out["missing_seconds"] = count(steady & rows["missing"].eq(True))
    out["target"] = rows["target"].where(steady).groupby(gid).first()
    out["shared"] = rows["shared_cores"].where(steady).astype("float64").groupby(gid).max()
    out["run_queue_max"] = rows["run_queue"].where(steady).groupby(gid).max()
    cpu = rows["cpu_busy"].where(present)
    held = cpu.notna().to_numpy()
    values, owners = cpu.to_numpy(float)[held], gid[held]
    order = np.argsort(owners, kind="stable")
    out["cpu_values"] = gate.blobs_per_group(owners[order], values[order].astype("<f8"), groups)
    for name, figure in NODE_MEANS.items():
        value = figure(rows).where(present)
        out[f"{name}_sum"] = value.groupby(gid).sum()
        out[f"{name}_n"] = value.notna().groupby(gid).sum()
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(NODE_PARTIAL_DDL),
                                preserve_index=False)


# _final_nodes' rows: one per node phase of a run.
PER_NODE_COLUMNS = (*_NODE_PHASE,
    Declared("cpu_mean", "float64", "mean busy share of the node's cores"),
    Declared("cpu_p95", "float64", "p95 busy share"),
    Declared("machine_mean", "float64", "mean busy share of the machine's cores"),
    Declared("run_queue_max", "float64", "highest run queue"),
    Declared("write_mb_s", "float64", "mean disk write, MB/s"),
    Declared("read_mb_s", "float64", "mean disk read, MB/s"),
    Declared("write_iops", "float64", "mean disk write ops/s"),
    Declared("net_mb_s", "float64", "mean network in + out, MB/s"),
    Declared("client_mb_s", "float64", "of which with clients, MB/s"),
    Declared("internode_mb_s", "float64", "of which between nodes, MB/s"),
    Declared("peak_mbit_s", "float64", "the busier NIC direction, Mbit/s"),
    *(column for role in VOLUME_ROLES for column in (
        Declared(f"{role}_mb", "float64", f"the {role} volume's mean write, bytes/s"),
        Declared(f"{role}_iops", "float64", f"the {role} volume's mean write ops/s"))),
    Declared("cluster_nodes", "int32", "nodes seen in the run (any phase)"))
PER_NODE_DDL = records.columns_ddl(PER_NODE_COLUMNS)


def _final_nodes(partials: pa.Table) -> pa.Table:
    """One run: each node phase's figures from its partial rows (PER_NODE_DDL), and the cluster's size (every node
    seen in the run, in any phase)."""
    frame = partials.to_pandas()
    gid = frame.groupby(NODE_KEY, sort=False, dropna=False).ngroup().to_numpy()
    by = frame.groupby(gid)
    out = by[NODE_KEY].first()
    for column in ("steady_rows", "seconds", "missing_seconds"):
        out[column] = by[column].sum()
    out["target"] = by["target"].first()
    out["shared"] = by["shared"].max()
    out["run_queue_max"] = by["run_queue_max"].max()
    mean = {name: by[f"{name}_sum"].sum() / by[f"{name}_n"].sum().replace(0, np.nan) for name in NODE_MEANS}
    cpu = by["cpu_values"].agg(lambda blobs: np.frombuffer(b"".join(blobs), dtype="<f8"))
    # Spark SQL's exact percentile: linear between the closest ranks (numpy's default)
    out["cpu_p95"] = [float(np.percentile(v, 95)) if len(v) else None for v in cpu]
    out["cpu_mean"], out["machine_mean"] = mean["cpu"], mean["machine"]
    out["write_mb_s"], out["read_mb_s"] = mean["write_bytes"] / MB, mean["read_bytes"] / MB
    out["write_iops"] = mean["write_ops"]
    out["net_mb_s"], out["client_mb_s"] = mean["net_bytes"] / MB, mean["client_bytes"] / MB
    out["internode_mb_s"] = mean["internode_bytes"] / MB
    out["peak_mbit_s"] = np.fmax(mean["nic_in"], mean["nic_out"]) * 8 / MB  # Spark's greatest skips nulls
    for role in VOLUME_ROLES:
        out[f"{role}_mb"], out[f"{role}_iops"] = mean[f"{role}_bytes"], mean[f"{role}_ops"]
    out["cluster_nodes"] = frame["node"].dropna().nunique()
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(PER_NODE_DDL), preserve_index=False)


def phase_windows(phases: DataFrame) -> list[list]:
    """Each phase's window, as the node fold takes them (every workload group has the same: one per phase)."""
    window = (phases.select(*PHASE_KEY, *WINDOW_COLUMNS).dropDuplicates(PHASE_KEY).dropna()).toArrow()
    return [list(row.values()) for row in window.to_pylist()]


def node_phase_stats(partials: DataFrame) -> DataFrame:
    """phase_summary's resource columns from the node fold's partial rows (fold_node_seconds): each node over each
    phase's steady window, then the busiest node per figure. Missing seconds are counted, never averaged in."""
    per_node = partials.groupBy(*RUN_COLS).applyInArrow(_final_nodes, PER_NODE_DDL)
    with_data = F.col("seconds") > 0
    return per_node.where(F.col("steady_rows") > 0).groupBy(*PHASE_KEY).agg(
        F.max("cluster_nodes").cast("int").alias("cluster_nodes"),
        F.sum(with_data.cast("int")).cast("int").alias("resource_nodes"),
        F.sum("missing_seconds").alias("resource_missing_seconds"),
        F.first("target", ignorenulls=True).alias("resource_target"),
        (F.max("shared") > 0).alias("shared_cores"),
        F.max_by("node", "cpu_mean").alias("cpu_busiest_node"),
        F.max("cpu_mean").alias("cpu_busiest_mean"),
        F.max_by("cpu_p95", "cpu_mean").alias("cpu_busiest_p95"),
        F.max("machine_mean").alias("machine_cpu_busy_mean"),
        F.max("run_queue_max").alias("run_queue_max"),
        F.max_by("node", "write_mb_s").alias("disk_busiest_node"),
        F.max("write_mb_s").alias("disk_write_mb_s"),
        F.max("write_iops").alias("disk_write_iops"),
        # an idle device (a scale-model loop volume in a quiet second) writes 0 ops: no size per op, not an error
        F.max_by(F.try_divide(F.col("write_mb_s") * 1000, F.col("write_iops")), "write_iops")
        .alias("disk_write_kb_per_op"),
        F.max("read_mb_s").alias("disk_read_mb_s"),
        F.max_by("node", "net_mb_s").alias("net_busiest_node"),
        F.max("net_mb_s").alias("net_mb_s"),
        F.max_by("client_mb_s", "net_mb_s").alias("net_client_mb_s"),
        F.max_by("internode_mb_s", "net_mb_s").alias("net_internode_mb_s"),
        F.max("peak_mbit_s").alias("net_peak_mbit_s"),
        # each volume's busiest node, by role (intermediate: with_disk_shares turns them into shares of each limit)
        *[(F.max(f"{role}_mb") / MB).alias(f"{role}_write_mb_s") for role in VOLUME_ROLES],
        *[F.max(f"{role}_iops").alias(f"{role}_write_iops") for role in VOLUME_ROLES])


def with_resource_limits(table: DataFrame, limits: DataFrame | None) -> DataFrame:
    """The config's limits (sizing.scalemodel.config_limits), for figures measured within them: AWS's, and a local
    node's in its scale-model envelope (its cores not shared: the sampler read it in its cgroup and loop devices). A
    local node sharing the machine has no limit of its instance type."""
    within_limits = (F.col("resource_target") == "aws") | (F.col("shared_cores") == F.lit(False))
    if limits is None:
        limits = table.sparkSession.createDataFrame([], RESOURCE_LIMITS_DDL)
    joined = table.join(F.broadcast(limits), "config_id", "left")
    for column in limits.columns[1:]:
        joined = joined.withColumn(column, F.when(within_limits, F.col(column)))
    return with_disk_shares(joined)


def with_disk_shares(table: DataFrame) -> DataFrame:
    """Each volume against its own limit (sizing.rules.disk_bound): per role, the busiest node's write IOPS and MB/s
    over that role's volume limits; the highest share names `volume_busiest_role`. Records without per-volume
    figures (before issue 22) read the node's totals as the data volume's. And the node's volumes together against
    the instance's EBS ceiling (`ebs_load_share`)."""
    def share(figure: Column, limit: str) -> Column:
        return figure / F.col(limit)

    figures = {role: (F.col(f"{role}_write_iops"), F.col(f"{role}_write_mb_s")) for role in VOLUME_ROLES}
    figures[DATA_ROLE] = (F.coalesce(F.col(f"{DATA_ROLE}_write_iops"), F.col("disk_write_iops")),
                          F.coalesce(F.col(f"{DATA_ROLE}_write_mb_s"), F.col("disk_write_mb_s")))
    shares = {role: F.greatest(share(iops, f"{role}_iops_limit"), share(mb_s, f"{role}_mb_s_limit"))
              for role, (iops, mb_s) in figures.items()}
    top = F.greatest(*shares.values())
    busiest = F.lit(None).cast("string")
    for role in reversed(VOLUME_ROLES):  # the first role in VOLUME_ROLES order wins a tie
        busiest = F.when(shares[role] == top, F.lit(role)).otherwise(busiest)
    return (table.withColumn("volume_load_share", top).withColumn("volume_busiest_role", busiest)
            .withColumn("ebs_load_share", F.greatest(share(F.col("disk_write_iops"), "ebs_iops_limit"),
                                                     share(F.col("disk_write_mb_s"), "ebs_mb_s_limit"))))


def resource_limits_frame(spark: SparkSession, campaign: Campaign) -> DataFrame:
    """One row per config of the campaign: its limits (sizing.scalemodel.config_limits: the catalog's, or the scaled
    envelope's on the local scale model): network, the EBS ceiling, and every volume's own limits by role (null where
    the role has no volume of its own)."""
    rows = []
    for shape in campaign.clusters:
        limits = config_limits(campaign, shape)
        roles = [(limits.roles[r].iops, limits.roles[r].mb_s) if r in limits.roles else (None, None)
                 for r in VOLUME_ROLES]
        rows.append((shape.config_id, limits.network_mbit_s, limits.volume_iops, limits.volume_mb_s, limits.ebs_iops,
                     limits.ebs_mb_s, *(x for pair in roles for x in pair)))
    # From pandas (Arrow, a local relation): a list of tuples would become a Python RDD whose broadcast job
    # starts Python workers before anything else runs (measured: the first, serial stage of the job).
    columns = [c.name for c in RESOURCE_LIMITS_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns).astype({c: "float64" for c in columns[1:]})
    return spark.createDataFrame(frame, RESOURCE_LIMITS_DDL)


# ------------------------------------------------------------------------------------------ assemble


def rate_mode_columns() -> list[Column]:
    """Issue 13: the phase's rate mode and the basis of its latency figures (phases written before them are
    scheduled, measured from the intended send time)."""
    return [F.coalesce(F.col("rate_mode"), F.lit("scheduled")).alias("rate_mode"),
            F.coalesce(F.col("latency_basis"), F.lit("intended")).alias("latency_basis")]


def group_columns(phases: DataFrame) -> list[Column]:
    """Issue 14: whether the row's group is the foreground (phases written before groups: their one group is)."""
    detail = F.col("group_detail") if "group_detail" in phases.columns else F.lit(None).cast("string")
    foreground = F.col("foreground") if "foreground" in phases.columns else F.lit(None).cast("boolean")
    return [F.coalesce(foreground, F.lit(True)).alias("foreground"), detail.alias("group_detail")]


def summarise(phases: DataFrame, clients: ClientRecords, accounting: DataFrame, events: DataFrame,
              broker_samples: DataFrame, rules: Rules, nodes: NodeRecords | None = None,
              resource_limits: DataFrame | None = None) -> DataFrame:
    """The phase_summary table from the raw record types (pure DataFrame transform)."""
    base = with_group(phases).select(*GROUP_KEY, "phase_name", "start_s", "duration_s", "warmup_s", "target_rate",
                                     "processing_ms_start", "processing_ms_end", *rate_mode_columns(),
                                     *group_columns(phases))
    joined = (base.join(client_phase_stats(clients.partials), GROUP_KEY, "left")
              .join(phase_dynamics(clients.series.select(*COUNT_BLOCK_COLUMNS), events), GROUP_KEY, "left")
              .join(accounting_stats(accounting), GROUP_KEY, "left")
              .join(event_phase_stats(events), PHASE_KEY, "left")
              .join(broker_phase_stats(broker_samples), PHASE_KEY, "left"))
    steady = F.col("duration_s") - F.col("warmup_s")
    with_rates = (joined.withColumn("steady_s", steady)
                  .withColumn("publish_rate", F.col("published") / steady)
                  .withColumn("confirm_rate", F.col("confirmed") / steady)
                  .withColumn("consume_rate", F.col("consumed") / steady)
                  .withColumn("faults", F.coalesce("faults", F.lit(0)))
                  .withColumn("backlog_max", F.coalesce("broker_queue_max", "backlog_max_client")))
    with_validity = (with_rates.withColumn("invalid_reason", rules_columns.invalid_reason())
                     .withColumn("valid", F.col("invalid_reason").isNull()))
    # runs recorded before node_seconds existed: no partial rows, and the resource columns stay null
    partials = nodes.partials if nodes is not None else phases.sparkSession.createDataFrame([], NODE_PARTIAL_DDL)
    with_validity = with_validity.join(node_phase_stats(partials), PHASE_KEY, "left")
    with_validity = (with_resource_limits(with_validity, resource_limits)
                     .withColumn("bottleneck", rules_columns.bottleneck())
                     .withColumn("bottleneck_detail", rules_columns.bottleneck_detail()))
    with_validity = (with_validity.join(probe_decisions(events), PHASE_KEY, "left")
                     .withColumn("probe_passed", recomputed_probe_verdict(rules)))
    return (with_validity.withColumn("slo_p99_ms", F.lit(float(rules.slo_p99_ms)))
            .withColumn("matched_target", rules_columns.matched_target(F.col("slo_p99_ms"))
                        & judged_against_target(F.col("rate_mode")))
            # one expression list, one call: a Column per column was ~360 py4j calls (0.8 s of driver time)
            .selectExpr(*[f"CAST(`{c.name}` AS {records.SPARK_TYPES[c.type]}) AS `{c.name}`"
                          for c in records.PHASE_SUMMARY]))


# --------------------------------------------------------------------------------------------- I/O


# The node fold reads NODE_COLUMNS of node_seconds; its windows are bound per read (NodeRecords, run).
NODE_FOLD = ObjectFold("spark_jobs.lib.phase_summary:fold_node_seconds", NODE_FOLDED_DDL,
                       records.spark_ddl("node_seconds", NODE_COLUMNS))


def run(spark: SparkSession, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
        rules: Rules, resource_limits: DataFrame | None = None,
        raw_gate: Callable[[pa.Table, pa.Table], None] | None = None) -> None:
    """Read these configs' raw records of these runs, summarise them, replace their phase_summary partitions (one
    per config and run: every other run's rows of the config stay). `raw_gate`: called with the folds' check rows
    (gate.client_checks, gate.node_checks) once the summary is computed and before anything is written (raising
    stops the write)."""
    objects = RawObjects.list(spec, campaign, configs, run_ids)
    raw = {rt: objects.read(spark, rt) for rt in records.RECORD_TYPES if rt not in ("client_seconds", "node_seconds")}
    # client_seconds and node_seconds are read once, never whole: folded per worker or node phase where read, and
    # checked for the raw gate in the same pass (and client_seconds' per-second columns summed over workers).
    windows = phase_windows(raw["phases"])
    clients = ClientRecords.folded(objects.read(spark, "client_seconds", CLIENT_FOLD.with_arguments(windows)))
    nodes = NodeRecords.folded(objects.read(spark, "node_seconds", NODE_FOLD.with_arguments(windows)))
    table = summarise(raw["phases"], clients, raw["accounting"], raw["events"], raw["broker_samples"], rules,
                      nodes=nodes, resource_limits=resource_limits)
    checked = None if raw_gate is None else lambda: raw_gate(clients.checks.toArrow(), nodes.checks.toArrow())
    start = time.monotonic()
    replace_table(table, spec, TABLE, campaign, run_ids, configs, checked)
    nodes.release()
    _progress(f"phase_summary: {len(configs)} config(s) folded, summarised and written", start)
    for chunk in series.config_chunks(objects, configs):
        write_series(spec, campaign, chunk, run_ids, clients, raw["broker_samples"], raw["events"])
        _progress(f"phase_summary: client_series, broker_series and run_events of {', '.join(chunk)} written", start)
    series.write_node_series(objects, campaign, configs, run_ids)
    _progress("phase_summary: node_series written", start)
    clients.release()


def _progress(what: str, start: float) -> None:
    print(f"{what} ({time.monotonic() - start:.1f} s)", flush=True)


def write_series(spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
                 clients: ClientRecords, broker_samples: DataFrame, events: DataFrame) -> None:
    """Issue 35: the tables beside phase_summary of these configs and runs (sizing.records.BESIDE_SUMMARY: the
    per-second series and the run's events), from what phase_summary read, into the same partitions as
    phase_summary's; node_series apart (series.write_node_series)."""
    def of_chunk(frame: DataFrame) -> DataFrame:  # before the per-run grouping: each write computes its own runs
        return frame.filter(F.col("config_id").isin(list(configs)))

    frames = {"client_series": client_series(of_chunk(clients.series)),
              "broker_series": series.broker_series(of_chunk(broker_samples)),
              "run_events": of_chunk(events).selectExpr(*series.cast_to("run_events"))}
    for name, frame in frames.items():
        replace_table(frame, spec, name, campaign, run_ids, configs)


def step(spark: SparkSession, spec: StoreSpec, campaign: Campaign, configs: Sequence[str], run_ids: Sequence[str],
         validate: bool = False, docs_dir: str | None = None, raw_gate: gate.RawGate | None = None) -> None:
    """The analysis job's first step: the phase_summary partitions of these configs from these runs. With
    `validate`, GX checks the raw batches before anything is written and each written partition after.

    The raw gate (`raw_gate`, or one started here) checks the client and node rows in the reads that fold them;
    the summary is written only once it has passed, and a failed gate stops the job with nothing written."""
    limits, rules = resource_limits_frame(spark, campaign), Rules.of(campaign)
    if not validate:
        run(spark, spec, campaign.name, configs, run_ids, rules, resource_limits=limits)
    else:
        raw_gate = raw_gate or gate.RawGate(spec, campaign, configs, run_ids, docs_dir)
        try:
            run(spark, spec, campaign.name, configs, run_ids, rules, resource_limits=limits,
                raw_gate=raw_gate.passed)
        except Exception:
            raw_gate.passed()  # a batch that failed its gate says so, not the summary's error on it
            raise
        gate.gate(spec, "phase_summary", campaign, configs, run_ids, docs_dir)
    print(f"phase_summary: wrote {', '.join(configs)} of {campaign.name}, run(s) {', '.join(run_ids)}, to "
          f"{spec.uri(layout.table_prefix(TABLE, campaign.name))}", flush=True)
