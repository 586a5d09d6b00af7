"""The client fold (shared by phase_summary, client_series and the raw gate): client_seconds read once, folded where
read into per-worker partials, per-second series blocks and the raw gate's check rows (FOLDED_DDL).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from sizing.contract import records
from sizing.contract.histogram import encode_counts
from sizing.contract.records import (
    Column as Declared,  # a fold's column: name, type, meaning (pyspark's Column is another)
)
from sizing.criteria import stats
from sizing.criteria.rules import consumer_ceiling
from spark_jobs.lib import gate, histmerge, series
from spark_jobs.lib.phase_summary.keys import (
    CHECK,
    GROUP_KEY,
    PARTIAL,
    PHASE_KEY,
    RUN_COLS,
    SERIES,
    WINDOW_COLUMNS,
    phase_windows,
    rows_of,
    union_ddl,
    with_group_rows,
)
from spark_jobs.lib.s3source import align_to_schema, ddl_to_arrow, gathered, gathered_whole
from spark_jobs.lib.tableio import ObjectFold

SUM_COLS = ["scheduled", "published", "confirmed", "nacked", "returned", "consumed", "redelivered"]
# Issue 44: a prefetch slot's trip in two parts, sums and counts (sizing.criteria.rules.prefetch_ceiling); null in
# records written before them, which add nothing.
TRIP_SUMS = ["ack_hold_us", "ack_holds", "refill_us", "refills"]
HIST_COLS = {"e2e_hist": "e2e", "confirm_hist": "confirm", "publish_delay_hist": "publish_delay"}
# Issue 32: the end-to-end histogram of each window of the phase's planned steady seconds
# (sizing.criteria.stats.window_layout: the windows a percentile's spread within one run comes from,
# sizing.criteria.stats.sectioned_rse); null where the fold was not given the phases' windows.
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
    Declared("consumer_capacity", "float64", "consumer ceilings (sizing.criteria.rules.consumer_ceiling), summed over "
             "the steady seconds"),
    Declared("consumers", "int64", "the most consumers of the worker in a steady second"),
    Declared("prefetch", "float64", "the largest prefetch in force in a steady second"),
    *(Declared(c, "int64", f"{c}, summed over the steady seconds (TRIP_SUMS)") for c in TRIP_SUMS))
PARTIAL_DDL = records.columns_ddl(PARTIAL_COLUMNS)


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
FOLDED_DDL = union_ddl(PARTIAL_DDL, records.columns_ddl((
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
        table = with_group_rows(table)
        steady = pc.fill_null(pc.invert(table.column("warmup")), False).to_numpy(zero_copy_only=False)
        for kind, folded in ((PARTIAL, _partials(table, steady, windows)),
                             (SERIES, _series(table, (opens_inside, closes_inside))),
                             (CHECK, gate.client_checks(table) if table.num_rows else None)):
            if folded is not None:
                folded = folded.append_column("kind", pa.array([kind] * folded.num_rows, pa.string()))
                yield from align_to_schema(folded, out_schema).to_batches()


PARTIAL_READS = [*GROUP_KEY, "worker", "second", *SUM_COLS, "blocked_ms", "cpu_s", "publish_delay_max_us"]
# Issue 44: the per-second client settings behind the phase's client ceilings
# (sizing.criteria.rules.publisher_window_ceiling, consumer_ceiling); per second, as a client-setting step changes them
# at its boundary.
SETTING_READS = ["publishers", "confirms_in_flight", "consumers", "processing_ms", "prefetch", *TRIP_SUMS]


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
                                 consumer_capacity=("consumer_capacity", "sum"), consumers=("consumers", "max"),
                                 prefetch=("prefetch", "max"), **{c: (c, "sum") for c in TRIP_SUMS})
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
    """Each second's consumer ceiling (sizing.criteria.rules.consumer_ceiling, summed per worker phase and averaged by
    _final_client): a worker without consumers adds none, a 0 ms processing time makes it unknown (inf)."""
    consumers = frame["consumers"].to_numpy(dtype=float, na_value=0.0)
    processing = frame["processing_ms"].to_numpy(dtype=float, na_value=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = consumer_ceiling(consumers, processing)
    return frame.assign(consumer_capacity=np.where(consumers > 0, ceiling, 0.0))


def steady_windows(arguments: list[list]) -> pd.DataFrame:
    """Per phase (PHASE_KEY), where its windows lie (sizing.criteria.stats.window_layout over its planned steady
    seconds, at least SECTION_MIN_SECONDS of them): the first second of the first window and a window's length; phases
    too short for a percentile's spread are left out."""
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


# The fold decodes only the columns a phase figure, the series or the gate's checks come from: 37 of client_seconds'
# 42 (issue 44 added the settings and the trips of the client ceilings, SETTING_READS).
CLIENT_FOLD = ObjectFold("spark_jobs.lib.phase_summary.client_fold:fold_client_seconds", FOLDED_DDL, records.spark_ddl(
    "client_seconds", list(dict.fromkeys([*GROUP_KEY, "worker", "second", "warmup", *SUM_COLS, *SERIES_COUNTS,
                                          *SERIES_MAX, "cpu_s", *HIST_COLS, *SETTING_READS,
                                          *gate.CLIENT_CHECK_READS]))))


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
        return cls(_partial_rows(folded), rows_of(folded, SERIES, SERIES_DDL), rows_of(folded, CHECK,
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
        return cls(_partial_rows(folded), rows_of(folded, SERIES, SERIES_DDL))


def _partial_rows(folded: DataFrame) -> DataFrame:
    return rows_of(folded, PARTIAL, PARTIAL_DDL)
