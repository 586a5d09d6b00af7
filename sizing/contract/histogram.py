"""Mergeable latency histograms with a bounded relative error (log-bucketed, as DDSketch).

Values are microseconds. Bucket k >= 1 holds values in (g^(k-1), g^k] with g = (1 + a) / (1 - a);
its representative value 2 g^k / (g + 1) is within a relative error `a` of every value in the bucket,
so any quantile read from a histogram is within `a` = 1 % of the exact sample quantile (same rank).
Values <= 1 us land in bucket 0 and read back as 1 us. Histograms merge by adding counts, so
per-second per-worker histograms add up to per-phase ones without ever averaging percentiles.

Wire format (the `*_hist` binary columns of the raw records): little-endian pairs
(uint16 bucket, uint32 count), sorted by bucket, empty buckets omitted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

RELATIVE_ACCURACY = 0.01
GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
LOG_GAMMA = math.log(GAMMA)
MAX_BUCKET = 2047  # g^2047 us is about 19 hours: far beyond any run
WIRE_DTYPE = np.dtype([("bucket", "<u2"), ("count", "<u4")])


def bucket_of(value_us: float) -> int:
    if value_us <= 1.0:
        return 0
    return min(math.ceil(math.log(value_us) / LOG_GAMMA - 1e-12), MAX_BUCKET)


def buckets_of(values_us: np.ndarray) -> np.ndarray:
    values = np.asarray(values_us, dtype=np.float64)
    with np.errstate(divide="ignore"):
        raw = np.ceil(np.log(np.maximum(values, 1.0)) / LOG_GAMMA - 1e-12)
    return np.clip(raw, 0, MAX_BUCKET).astype(np.int64)


def bucket_value(bucket: int | np.ndarray) -> float | np.ndarray:
    """Representative value (us) of a bucket: within RELATIVE_ACCURACY of anything in it."""
    b = np.asarray(bucket, dtype=np.float64)
    value = np.where(b <= 0, 1.0, 2.0 * np.power(GAMMA, b) / (GAMMA + 1.0))
    return float(value) if value.ndim == 0 else value


def quantile_from_counts(counts: np.ndarray, q: float) -> float:
    """Nearest-rank quantile (the smallest value with at least ceil(q*n) samples at or below it)."""
    total = int(counts.sum())
    if total == 0:
        return math.nan
    rank = max(1, math.ceil(q * total - 1e-9))
    bucket = int(np.searchsorted(np.cumsum(counts), rank))
    return float(bucket_value(bucket))


class LogHistogram:
    __slots__ = ("counts", "max_us")

    def __init__(self) -> None:
        self.counts = np.zeros(MAX_BUCKET + 1, dtype=np.int64)
        self.max_us = 0.0

    def add(self, value_us: float, count: int = 1) -> None:
        self.counts[bucket_of(value_us)] += count
        if value_us > self.max_us:
            self.max_us = value_us

    def add_many(self, values_us: Iterable[float] | np.ndarray) -> None:
        values = np.asarray(list(values_us) if not isinstance(values_us, np.ndarray) else values_us, dtype=float)
        if values.size:
            np.add.at(self.counts, buckets_of(values), 1)
            self.max_us = max(self.max_us, float(values.max()))

    def merge(self, other: LogHistogram) -> LogHistogram:
        self.counts += other.counts
        self.max_us = max(self.max_us, other.max_us)
        return self

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def quantile(self, q: float) -> float:
        return quantile_from_counts(self.counts, q)

    def to_bytes(self) -> bytes:
        return encode_counts(self.counts)

    @classmethod
    def from_bytes(cls, data: bytes | None) -> LogHistogram:
        hist = cls()
        if data:
            wire = np.frombuffer(data, dtype=WIRE_DTYPE)
            np.add.at(hist.counts, wire["bucket"].astype(np.int64), wire["count"].astype(np.int64))
            if wire.size:
                hist.max_us = float(bucket_value(int(wire["bucket"].max())))
        return hist


def merge_wire(blobs: Iterable[bytes | None]) -> np.ndarray:
    """Sum many wire-format histograms into one dense count array (vectorised: one concatenation)."""
    joined = b"".join(b for b in blobs if b)
    counts = np.zeros(MAX_BUCKET + 1, dtype=np.int64)
    if joined:
        wire = np.frombuffer(joined, dtype=WIRE_DTYPE)
        counts += np.bincount(wire["bucket"], weights=wire["count"], minlength=MAX_BUCKET + 1).astype(np.int64)
    return counts


def encode_counts(counts: np.ndarray) -> bytes:
    """The wire encoding of dense bucket counts: nonzero buckets only, each count clamped to uint32 (a merged
    histogram over a long phase can exceed it; the clamp keeps quantiles right to within one bucket)."""
    nonzero = np.flatnonzero(counts)
    wire = np.empty(nonzero.size, dtype=WIRE_DTYPE)
    wire["bucket"] = nonzero
    wire["count"] = np.minimum(counts[nonzero], np.iinfo(np.uint32).max)
    return wire.tobytes()
