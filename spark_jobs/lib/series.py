"""The per-second series tables (issue 35; schemas sizing.records.CLIENT_SERIES, BROKER_SERIES, NODE_SERIES), a
library module of the analysis: phase_summary's folds carry what they need, this module turns it into the tables.

- client_series: the client fold's series blocks (phase_summary.SERIES_ARRAYS) carry, besides the per-second
  counts, each second's merged histograms as sparse (bucket, count) entries (`hist_blocks`); `client_rows` merges
  the blocks of one run again (a second held by two fold calls) and reads the percentiles, nearest rank as
  sizing.histogram.quantile_from_counts, vectorised over every second of the run;
- broker_series: broker_samples per node and whole second, the node's last sample in it;
- node_series: node_seconds' figures per node and second, projected where they are read (the node fold).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sizing import records
from sizing.histogram import WIRE_DTYPE, bucket_value

# client_seconds' histogram column -> the client_series columns read from it
HISTOGRAMS = {"e2e_hist": "e2e", "confirm_hist": "confirm", "publish_delay_hist": "publish_delay"}
QUANTILES = {"p50": 0.50, "p75": 0.75, "p95": 0.95, "p99": 0.99, "p999": 0.999}
# Each histogram travels in a series block as its entries (WIRE_DTYPE, seconds in the block's order) and the number
# of entries per second (<i4).
HIST_ARRAYS = {column: (f"{column}_entries", f"{column}_lengths") for column in HISTOGRAMS}
HIST_BLOCK_DDL = ", ".join(f"{name} BINARY" for pair in HIST_ARRAYS.values() for name in pair)
# Above this many (group x bucket) cells a merge sorts its entries rather than counting them into a dense array.
DENSE_CELLS = 1 << 23


def entries_of(column: pa.Array | pa.ChunkedArray, row_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every wire entry of a histogram column with the group of its row (`row_group[i]`; negative: no group, left
    out): (owners, entries of WIRE_DTYPE)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    owners, wires, start = [], [], 0
    for chunk in chunks:
        groups = row_group[start: start + len(chunk)]
        start += len(chunk)
        if chunk.type != pa.large_binary():
            chunk = chunk.cast(pa.large_binary())
        if len(chunk) == 0:
            continue
        _, offsets_buf, data_buf = chunk.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[chunk.offset: chunk.offset + len(chunk) + 1]
        if data_buf is None or offsets[-1] == offsets[0]:
            continue
        wire = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]: offsets[-1]].view(WIRE_DTYPE)
        rows = np.repeat(groups, np.diff(offsets) // WIRE_DTYPE.itemsize)
        kept = rows >= 0
        owners.append(rows[kept])
        wires.append(wire[kept])
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, WIRE_DTYPE)
    return np.concatenate(owners).astype(np.int64), np.concatenate(wires)


def merge_entries(owners: np.ndarray, entries: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Histogram entries summed per (owner, bucket): (owners, entries) sorted by owner, then bucket (each owner's
    entries are then its merged histogram in sizing.histogram's wire format). Counts are clamped to uint32 as
    sizing.histogram.encode_counts clamps them."""
    if len(owners) == 0:
        return owners, entries
    buckets = entries["bucket"].astype(np.int64)
    low = int(buckets.min())
    span = int(buckets.max()) - low + 1
    keys = owners * span + (buckets - low)
    counts = entries["count"].astype(np.float64)
    if groups * span <= DENSE_CELLS:
        dense = np.bincount(keys, weights=counts, minlength=groups * span)
        cells = np.flatnonzero(dense)
        summed = dense[cells]
    else:
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        cells, summed = keys[starts], np.add.reduceat(counts, starts)
    out = np.empty(len(cells), WIRE_DTYPE)
    out["bucket"] = cells % span + low
    out["count"] = np.minimum(summed, np.iinfo(np.uint32).max)
    return cells // span, out


def quantiles_ms(owners: np.ndarray, entries: np.ndarray, groups: int) -> dict[str, np.ndarray]:
    """Per group of merged entries (merge_entries' order): nearest-rank p50..p99.9 in ms (NaN: no sample) and the
    sample count, as sizing.histogram.quantile_from_counts reads one histogram."""
    counts = entries["count"].astype(np.float64)
    totals = np.bincount(owners, weights=counts, minlength=groups)
    out: dict[str, np.ndarray] = {"samples": totals.astype(np.int64)}
    cumulative = np.cumsum(counts)
    before = np.cumsum(totals) - totals  # every earlier group's samples
    held = totals > 0
    values = bucket_value(entries["bucket"].astype(np.int64)) / 1000.0 if len(entries) else np.zeros(0)
    for name, q in QUANTILES.items():
        rank = np.maximum(1, np.ceil(q * totals - 1e-9))
        at = np.searchsorted(cumulative, before + rank, side="left")
        out[name] = np.where(held, values[np.minimum(at, max(len(values) - 1, 0))] if len(values) else np.nan,
                             np.nan)
    return out


def hist_blocks(table: pa.Table, row_group: np.ndarray, order: np.ndarray, block_of: np.ndarray, blocks: int,
                groups: int) -> dict[str, list[bytes]]:
    """The series blocks' histogram columns (HIST_ARRAYS): each (block key, second) group's merged histogram
    (`row_group`: each table row's group; `order`: the groups in block then second order, `block_of` their
    blocks)."""
    from spark_jobs.lib.gate import blobs_per_group

    out: dict[str, list[bytes]] = {}
    for column, (entries_name, lengths_name) in HIST_ARRAYS.items():
        owners, entries = merge_entries(*entries_of(table.column(column), row_group), groups)
        per_group = np.bincount(owners, minlength=groups)
        firsts = np.cumsum(per_group) - per_group
        lengths = per_group[order]
        index = np.repeat(firsts[order] - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
        out[entries_name] = blobs_per_group(np.repeat(block_of, lengths), entries[index], blocks)
        out[lengths_name] = blobs_per_group(block_of, lengths.astype("<i4"), blocks)
    return out


def client_rows(rows: pd.DataFrame, blocks: pd.DataFrame, key: Sequence[str]) -> pd.DataFrame:
    """One run's client_series rows (sizing.records.CLIENT_SERIES) from its series blocks: `rows`, the blocks'
    seconds as rows in block order (one per block and second, phase_summary.block_seconds), `blocks` the blocks
    themselves (their HIST_ARRAYS). A (group, second) held by several rows is summed, its histograms merged."""
    columns = records.table_columns("client_series")
    if rows.empty:
        return pd.DataFrame(columns=columns)
    final = rows.groupby(["group", "second"], sort=True, dropna=False).ngroup().to_numpy()
    by = rows.groupby(final, sort=True)
    out = by[[*key, "group", "second"]].first()
    out["phase"], out["warmup"] = by["phase"].max(), by["warmup"].max()
    for column in ("workers", "scheduled", "published", "confirmed", "consumed", "acked"):
        out[column] = by[column].sum()
    out["offered_rate"] = by["target_rate"].max()
    out["blocked_ms"] = by["blocked_ms"].max()
    out["e2e_max_ms"] = by["e2e_max_us"].max() / 1000.0
    out["publish_delay_max_ms"] = by["publish_delay_max_us"].max() / 1000.0
    groups = len(out)
    for column, (entries_name, lengths_name) in HIST_ARRAYS.items():
        lengths = np.frombuffer(b"".join(blocks[lengths_name]), dtype="<i4")
        entries = np.frombuffer(b"".join(blocks[entries_name]), dtype=WIRE_DTYPE)
        merged = quantiles_ms(*merge_entries(np.repeat(final, lengths), entries, groups), groups)
        prefix = HISTOGRAMS[column]
        if prefix == "publish_delay":
            out["publish_delay_p99_ms"] = merged["p99"]
            continue
        if prefix == "e2e":
            out["e2e_samples"] = merged["samples"]
        for name in QUANTILES:
            out[f"{prefix}_{name}_ms"] = merged[name]
    return out.reset_index(drop=True)[columns]


def client_table(rows: pd.DataFrame, blocks: pd.DataFrame, key: Sequence[str]) -> pa.Table:
    return pa.Table.from_pandas(client_rows(rows, blocks, key), schema=arrow_schema("client_series"),
                                preserve_index=False)


def arrow_schema(table: str) -> pa.Schema:
    from spark_jobs.lib.s3source import ddl_to_arrow

    return ddl_to_arrow(records.table_ddl(table))


def broker_series(samples: DataFrame) -> DataFrame:
    """broker_series (sizing.records.BROKER_SERIES): per run, node and whole second, the node's last sample in it."""
    key = [c.name for c in records.RUN_KEY]
    figures = [c for c in records.table_columns("broker_series") if c not in (*key, "second", "node", "samples",
                                                                                "mem_share")]
    last = F.max_by(F.struct(*figures), "ts")
    per_second = (samples.groupBy(*key, "node", F.floor("second").cast("int").alias("second"))
                  .agg(F.count(F.lit(1)).cast("int").alias("samples"), last.alias("last")))
    return (per_second.select("*", *(F.col(f"last.{c}").alias(c) for c in figures)).drop("last")
            .withColumn("mem_share", F.try_divide(F.col("mem_used_bytes").cast("double"),
                                                  F.col("mem_limit_bytes").cast("double")))
            .selectExpr(*cast_to("broker_series")))


def cast_to(table: str) -> list[str]:
    """A select list that gives a frame exactly the table's columns and types, in order."""
    return [f"CAST(`{c.name}` AS {records.SPARK_TYPES[c.type]}) AS `{c.name}`" for c in records.TABLES[table]]


