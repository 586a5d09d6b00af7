"""spark_jobs.lib.histmerge (pure): dense per-group counts from an Arrow column of wire-format histograms equal the
merge of the same histograms one by one (sizing.contract.histogram.merge_wire, the known answer), however the column
is chunked, sliced or typed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sizing.contract.histogram import LogHistogram, merge_wire
from spark_jobs.lib import histmerge
from spark_jobs.lib.histmerge import NBUCKETS, dense_counts


@pytest.fixture
def blobs() -> list[bytes | None]:
    rng = np.random.default_rng(3)
    out: list[bytes | None] = []
    for i in range(40):
        hist = LogHistogram()
        hist.add_many(rng.lognormal(8, 1, size=int(rng.integers(1, 200))))
        out.append(None if i % 9 == 4 else b"" if i % 13 == 6 else hist.to_bytes())  # nulls and empty blobs too
    return out


def test_dense_counts_equal_the_merge_of_each_groups_histograms_however_the_column_is_held(blobs) -> None:
    groups = np.arange(len(blobs)) % 3
    expected = np.stack([merge_wire(b for b, g in zip(blobs, groups, strict=True) if g == k) for k in range(3)])
    assert expected.shape == (3, NBUCKETS) and expected.sum() > 0
    whole = pa.array(blobs, pa.binary())
    chunked = pa.chunked_array([whole.slice(0, 7), whole.slice(7, 0), whole.slice(7, 20), whole.slice(27)])
    for column in (whole, whole.cast(pa.large_binary()), chunked):
        assert np.array_equal(dense_counts(column, groups, 3), expected)
    # a slice keeps its offset into the parent's buffers
    assert np.array_equal(dense_counts(whole.slice(10, 15), groups[10:25], 3),
                          np.stack([merge_wire(b for b, g in zip(blobs[10:25], groups[10:25], strict=True) if g == k)
                                    for k in range(3)]))


def test_a_blob_that_is_not_wire_format_is_refused() -> None:
    with pytest.raises(ValueError, match="multiple of 6"):
        dense_counts(pa.array([b"12345"]), np.zeros(1, dtype=np.int64), 1)


@pytest.mark.parametrize("order", ["runs", "interleaved"])
@pytest.mark.parametrize("buckets_per_run", [0, 10**9], ids=["a bincount per run", "one bincount"])
def test_rows_of_a_negative_group_add_to_none_whether_groups_come_in_runs_or_not(
        blobs, order: str, buckets_per_run: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of rows of one group (a raw object is one worker phase) can be merged a run at a time or in one pass:
    both equal the one-by-one merge of each group's histograms, the rows of group -1 (warm-up rows) left out."""
    monkeypatch.setattr(histmerge, "BUCKETS_PER_RUN", buckets_per_run)
    groups = np.repeat([-1, 0, 1, -1, 2, 0], [3, 9, 8, 4, 10, 6]) if order == "runs" else np.arange(len(blobs)) % 4 - 1
    expected = np.stack([merge_wire(b for b, g in zip(blobs, groups, strict=True) if g == k) for k in range(3)])
    assert expected.sum() > 0
    assert np.array_equal(dense_counts(pa.array(blobs, pa.binary()), groups, 3), expected)


def test_the_mean_of_merged_counts_is_within_the_histograms_relative_error_of_the_exact_mean():
    """Issue 44: Little's law needs the mean confirm latency; each value sits within 1 % of its bucket's
    representative, so the mean does too. A right-skewed latency's mean is above its median (why p50 is not it)."""
    from sizing.contract.histogram import RELATIVE_ACCURACY

    values = np.random.default_rng(44).lognormal(np.log(80_000), 0.6, size=5000)  # us
    hist = LogHistogram()
    hist.add_many(values)
    counts = dense_counts(pa.array([hist.to_bytes()], pa.binary()), np.zeros(1, dtype=np.int64), 1)[0]
    assert histmerge.mean_ms(counts) == pytest.approx(values.mean() / 1000, rel=RELATIVE_ACCURACY)
    assert histmerge.mean_ms(counts) > histmerge.quantiles_ms(counts)["p50"]
    assert histmerge.mean_ms(np.zeros(NBUCKETS, dtype=np.int64)) is None
