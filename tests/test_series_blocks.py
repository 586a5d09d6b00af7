"""phase_summary's series blocks (pure): the fold sends the per-second counts as one block per (run, group, phase,
warm-up) of a fold call, and series_rows turns blocks back into rows. Known answer: pandas' own groupby over the
raw rows, however the rows fall into fold calls (a second held by blocks of two calls is summed, its most blocked
worker kept; a null blocked_ms stays null)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sizing.contract import records
from sizing.contract.histogram import LogHistogram, merge_wire, quantile_from_counts
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib import series
from spark_jobs.lib.phase_summary.client_fold import _series
from spark_jobs.lib.phase_summary.client_series import _client_series_of_run


def raw_rows() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for run_id in ("r1", "r2"):
        for phase in (1, 2):
            for worker in range(3):
                for second in range(10 * phase, 10 * phase + 8):
                    rows.append({"campaign": "c", "config_id": "k", "scenario": "s", "run_id": run_id, "repeat": 1,
                                 "worker": worker,
                                 "group": "g" if worker < 2 else "other", "phase": phase,
                                 "warmup": second < 10 * phase + 2, "second": second,
                                 **{c: int(rng.integers(0, 1000)) for c in ps.SERIES_COUNTS},
                                 "blocked_ms": None if (second + worker) % 5 == 0 else float(rng.uniform(0, 900)),
                                 "target_rate": 1000.0 * phase, "publish_delay_max_us": float(rng.uniform(0, 9e3)),
                                 "e2e_max_us": None if second % 7 == 0 else float(rng.uniform(1e3, 9e4)),
                                 **histograms(rng, second % 7 == 0)})
    return pd.DataFrame(rows)


def histograms(rng, no_delivery: bool) -> dict[str, bytes]:
    """A worker-second's three histograms of random latencies (none delivered: an empty e2e histogram)."""
    out = {}
    for column in series.HISTOGRAMS:
        hist = LogHistogram()
        if not (no_delivery and column == "e2e_hist"):
            hist.add_many(rng.lognormal(8, 1.2, int(rng.integers(1, 60))))
        out[column] = hist.to_bytes()
    return out


def expected(rows: pd.DataFrame) -> pd.DataFrame:
    key = [*ps.SERIES_BLOCK_KEY, "second"]
    return (rows.groupby(key, as_index=False).agg(**{c: (c, "sum") for c in ps.SERIES_COUNTS},
                                                  workers=("second", "size"),
                                                  **{c: (c, "max") for c in ps.SERIES_MAX})
            .sort_values(key, ignore_index=True))


@pytest.mark.parametrize("split", [None, 17, 70])
def test_blocks_give_back_the_per_second_sums_however_the_rows_fall_into_fold_calls(split) -> None:
    rows = raw_rows()
    parts = [rows] if split is None else [rows.iloc[:split], rows.iloc[split:]]
    blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False)).to_pandas() for p in parts],
                       ignore_index=True)
    # one block per (run, group, phase, warm-up) and fold call: 2 runs x 2 groups x 2 phases x 2 = 16 in one call
    assert len(blocks) >= 16 and (split is not None or len(blocks) == 16)
    got = ps.series_rows(blocks).sort_values([*ps.SERIES_BLOCK_KEY, "second"], ignore_index=True)
    want = expected(rows)
    assert len(got) == len(want) == 2 * 2 * 8 * 2  # runs x phases x seconds x groups
    for column in [*ps.SERIES_BLOCK_KEY, "second", *ps.SERIES_SUMS]:
        assert got[column].tolist() == want[column].tolist(), column
    for column in ps.SERIES_MAX:
        assert np.allclose(got[column], want[column], equal_nan=True), column
    assert got["blocked_ms"].isna().any()  # a second no worker reported blocked time for


def test_each_phase_carries_its_rates_spread_within_the_run_from_its_steady_seconds_in_order() -> None:
    # Issue 32: 2 phases of one run; phase 1 has 20 warm-up and 203 steady seconds, phase 2 too few steady seconds.
    rng = np.random.default_rng(5)
    rows = []
    for phase, (start, warmup, steady) in {1: (0, 20, 203), 2: (223, 10, 60)}.items():
        for second in range(start, start + warmup + steady):
            rows.append({"campaign": "c", "config_id": "k", "scenario": "s", "run_id": "r", "repeat": 1,
                         "group": "main", "phase": phase, "warmup": second < start + warmup, "second": second,
                         "published": 9000 + int(rng.integers(-300, 300)) + (5000 if second < warmup else 0),
                         "confirmed": 8000 + second,  # a trend: the windows' means differ by 40 s each
                         "consumed": 0, "acked": 0, "scheduled": 9000, "blocked_ms": 0.0})
    series = pd.DataFrame(rows)
    faults = pd.DataFrame(columns=["phase", "second", "fault_kind"])
    got = ps.run_dynamics(series, faults).set_index("phase")
    # Known answer with numpy: the last 200 steady seconds of phase 1 (the 3 nearest the warm-up dropped) as 5
    # windows of 40, the standard error of their mean relative to it.
    steady = series[(series["phase"] == 1) & ~series["warmup"]].sort_values("second")
    for column, count in (("publish_rate_rse", "published"), ("confirm_rate_rse", "confirmed")):
        windows = steady[count].to_numpy(dtype=float)[3:].reshape(5, 40).mean(axis=1)
        want = windows.std(ddof=1) / np.sqrt(5) / windows.mean()
        assert got.loc[1, column] == pytest.approx(want), column
    assert got.loc[1, "confirm_rate_rse"] == pytest.approx(np.std([8000 + 23 + 19.5 + 40 * i for i in range(5)],
                                                                  ddof=1) / np.sqrt(5) / (8000 + 23 + 19.5 + 80))
    assert got.loc[1, "rate_batches"] == 5
    assert pd.isna(got.loc[1, "consume_rate_rse"])  # nothing consumed: no relative spread
    assert got.loc[2, ["publish_rate_rse", "confirm_rate_rse", "rate_batches"]].isna().all()  # 60 s: too short
    # Choppiness reads the confirmed seconds (the publish rate the findings read): within each window of 40 a
    # trend of 1 msg/s per second, so each window's CV is std(0..39) / its mean, computed here with numpy.
    windows = steady["confirmed"].to_numpy(dtype=float)[3:].reshape(5, 40)
    cvs = windows.std(axis=1, ddof=1) / windows.mean(axis=1)
    assert got.loc[1, "publish_rate_cv"] == pytest.approx(cvs.mean())
    assert got.loc[1, "publish_rate_cv_rse"] == pytest.approx(cvs.std(ddof=1) / np.sqrt(5) / cvs.mean())
    assert got.loc[2, ["publish_rate_cv", "publish_rate_cv_rse"]].isna().all()


@pytest.mark.parametrize("split", [None, 29, 61])
def test_client_series_percentiles_are_those_of_each_seconds_histograms_merged_however_the_rows_fall(split) -> None:
    """Issue 35: client_series per (run, group, second). Known answer: sizing.contract.histogram's own merge_wire and
    quantile_from_counts over the raw rows of each (run, group, second), and pandas' sums and maxima; a second
    whose rows fall into two fold calls (split, within a phase: 29 and 61 of 96 rows in key order) travels as its
    entries and is merged again, the others as the percentiles the fold read."""
    rows = raw_rows()
    parts = [rows] if split is None else [rows.iloc[:split], rows.iloc[split:]]
    blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False)).to_pandas() for p in parts],
                       ignore_index=True)
    got = pd.concat([_client_series_of_run(part.reset_index(drop=True))
                     for _run, part in blocks.groupby("run_id")], ignore_index=True)
    key = ["run_id", "group", "second"]
    assert list(got.columns) == records.table_columns("client_series")
    got = got.set_index(key).sort_index()
    assert len(got) == rows.groupby(key).ngroups == 2 * 2 * 2 * 8
    checked = 0
    for (run_id, group, second), part in rows.groupby(key):
        row = got.loc[(run_id, group, second)]
        assert row["workers"] == len(part) and row["published"] == part["published"].sum()
        assert row["confirmed"] == part["confirmed"].sum() and row["consumed"] == part["consumed"].sum()
        assert row["offered_rate"] == part["target_rate"].max() and row["phase"] == part["phase"].max()
        assert row["warmup"] == part["warmup"].any()
        assert row["e2e_max_ms"] == pytest.approx(part["e2e_max_us"].max() / 1000, nan_ok=True)
        assert row["publish_delay_max_ms"] == pytest.approx(part["publish_delay_max_us"].max() / 1000)
        for column, prefix in series.HISTOGRAMS.items():
            counts = merge_wire(part[column])
            for name, q in series.QUANTILES.items():
                want = quantile_from_counts(counts, q) / 1000
                assert row[f"{prefix}_{name}_ms"] == pytest.approx(want, nan_ok=True), (prefix, name)
                checked += 1
        assert row["e2e_samples"] == merge_wire(part["e2e_hist"]).sum()
    assert checked == 64 * 10
    assert got["e2e_p50_ms"].isna().any() and got["e2e_p50_ms"].notna().any()  # seconds with nothing delivered


def test_a_second_split_between_fold_calls_outside_their_edges_is_an_error_not_a_wrong_figure() -> None:
    """Records read out of key order (a phase's workers in the middle of two calls) cannot be merged from
    percentiles: client_rows says so rather than keeping one call's."""
    rows = raw_rows()
    first = rows[rows["worker"] != 1]
    parts = [pd.concat([first.iloc[:5], rows[rows["worker"] == 1].iloc[8:16], first.iloc[5:10]]),
             pd.concat([rows[rows["worker"] == 1].iloc[:8], first.iloc[10:]])]
    blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False)).to_pandas() for p in parts],
                       ignore_index=True)
    with pytest.raises(ValueError, match="key order"):
        for _run, part in blocks.groupby("run_id"):
            _client_series_of_run(part.reset_index(drop=True))


@pytest.mark.parametrize("split", [24, 48, 72])
def test_fold_calls_cut_between_phases_ship_entries_only_for_the_seconds_at_block_edges(split) -> None:
    """Issue 35, 10x seed scale: where the data source hands a fold whole phases (whole_directories), a call's first
    and last phases are closed (open_edges False), so only a block's first and last seconds ship histogram entries,
    and client_series is still each second's merged histogram (known answer: merge_wire over the raw rows). The
    rows are 24 per (run, phase) in key order, so 24, 48 and 72 cut between phases."""
    rows = raw_rows()
    parts = [rows.iloc[:split], rows.iloc[split:]]
    blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False), (False, False)).to_pandas()
                        for p in parts], ignore_index=True)
    def shipped_seconds(blocks: pd.DataFrame) -> int:
        lengths = np.concatenate([np.frombuffer(b, dtype="<i4") for b in blocks["e2e_hist_lengths"]])
        return int((lengths != series.FINAL).sum())

    # each block: its 2 edge seconds (a warm-up block of 2 seconds is all edges); the open-edged fold ships more
    assert shipped_seconds(blocks) == 2 * len(blocks)
    open_blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False)).to_pandas() for p in parts],
                            ignore_index=True)
    assert shipped_seconds(open_blocks) > shipped_seconds(blocks)
    got = pd.concat([_client_series_of_run(part.reset_index(drop=True))
                     for _run, part in blocks.groupby("run_id")], ignore_index=True).set_index(
        ["run_id", "group", "second"])
    for (run_id, group, second), part in rows.groupby(["run_id", "group", "second"]):
        counts = merge_wire(part["e2e_hist"])
        assert got.loc[(run_id, group, second), "e2e_p99_ms"] == pytest.approx(
            quantile_from_counts(counts, 0.99) / 1000, nan_ok=True)


def test_a_phase_cut_inside_while_the_fold_was_told_it_was_whole_is_an_error_not_a_wrong_figure() -> None:
    """The safety net of whole_directories: a claim of closed edges over a cut inside a phase (row 29 falls inside
    run r1's phase 2) leaves seconds final in two calls, and client_rows refuses them."""
    rows = raw_rows()
    blocks = pd.concat([_series(pa.Table.from_pandas(p, preserve_index=False), (False, False)).to_pandas()
                        for p in (rows.iloc[:29], rows.iloc[29:])], ignore_index=True)
    with pytest.raises(ValueError, match="key order"):
        for _run, part in blocks.groupby("run_id"):
            _client_series_of_run(part.reset_index(drop=True))
