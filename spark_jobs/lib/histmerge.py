"""Vectorised merging of wire-format histograms held in Arrow binary columns (no per-row Python).

The whole column's data buffer is one concatenation of (uint16 bucket, uint32 count) pairs, so a
single `np.frombuffer` + `np.bincount` turns any number of rows into dense per-group count arrays.
Merging is summing counts (sizing.contract.histogram); percentiles are read from merged counts, never averaged.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sizing.contract.histogram import MAX_BUCKET, WIRE_DTYPE, bucket_value, quantile_from_counts
from sizing.contract.records import LATENCY_QUANTILES

NBUCKETS = MAX_BUCKET + 1
QUANTILES = LATENCY_QUANTILES  # the tables' latency percentiles (one list: sizing.contract.records)


def dense_counts(column: pa.Array | pa.ChunkedArray, group_index: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, NBUCKETS) int64 counts: row i's histogram is added to group `group_index[i]` (none when it is
    negative)."""
    out = np.zeros((n_groups, NBUCKETS), dtype=np.int64)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    group_index = np.asarray(group_index, dtype=np.int64)
    start = 0
    for chunk in chunks:  # chunk by chunk: concatenating them first would copy every histogram byte
        _add_chunk(out, chunk, group_index[start: start + len(chunk)])
        start += len(chunk)
    return out


# Below this many buckets per run of rows of one group, one bincount over the chunk (with a group per bucket)
# beats a bincount per run (each costs a few calls).
BUCKETS_PER_RUN = 500


def _add_chunk(out: np.ndarray, chunk: pa.Array, group_index: np.ndarray) -> None:
    if chunk.type != pa.large_binary():
        chunk = chunk.cast(pa.large_binary())
    if len(chunk) == 0:
        return
    _, offsets_buf, data_buf = chunk.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[chunk.offset: chunk.offset + len(chunk) + 1]
    if data_buf is None or offsets[-1] == offsets[0]:
        return
    lengths = np.diff(offsets)
    if np.any(lengths % WIRE_DTYPE.itemsize):
        raise ValueError("histogram blob whose length is not a multiple of 6 bytes: not sizing.contract.histogram wire "
                         "format")
    # a view of the blobs (the data buffer between the first and last offset), not a copy
    wire = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]: offsets[-1]].view(WIRE_DTYPE)
    # Rows of one group come in runs (a raw object is one worker phase): a run's histograms are one slice of `wire`.
    starts = np.flatnonzero(np.r_[True, group_index[1:] != group_index[:-1]])
    if len(starts) * BUCKETS_PER_RUN <= len(wire):
        first = (offsets - offsets[0]) // WIRE_DTYPE.itemsize  # row i's buckets: wire[first[i]:first[i + 1]]
        for begin, end in zip(starts, np.r_[starts[1:], len(group_index)], strict=True):
            group = group_index[begin]
            if group >= 0 and first[end] > first[begin]:
                run = wire[first[begin]: first[end]]
                out[group] += np.bincount(run["bucket"], weights=run["count"], minlength=NBUCKETS).astype(np.int64)
        return
    rows = np.repeat(group_index, lengths // WIRE_DTYPE.itemsize)
    kept = rows >= 0
    if not kept.all():
        rows, wire = rows[kept], wire[kept]
    flat = rows * NBUCKETS + wire["bucket"].astype(np.int64)
    out += np.bincount(flat, weights=wire["count"].astype(np.float64), minlength=out.size).astype(
        np.int64).reshape(out.shape)


def quantiles_ms(counts: np.ndarray) -> dict[str, float | None]:
    """Nearest-rank p50..p99.9 and max of one dense histogram, in milliseconds (None when empty)."""
    if int(counts.sum()) == 0:
        return {**dict.fromkeys(QUANTILES), "max": None}
    out: dict[str, float | None] = {name: quantile_from_counts(counts, q) / 1000.0 for name, q in QUANTILES.items()}
    out["max"] = float(bucket_value(int(np.flatnonzero(counts)[-1]))) / 1000.0
    return out


def mean_ms(counts: np.ndarray) -> float | None:
    """The mean of one dense histogram, in milliseconds (None when empty): each bucket at its representative value,
    so within the histogram's relative error. For Little's law (sizing.criteria.rules.publisher_window_ceiling), which
    needs the mean time in the system, not a percentile."""
    total = int(counts.sum())
    if total == 0:
        return None
    return float(np.dot(counts, bucket_value(np.arange(len(counts))))) / total / 1000.0
