"""What the per-second series tables share (issue 35; schemas sizing.contract.records.CLIENT_SERIES, BROKER_SERIES,
NODE_SERIES), a library module of the analysis; each table's transform is its own module of the phase_summary package
(client_series, broker_series, node_series, run_events).

- client_series' histograms: the client fold's series blocks (phase_summary.client_fold.SERIES_ARRAYS) carry,
  besides the per-second counts, each second's percentiles read from its workers' histograms merged (`hist_blocks`;
  nearest rank as sizing.contract.histogram.quantile_from_counts, vectorised), and for the seconds another fold call may
  hold too their merged entries; `client_rows` merges those again per run;
- every series table: its select list and Arrow schema (`cast_to`, `arrow_schema`), and the configs each write
  collects at once (`config_chunks`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from sizing.contract import records
from sizing.contract.histogram import MAX_BUCKET, WIRE_DTYPE, bucket_value
from spark_jobs.lib.gate import blobs_per_group
from spark_jobs.lib.s3source import ddl_to_arrow
from spark_jobs.lib.tableio import RawObjects

# client_seconds' histogram column -> the client_series columns read from it (publish lateness: its exact max)
HISTOGRAMS = {"e2e_hist": "e2e", "confirm_hist": "confirm"}
QUANTILES = records.LATENCY_QUANTILES  # client_series' percentiles: the tables' one list
# Each histogram travels in a series block per second as its percentiles (<f8 x 5, NaN: no sample) and its sample
# count (<i8), final where the fold held every row of the second; and, for a second another fold call may also hold,
# its merged entries (WIRE_DTYPE, seconds in the block's order) with their number per second (<i4; -1: final, none
# shipped). Shipping every second's entries would be ~1.4 KB per histogram and second through the JVM and its cache.
HIST_ARRAYS = {column: {part: f"{column}_{part}" for part in ("quantiles", "samples", "entries", "lengths")}
               for column in HISTOGRAMS}
HIST_BLOCK_DDL = ", ".join(f"{name} BINARY" for parts in HIST_ARRAYS.values() for name in parts.values())
FINAL = -1
# Cells of (group x bucket) counted at once: a table of one worker per group is sliced, not held whole.
DENSE_CELLS = 1 << 22


def entries_of(column: pa.Array | pa.ChunkedArray, row_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every wire entry of a histogram column with the group of its row (`row_group[i]`; negative: no group, left
    out): (owners, entries of WIRE_DTYPE). Chunk by chunk, offsets as they are (no copy of the blobs)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    owners, wires, start = [], [], 0
    for chunk in chunks:
        groups = row_group[start: start + len(chunk)]
        start += len(chunk)
        if len(chunk) == 0:
            continue
        _, offsets_buf, data_buf = chunk.buffers()
        width = np.int64 if chunk.type == pa.large_binary() else np.int32
        offsets = np.frombuffer(offsets_buf, dtype=width)[chunk.offset: chunk.offset + len(chunk) + 1]
        if data_buf is None or offsets[-1] == offsets[0]:
            continue
        wire = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]: offsets[-1]].view(WIRE_DTYPE)
        owners.append(np.repeat(groups, np.diff(offsets) // WIRE_DTYPE.itemsize))
        wires.append(wire)
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, WIRE_DTYPE)
    owners_all, wire_all = np.concatenate(owners), np.concatenate(wires)
    kept = owners_all >= 0
    return (owners_all, wire_all) if kept.all() else (owners_all[kept], wire_all[kept])


def _cells(owners: np.ndarray, columns: np.ndarray, first: int, groups: int, span: int
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """Each entry's cell of the (groups, span) counts of the groups first .. first + groups - 1, and the mask of the
    entries that are theirs (None: every entry is)."""
    if first == 0 and groups * span >= (int(owners.max()) + 1) * span:
        return owners * span + columns, None
    mine = (owners >= first) & (owners < first + groups)
    return (owners[mine] - first) * span + columns[mine], mine


def _quantiles(dense: np.ndarray, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of dense counts (column j: bucket buckets[j]): nearest-rank QUANTILES in ms (NaN: no sample), as
    sizing.contract.histogram.quantile_from_counts reads one histogram, and the sample count."""
    cumulative = np.cumsum(dense, axis=1)
    totals = cumulative[:, -1] if dense.shape[1] else np.zeros(len(dense))
    out = np.full((len(dense), len(QUANTILES)), np.nan)
    held = np.flatnonzero(totals > 0)
    if not len(held):
        return out, totals.astype(np.int64)
    values = bucket_value(buckets) / 1000.0
    # Row k's cumulative counts lifted by k * lift (lift > any total) are one ascending array: the buckets of row k
    # below a rank r are then one binary search for k * lift + r, less the k * span cells of the rows before.
    span, lift = dense.shape[1], float(totals[held].max()) + 1.0
    offsets = np.arange(len(held), dtype=np.float64) * lift
    lifted = (cumulative[held] + offsets[:, None]).ravel()
    for i, q in enumerate(QUANTILES.values()):
        rank = np.maximum(1, np.ceil(q * totals[held] - 1e-9))
        below = np.searchsorted(lifted, offsets + rank, side="left") - np.arange(len(held)) * span
        out[held, i] = values[below]
    return out, totals.astype(np.int64)


def merged(owners: np.ndarray, entries: np.ndarray, groups: int, shipped: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each group's histogram merged: its percentiles (groups x QUANTILES, ms) and sample count, and for the groups
    `shipped` (a mask) their merged entries in group order (owners, WIRE_DTYPE entries, sorted by bucket). Counted
    densely over the buckets present only (a latency spans a few hundred of the 2048)."""
    quantiles, samples = np.full((groups, len(QUANTILES)), np.nan), np.zeros(groups, np.int64)
    kept_owners, kept_entries = [np.zeros(0, np.int64)], [np.zeros(0, WIRE_DTYPE)]
    if len(owners) == 0 or groups == 0:
        return quantiles, samples, kept_owners[0], kept_entries[0]
    present = np.zeros(MAX_BUCKET + 1, dtype=bool)
    present[entries["bucket"]] = True
    buckets = np.flatnonzero(present)
    columns = (np.cumsum(present) - 1)[entries["bucket"]]
    span = len(buckets)
    counts = entries["count"].astype(np.float64)
    step = max(1, DENSE_CELLS // span)
    for first in range(0, groups, step):
        count = min(step, groups - first)
        keys, mine = _cells(owners, columns, first, count, span)
        dense = np.bincount(keys, weights=counts if mine is None else counts[mine],
                            minlength=count * span).reshape(count, span)
        quantiles[first: first + count], samples[first: first + count] = _quantiles(dense, buckets)
        ids = np.flatnonzero(shipped[first: first + count])
        rows, cells = np.nonzero(dense[ids])
        if len(rows):
            wire = np.empty(len(rows), WIRE_DTYPE)
            wire["bucket"] = buckets[cells]
            wire["count"] = np.minimum(dense[ids[rows], cells], np.iinfo(np.uint32).max)
            kept_owners.append(ids[rows] + first)
            kept_entries.append(wire)
    return quantiles, samples, np.concatenate(kept_owners), np.concatenate(kept_entries)


def hist_blocks(table: pa.Table, row_group: np.ndarray, order: np.ndarray, block_of: np.ndarray, blocks: int,
                shipped: np.ndarray) -> dict[str, list[bytes]]:
    """The series blocks' histogram columns (HIST_ARRAYS) of one fold call. `row_group`: each table row's (block
    key, second) group; `order`: the groups in block then second order, `block_of` their blocks; `shipped`: the
    groups another fold call may also hold (their entries travel, to be merged again by client_rows)."""
    groups = len(order)
    out: dict[str, list[bytes]] = {}
    for column, names in HIST_ARRAYS.items():
        quantiles, samples, owners, entries = merged(*entries_of(table.column(column), row_group), groups, shipped)
        per_group = np.bincount(owners, minlength=groups)
        firsts = np.cumsum(per_group) - per_group
        lengths = per_group[order]
        index = np.repeat(firsts[order] - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
        out[names["entries"]] = blobs_per_group(np.repeat(block_of, lengths), entries[index], blocks)
        out[names["lengths"]] = blobs_per_group(block_of, np.where(shipped[order], lengths, FINAL).astype("<i4"),
                                                blocks)
        out[names["quantiles"]] = blobs_per_group(block_of, quantiles[order].astype("<f8"), blocks)
        out[names["samples"]] = blobs_per_group(block_of, samples[order].astype("<i8"), blocks)
    return out


def client_rows(rows: pd.DataFrame, blocks: pd.DataFrame, key: Sequence[str]) -> pd.DataFrame:
    """One run's client_series rows (sizing.contract.records.CLIENT_SERIES) from its series blocks: `rows`, the
    blocks' seconds as rows in block order (one per block and second, phase_summary.client_fold.block_seconds),
    `blocks` the blocks themselves (their HIST_ARRAYS). A (group, second) held by several rows is summed and its
    shipped histograms merged; one held by a single row keeps the percentiles its fold read."""
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
    held_by = np.bincount(final, minlength=groups)
    for column, names in HIST_ARRAYS.items():
        lengths = np.frombuffer(b"".join(blocks[names["lengths"]]), dtype="<i4")
        quantiles = np.frombuffer(b"".join(blocks[names["quantiles"]]), dtype="<f8").reshape(-1, len(QUANTILES))
        samples = np.frombuffer(b"".join(blocks[names["samples"]]), dtype="<i8")
        entries = np.frombuffer(b"".join(blocks[names["entries"]]), dtype=WIRE_DTYPE)
        single = held_by[final] == 1
        if np.any(~single & (lengths == FINAL)):
            raise ValueError("client_series: a second held by two fold calls was folded as final (records not read "
                             "in key order)")
        figures = np.full((groups, len(QUANTILES)), np.nan)
        counts = np.zeros(groups, np.int64)
        figures[final[single & (lengths == FINAL)]] = quantiles[single & (lengths == FINAL)]
        counts[final[single & (lengths == FINAL)]] = samples[single & (lengths == FINAL)]
        again = lengths != FINAL
        if again.any():  # merged over the seconds redone only (a few per block), not all of the run's
            redone = np.unique(final[again])
            owners = np.repeat(np.searchsorted(redone, final[again]), lengths[again])
            q, n, _, _ = merged(owners, entries, len(redone), np.zeros(len(redone), bool))
            figures[redone], counts[redone] = q, n
        prefix = HISTOGRAMS[column]
        if prefix == "e2e":
            out["e2e_samples"] = counts
        for i, name in enumerate(QUANTILES):
            out[f"{prefix}_{name}_ms"] = figures[:, i]
    return out.reset_index(drop=True)[columns]


def client_table(rows: pd.DataFrame, blocks: pd.DataFrame, key: Sequence[str]) -> pa.Table:
    return pa.Table.from_pandas(client_rows(rows, blocks, key), schema=arrow_schema("client_series"),
                                preserve_index=False)


def arrow_schema(table: str) -> pa.Schema:
    return ddl_to_arrow(records.table_ddl(table))


def cast_to(table: str) -> list[str]:
    """A select list that gives a frame exactly the table's columns and types, in order."""
    return [f"CAST(`{c.name}` AS {records.SPARK_TYPES[c.type]}) AS `{c.name}`" for c in records.TABLES[table]]


# The client_seconds objects whose series one write collects into the driver: seed scale's 2,520 in one write; at 10x
# seed scale (25,200) one collect of every config's client_series ran the driver's 3 GiB heap out.
SERIES_WRITE_OBJECTS = 3000


def config_chunks(objects: RawObjects, configs: Sequence[str], bound: int = SERIES_WRITE_OBJECTS) -> list[list[str]]:
    """The configs in order, in chunks of at most `bound` client_seconds objects (a config above it alone)."""
    chunks: list[list[str]] = []
    held = bound
    for config in configs:
        size = len(objects.of_config(config).of("client_seconds"))
        if held + size > bound:
            chunks.append([])
            held = 0
        chunks[-1].append(config)
        held += size
    return chunks
