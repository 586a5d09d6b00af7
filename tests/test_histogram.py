"""Histogram known-answer tests: every quantile within the documented 1 % of the exact sample quantile."""

from __future__ import annotations

import numpy as np
import pytest

from sizing.contract.histogram import (
    RELATIVE_ACCURACY,
    LogHistogram,
    bucket_of,
    bucket_value,
    merge_wire,
    quantile_from_counts,
)

QUANTILES = (0.5, 0.75, 0.95, 0.99, 0.999, 1.0)


def exact(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q, method="inverted_cdf"))  # nearest rank, as the histogram


@pytest.mark.parametrize("dist", ["lognormal", "uniform", "bimodal", "constant"])
def test_quantiles_are_within_the_relative_error_bound(dist: str) -> None:
    rng = np.random.default_rng(42)
    values = {
        "lognormal": rng.lognormal(mean=8, sigma=1.5, size=50_000),
        "uniform": rng.uniform(2, 2_000_000, size=50_000),
        "bimodal": np.concatenate([rng.normal(500, 20, 40_000), rng.normal(900_000, 1000, 400)]),
        "constant": np.full(1000, 12345.0),
    }[dist]
    hist = LogHistogram()
    hist.add_many(values)
    for q in QUANTILES:
        assert abs(hist.quantile(q) - exact(values, q)) <= RELATIVE_ACCURACY * exact(values, q) + 1e-9, q


def test_merging_per_second_histograms_equals_one_histogram_of_everything() -> None:
    rng = np.random.default_rng(1)
    chunks = [rng.lognormal(6 + i % 3, 1.0, size=2000) for i in range(30)]
    whole = LogHistogram()
    whole.add_many(np.concatenate(chunks))
    parts = []
    for chunk in chunks:
        h = LogHistogram()
        h.add_many(chunk)
        parts.append(h.to_bytes())
    merged = merge_wire(parts)
    assert np.array_equal(merged, whole.counts)
    for q in QUANTILES[:-1]:
        assert quantile_from_counts(merged, q) == whole.quantile(q)


def test_wire_format_round_trips_and_is_sparse() -> None:
    h = LogHistogram()
    for v in (3.0, 3.0, 70.0, 1e6, 1e6):
        h.add(v)
    blob = h.to_bytes()
    assert len(blob) == 6 * 3  # three non-empty buckets, 6 bytes each
    back = LogHistogram.from_bytes(blob)
    assert np.array_equal(back.counts, h.counts)
    assert LogHistogram.from_bytes(None).total == 0


def test_bucket_edges() -> None:
    assert bucket_of(0.0) == bucket_of(1.0) == 0 and bucket_value(0) == 1.0
    for v in (1.5, 10.0, 999.0, 123456.0, 3.6e9):
        assert abs(bucket_value(bucket_of(v)) - v) <= RELATIVE_ACCURACY * v
    assert quantile_from_counts(np.zeros(10, dtype=np.int64), 0.5) != quantile_from_counts(
        np.zeros(10, dtype=np.int64), 0.5)  # NaN for an empty histogram


def test_one_wire_encoding_clamps_counts_beyond_uint32() -> None:
    """Known answer: 5e9 samples in one bucket encode as the uint32 maximum, and decode to it."""
    from sizing.contract.histogram import MAX_BUCKET, LogHistogram, encode_counts

    counts = np.zeros(MAX_BUCKET + 1, dtype=np.int64)
    counts[10], counts[20] = 5_000_000_000, 3
    blob = encode_counts(counts)
    decoded = LogHistogram.from_bytes(blob)
    assert decoded.counts[10] == np.iinfo(np.uint32).max and decoded.counts[20] == 3
    assert decoded.total == np.iinfo(np.uint32).max + 3
    assert LogHistogram.from_bytes(decoded.to_bytes()).total == decoded.total
