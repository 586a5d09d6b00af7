"""The GX gate (a library module): validate batches, file each result next to its batch, stop a job on failure.

Batches: raw (one config's raw records of one run), phase_summary (one config's partition of one run, with the series
tables written beside it: client_series, broker_series, node_series),
leaderboards (the campaign-wide tables of one run: VALIDATED_CAMPAIGN_TABLES, the `runs` row included). The
result JSON goes to sizing.contract.layout.validation_key(batch, campaign, config, run) (config CAMPAIGN_WIDE for
campaign-wide batches). A job validates all its configs' batches of a kind in one read and one GX run, and only
when that fails each batch on its own (validate_batches). Raw rows are validated as check rows, one per worker or
node phase, computed in the read that folds them (client_checks, node_checks, RawGate).
The suites themselves are spark_jobs/lib/validation.py; the `validate` job and the jobs' --validate flags call this.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from adapters.objectstore import StoreSpec
from sizing.campaign import Campaign
from sizing.contract import layout, records
from sizing.planning.timeline import expand
from spark_jobs.lib import validation
from spark_jobs.lib.s3source import ddl_to_arrow, gathered
from spark_jobs.lib.tableio import RawObjects, partition_rows

RUN_COLS = validation.RUN_COLS
CAMPAIGN_WIDE = "all"
BATCHES = ("raw", "phase_summary", "leaderboards")
# The campaign-wide tables the `leaderboards` batch validates: every one that has a suite of the same name
# (derived, so a new campaign table with a suite is validated without a second list to update).
VALIDATED_CAMPAIGN_TABLES = tuple(name for name in records.CAMPAIGN_TABLES if name in validation.SUITES)


# ------------------------------------------------------------ raw client_seconds, checked where it is folded

# The raw client rows are never read for the gate alone: the read that folds them for phase_summary (its fold, in
# Spark's Python workers) or for the `validate` job (this process) also checks them, into one row per worker phase
# (client_checks): the raw_client_seconds frame's columns (validation.client_check_columns), and what the
# cross-record rules need (the seconds it covers, its warm-up boundary, its sums).
HIST_COLUMNS = [c.name for c in records.CLIENT_SECONDS if c.type == "binary"]
# consumed <= published + redelivered + foreign (deliveries of another run's backlog), per run
RUN_SUMS = ["published", "redelivered", "foreign", "consumed"]
CLIENT_CHECK_READS = list(dict.fromkeys([*validation.CLIENT_NOT_NULL, *validation.CLIENT_NON_NEGATIVE, "group",
                                         *RUN_SUMS, *HIST_COLUMNS]))
NODE_CHECK_READS = list(dict.fromkeys([*validation.NODE_CHECK_KEY, *validation.NODE_NOT_NULL,
                                       *validation.NODE_NON_NEGATIVE, "cpu_busy"]))


def _check_ddl(record_type: str, key: list[str], not_null: list[str], non_negative: list[str],
               extra: list[str]) -> str:
    """Spark DDL of row_checks' rows of a record type (a fold declares its output so): the key as the records
    type it, counts as BIGINT, least values as DOUBLE; `second_ranges`: the distinct seconds as int32 [first, last]
    pairs."""
    figures = validation.check_columns(key, not_null, non_negative)[len(key):]
    return ", ".join([records.spark_ddl(record_type, key),
                      *(f"{c} {'DOUBLE' if c.endswith('_min') else 'BIGINT'}" for c in figures),
                      "second_ranges BINARY", *extra])


CLIENT_CHECK_DDL = _check_ddl("client_seconds", validation.CLIENT_CHECK_KEY, validation.CLIENT_NOT_NULL,
                              validation.CLIENT_NON_NEGATIVE,
                              ["bad_histogram_rows BIGINT", "last_warmup_second INT", "first_steady_second INT",
                               *(f"{c}_sum BIGINT" for c in RUN_SUMS)])
NODE_CHECK_DDL = _check_ddl("node_seconds", validation.NODE_CHECK_KEY, validation.NODE_NOT_NULL,
                            validation.NODE_NON_NEGATIVE, ["missing_with_figures BIGINT"])


def client_checks(rows: pa.Table) -> pa.Table:
    """Raw client_seconds rows (at least CLIENT_CHECK_READS) as check rows (CLIENT_CHECK_DDL), one per worker phase
    (validation.CLIENT_CHECK_KEY; a worker phase split over two calls is two rows): row_checks' figures of the
    CLIENT_NOT_NULL and CLIENT_NON_NEGATIVE rules, rows with a histogram that is not whole 6-byte buckets, the last
    warm-up and first steady second, and the per-run sums (Spark SQL's: nulls skipped, null when every value is)."""
    group = rows.column("group") if "group" in rows.column_names else pa.nulls(rows.num_rows, pa.string())
    frame = rows.select([c for c in CLIENT_CHECK_READS if c not in ("group", *HIST_COLUMNS)]).to_pandas()
    frame["group"] = pc.fill_null(group, records.DEFAULT_GROUP).to_pandas()
    out, gid = row_checks(frame, validation.CLIENT_CHECK_KEY, validation.CLIENT_NOT_NULL,
                          validation.CLIENT_NON_NEGATIVE)
    bad = np.zeros(rows.num_rows, dtype=bool)
    for column in HIST_COLUMNS:
        bad |= ~whole_buckets(rows.column(column))
    out["bad_histogram_rows"] = np.bincount(gid, weights=bad, minlength=len(out)).astype(np.int64)
    warm = pc.fill_null(rows.column("warmup"), False).to_numpy(zero_copy_only=False)
    steady = pc.fill_null(pc.invert(rows.column("warmup")), False).to_numpy(zero_copy_only=False)
    out["last_warmup_second"] = frame["second"].where(warm).groupby(gid).max()
    out["first_steady_second"] = frame["second"].where(steady).groupby(gid).min()
    for column in RUN_SUMS:
        out[f"{column}_sum"] = frame[column].groupby(gid).sum(min_count=1)
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(CLIENT_CHECK_DDL),
                                preserve_index=False)


def node_checks(rows: pd.DataFrame) -> pa.Table:
    """Raw node_seconds rows (at least NODE_CHECK_READS) as check rows (NODE_CHECK_DDL), one per node phase and
    target: row_checks' figures of the NODE_NOT_NULL and NODE_NON_NEGATIVE rules, and the missing seconds that
    have figures."""
    out, gid = row_checks(rows, validation.NODE_CHECK_KEY, validation.NODE_NOT_NULL, validation.NODE_NON_NEGATIVE)
    with_figures = rows["missing"].eq(True) & rows["cpu_busy"].notna()
    out["missing_with_figures"] = np.bincount(gid, weights=with_figures, minlength=len(out)).astype(np.int64)
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(NODE_CHECK_DDL), preserve_index=False)


def row_checks(frame: pd.DataFrame, key: list[str], not_null: list[str],
               non_negative: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """One check row per `key` (nulls a key of their own): its rows, per `not_null` column the rows that are null
    (`<column>_nulls`), per `non_negative` column the least value (`<column>_min`: every row is >= 0 exactly when
    it is), the seconds it holds twice and its distinct seconds as ranges (`second_ranges`: raw_frames finds a
    second two check rows share). Also each row's check row (index into the frame returned)."""
    gid = frame.groupby(key, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    groups = int(gid.max()) + 1 if len(gid) else 0
    by = frame.groupby(gid)
    out = by[key].first()  # one value per group (or none: a null key)
    out["rows"] = by.size()
    for column in not_null:
        out[f"{column}_nulls"] = frame[column].isna().groupby(gid).sum()
    for column in non_negative:
        out[f"{column}_min"] = by[column].min().astype("float64")
    out["duplicate_seconds"], out["second_ranges"] = _second_ranges(gid, frame["second"].to_numpy(float), groups)
    return out, gid


def _second_ranges(gid: np.ndarray, seconds: np.ndarray, groups: int) -> tuple[np.ndarray, list[bytes]]:
    """Per group: how many of its (non-null) seconds repeat one before, and its distinct seconds as [first, last]
    int32 pairs (a worker phase is one range)."""
    held = ~np.isnan(seconds)
    if not held.any():
        return np.zeros(groups, dtype=np.int64), [b""] * groups
    g, sec = gid[held], seconds[held].astype(np.int64)
    order = np.lexsort((sec, g))
    g, sec = g[order], sec[order]
    same_group = np.r_[False, g[1:] == g[:-1]]
    repeated = same_group & np.r_[False, sec[1:] == sec[:-1]]
    duplicates = np.bincount(g[repeated], minlength=groups).astype(np.int64)
    g, sec = g[~repeated], sec[~repeated]
    starts = np.flatnonzero(~(np.r_[False, g[1:] == g[:-1]] & np.r_[False, sec[1:] == sec[:-1] + 1]))
    ends = np.r_[starts[1:], len(sec)] - 1
    pairs = np.column_stack([sec[starts], sec[ends]]).astype("<i4")
    return duplicates, blobs_per_group(g[starts], pairs, groups)


def blobs_per_group(owners: np.ndarray, rows: np.ndarray, groups: int) -> list[bytes]:
    """`rows`, sorted by their `owners` (group numbers), as one bytes blob per group 0 .. groups - 1."""
    bounds = np.searchsorted(owners, np.arange(groups + 1))
    return [rows[bounds[i]:bounds[i + 1]].tobytes() for i in range(groups)]


def client_check_fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """client_checks as a fold (s3source.ObjectFold's signature): the `validate` job's read of client_seconds."""
    for table in gathered(batches):
        yield from _batches_of(client_checks(table))


def node_check_fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """node_checks as a fold: the `validate` job's read of node_seconds."""
    for table in gathered(batches):
        yield from _batches_of(node_checks(table.to_pandas()))


def _batches_of(table: pa.Table) -> list[pa.RecordBatch]:
    """A table's batches, an empty one's as one empty batch (so that a fold of no rows still has a schema)."""
    return table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]


def whole_buckets(histograms: pa.Array) -> np.ndarray:
    """Per row: the histogram is whole 6-byte buckets (sizing.contract.histogram's wire format), or null."""
    return pc.fill_null(pc.binary_length(histograms), 0).to_numpy(zero_copy_only=False) % 6 == 0


def raw_frames(raw: dict[str, pd.DataFrame], expected_phases: dict[str, int] | Callable[[str], dict[str, int]],
               expected_groups: dict[str, list[str]] | None = None,
               expected_batches: Sequence[dict[str, str]] = ()) -> dict[str, pd.DataFrame]:
    """Pandas frames for the raw suites, of any number of configs and runs at once (every suite's keys hold the
    config and run), from the raw records: `raw["client_seconds"]` and `raw["node_seconds"]` as checked where read
    (client_checks, node_checks), the phases and accounting as read.
    `expected_phases`: scenario -> phase count per the campaign spec (or config -> that mapping: the count
    depends on the cluster); `expected_groups`: scenario -> its workload groups (issue 14; default: the one
    implicit group); `expected_batches`: the {campaign, config_id, run_id} read, each of which must have records
    (a batch with none gets a row that fails, so that a union of batches cannot hide an empty one). The
    cross-record rules hold per (run, phase, group): every group of every phase has phases, client and accounting
    rows."""
    expected_groups = expected_groups or {}
    phases_of = expected_phases if callable(expected_phases) else (lambda _config: expected_phases)
    checks = raw["client_seconds"].assign(
        duplicate_seconds=lambda f: f["duplicate_seconds"] + _seconds_in_two_checks(f, "worker"))
    phases = raw["phases"].assign(group=_group(raw["phases"]))[[*RUN_COLS, "phase", "start_s", "warmup_s", "group"]]
    acc = raw["accounting"].assign(group=_group(raw["accounting"]))[
        [*RUN_COLS, "phase", "group", "lost", "duplicates", "reordered"]]
    nodes = node_frame(raw["node_seconds"])

    key = [*RUN_COLS, "phase", "group"]
    # Null keys never match in a join (as in Spark SQL): a row with a null key is the row-level suites' to fail.
    by_phase = phases.dropna(subset=[*RUN_COLS, "phase"]).drop_duplicates([*RUN_COLS, "phase"])
    timed = checks[[*RUN_COLS, "phase", "last_warmup_second", "first_steady_second"]].dropna(
        subset=[*RUN_COLS, "phase"]).merge(by_phase[[*RUN_COLS, "phase", "start_s", "warmup_s"]],
                                           on=[*RUN_COLS, "phase"], how="inner")
    # A second is warm-up exactly when it is before the phase's warm-up end: a worker phase's flags are wrong when
    # its last warm-up second is at or after it, or its first steady second before it (NaN compares false).
    steady_from = timed["start_s"] + timed["warmup_s"]
    timed["warmup_flag_errors"] = ((timed["last_warmup_second"] >= steady_from)
                                   | (timed["first_steady_second"] < steady_from)).astype(int)
    warm = timed.groupby([*RUN_COLS, "phase"], as_index=False)["warmup_flag_errors"].sum()
    # sums as Spark SQL's: nulls skipped, null when every value is
    sums = checks.groupby(RUN_COLS, dropna=False)[[f"{c}_sum" for c in RUN_SUMS]].sum(min_count=1)
    may_consume = sums["published_sum"] + sums["redelivered_sum"] + sums["foreign_sum"].fillna(0)  # older records
    per_run = pd.DataFrame({"run_published_redelivered_foreign": may_consume,
                            "run_consumed": sums["consumed_sum"]}).reset_index()
    # phase 0 is the drain after the timeline: records, but no phase of the spec
    seen_cs = (checks.loc[checks["phase"] > 0, key].drop_duplicates().assign(in_client_seconds=True))
    seen_ph = phases[key].drop_duplicates().assign(in_phases_table=True)
    runs = pd.concat([seen_cs[RUN_COLS], seen_ph[RUN_COLS], per_run[RUN_COLS]]).drop_duplicates()
    expected = pd.DataFrame([{**r, "phase": p, "group": g} for r in runs.to_dict("records")
                             for p in range(1, phases_of(r["config_id"]).get(r["scenario"], 0) + 1)
                             for g in expected_groups.get(r["scenario"], [records.DEFAULT_GROUP])],
                            columns=key)
    frame = (expected.merge(seen_ph, on=key, how="outer").merge(seen_cs, on=key, how="outer")
             .merge(acc.assign(in_accounting=True), on=key, how="left").merge(warm, on=[*RUN_COLS, "phase"], how="left")
             .merge(per_run, on=RUN_COLS, how="left"))
    seen_batches = {(r["config_id"], r["run_id"]) for r in runs.to_dict("records")}
    empty = [b for b in expected_batches if (b["config_id"], b["run_id"]) not in seen_batches]
    frame = pd.concat([frame, pd.DataFrame(empty, columns=list(frame.columns))], ignore_index=True) if empty else frame
    for col in ("in_phases_table", "in_client_seconds", "in_accounting"):
        frame[col] = frame[col].astype("boolean").fillna(False).astype(bool)
    frame["warmup_flag_errors"] = frame["warmup_flag_errors"].fillna(0)
    return {"raw_client_seconds": checks[validation.client_check_columns()], "raw_run_phase": frame,
            "raw_node_seconds": nodes}


def node_frame(checks: pd.DataFrame) -> pd.DataFrame:
    """The raw_node_seconds frame from the node rows' check rows (node_checks)."""
    checks = checks.assign(duplicate_seconds=checks["duplicate_seconds"] + _seconds_in_two_checks(checks, "node"))
    return checks[validation.node_check_columns()]


def _seconds_in_two_checks(checks: pd.DataFrame, owner: str) -> pd.Series:
    """Per check row: the seconds its `owner` (worker, node) holds in two check rows of the run (row_checks'
    `second_ranges` of every row of the run and owner: the seconds they cover less their union), on each of its
    rows."""
    worker = [*RUN_COLS, owner]
    ranges = [(i, int(lo), int(hi)) for i, blob in zip(checks.index, checks["second_ranges"], strict=True)
              if isinstance(blob, bytes) for lo, hi in np.frombuffer(blob, dtype="<i4").reshape(-1, 2)]
    if not ranges:
        return pd.Series(0, index=checks.index)
    spans = pd.DataFrame(ranges, columns=["row", "first", "last"]).join(checks[worker], on="row")
    spans = spans.dropna(subset=worker).sort_values([*worker, "first"])
    # a sweep per worker: the part of each span after every span that starts before it is new
    reached = spans.groupby(worker)["last"].cummax().groupby([spans[c] for c in worker]).shift().fillna(-np.inf)
    spans["shared"] = (spans["last"] - spans["first"] + 1) - (
        spans["last"] - np.maximum(spans["first"], reached + 1) + 1).clip(lower=0)
    shared = spans.groupby(worker)["shared"].sum().rename("shared").reset_index()
    return checks[worker].merge(shared, on=worker, how="left")["shared"].fillna(0).astype(np.int64).set_axis(
        checks.index)


def _group(frame: pd.DataFrame) -> pd.Series:
    return frame["group"].fillna(records.DEFAULT_GROUP)


def _expected_phases(campaign: Campaign, config_id: str) -> dict[str, int]:
    nodes = campaign.cluster(config_id).nodes if config_id != CAMPAIGN_WIDE else 1
    return {s.name: len(expand(s, nodes, campaign.seed).phases) for s in campaign.scenarios}


def campaign_raw_frames(raw: dict[str, pd.DataFrame], campaign: Campaign, configs: Sequence[str],
                        run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    """raw_frames of these configs and runs as the campaign spec expects them (phases per cluster, groups)."""
    phases = {config: _expected_phases(campaign, config) for config in configs}
    return raw_frames(raw, lambda config: phases.get(config) or _expected_phases(campaign, config),
                      {s.name: [g.name for g in s.workload_groups] for s in campaign.scenarios},
                      [{"campaign": campaign.name, "config_id": c, "run_id": r} for c in configs for r in run_ids])


RAW_TYPES = ("client_seconds", "phases", "accounting", "node_seconds")  # what the raw suites read


CHECKED_WHERE_READ = {"client_seconds": (client_check_fold, CLIENT_CHECK_READS),
                      "node_seconds": (node_check_fold, NODE_CHECK_READS)}


def raw_rows(objects: RawObjects, record_types: Sequence[str] = RAW_TYPES) -> dict[str, pd.DataFrame]:
    """Raw record types as raw_frames takes them, read in this process (through Spark they would cross into the
    JVM and back): client_seconds and node_seconds as check rows (CHECKED_WHERE_READ), the others as rows."""
    return {rt: (objects.rows(rt, *CHECKED_WHERE_READ[rt]) if rt in CHECKED_WHERE_READ
                 else objects.rows(rt)).to_pandas() for rt in record_types}


def batch_frames(spec: StoreSpec, batch: str, campaign: Campaign, configs: Sequence[str],
                 run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The frames of a batch kind for these configs and runs, each record type or table read once for all of them,
    by this process (GX validates pandas frames: through Spark the rows would cross into the JVM and back)."""
    if batch == "raw":
        raw = raw_rows(RawObjects.list(spec, campaign.name, configs, run_ids))
        return campaign_raw_frames(raw, campaign, configs, run_ids)
    if batch == "phase_summary":  # and the tables written beside it, in the same partitions (issue 35)
        return {name: _summary_batch_frame(spec, name, campaign.name, configs, run_ids)
                for name in ("phase_summary", *records.BESIDE_SUMMARY)}
    if batch == "leaderboards":
        return {name: partition_rows(spec, name, campaign.name, None, run_ids).to_pandas()
                for name in VALIDATED_CAMPAIGN_TABLES}
    raise ValueError(f"unknown batch {batch!r}: raw | phase_summary | leaderboards")


NODE_SERIES_CHECK_READS = [*validation.NODE_SERIES_CHECK_KEY, "second"]


def _summary_batch_frame(spec: StoreSpec, table: str, campaign: str, configs: Sequence[str],
                         run_ids: Sequence[str]) -> pd.DataFrame:
    """One table of the phase_summary batch as its suite takes it: node_series as check rows (node_series_checks,
    reading only the columns they need), every other table as its rows."""
    if table == "node_series":
        return node_series_checks(partition_rows(spec, table, campaign, configs, run_ids, NODE_SERIES_CHECK_READS))
    return partition_rows(spec, table, campaign, configs, run_ids).to_pandas()


def node_series_checks(rows: pa.Table) -> pd.DataFrame:
    """node_series rows (at least NODE_SERIES_CHECK_READS) as the node_series frame
    (validation.node_series_check_columns): one row per run, node and target, with its rows, its null seconds and
    the seconds its node holds twice in the run (rows less distinct seconds, over every target of the node: a
    boundary second written by two phases is one of them). Grouped by Arrow, a few hundred rows for GX."""
    key = validation.NODE_SERIES_CHECK_KEY
    node = [c for c in key if c != "target"]
    per_target = rows.group_by(key).aggregate([([], "count_all"), ("second", "count")]).to_pandas()
    per_node = rows.group_by(node).aggregate([("second", "count"), ("second", "count_distinct")]).to_pandas()
    per_node["duplicate_seconds"] = per_node["second_count"] - per_node["second_count_distinct"]
    out = per_target.merge(per_node[[*node, "duplicate_seconds"]], on=node, how="left")
    out["rows"] = out["count_all"]
    out["second_nulls"] = out["count_all"] - out["second_count"]
    return out[validation.node_series_check_columns()]


def of_batch(frames: dict[str, pd.DataFrame], config_id: str, run_id: str) -> dict[str, pd.DataFrame]:
    """One config's and run's rows of frames that hold several (of a campaign-wide batch: the run's rows)."""
    def rows(frame: pd.DataFrame) -> pd.Series:
        of_run = frame["run_id"] == run_id
        return of_run if config_id == CAMPAIGN_WIDE else of_run & (frame["config_id"] == config_id)

    return {name: frame[rows(frame)].reset_index(drop=True) for name, frame in frames.items()}


def validate_batches(spec: StoreSpec, batch: str, campaign: Campaign,
                     configs: Sequence[str], run_ids: Sequence[str], docs_dir: str | None,
                     frames: dict[str, pd.DataFrame] | None = None) -> dict[tuple[str, str], validation.Outcome]:
    """Run the batch's suites over these configs and runs (on `frames`, if the caller has them: batch_frames'), and
    file one result per config and run at sizing.contract.layout.validation_key (whatever the outcome).

    All of them are validated in one GX run (a GX run costs ~2 s however few its rows: 21 configs paid it 21 times
    per batch kind). Every suite's expectations hold row by row or per key, and every key holds the config and
    run, so the union passes exactly when each part would; the one exception, a batch with no rows, is an
    explicit failing row (raw_frames). Only when the union fails is each config and run validated on its own, so
    that each document names its own failures (the union's verdict is GX's BOOLEAN_ONLY, half the time of the
    counts and lists of unexpected values on a million rows; a single batch gets them at once)."""
    frames = frames if frames is not None else batch_frames(spec, batch, campaign, configs, run_ids)
    batches = [(config, run_id) for config in configs for run_id in run_ids]
    together = validation.validate_frames(frames, docs_dir, "SUMMARY" if len(batches) == 1 else "BOOLEAN_ONLY")
    if together.success or len(batches) == 1:
        outcomes = dict.fromkeys(batches, together)
    else:
        outcomes = {(config, run_id): validation.validate_frames(of_batch(frames, config, run_id), docs_dir)
                    for config, run_id in batches}
    store = spec.open()
    for (config, run_id), outcome in outcomes.items():
        doc = outcome.document(batch, campaign.name, config, run_id)
        doc["validated_with"] = [f"{c}/{r}" for c, r in batches] if outcome is together else [f"{config}/{run_id}"]
        store.put(layout.validation_key(batch, campaign.name, config, run_id),
                  json.dumps(doc, default=str, sort_keys=True).encode())
    return outcomes


def validate_batch(spec: StoreSpec, batch: str, campaign: Campaign, config_id: str,
                   run_id: str, docs_dir: str | None) -> validation.Outcome:
    """One config's batch of one run (the `validate` job): validate_batches of just it."""
    return validate_batches(spec, batch, campaign, [config_id], [run_id], docs_dir)[(config_id, run_id)]


class ValidationFailed(SystemExit):
    """A batch failed its suite: the job exits non-zero, naming every failed expectation."""


def gate(spec: StoreSpec, batch: str, campaign: Campaign, configs: Sequence[str],
         run_ids: Sequence[str], docs_dir: str | None, frames: dict[str, pd.DataFrame] | None = None) -> None:
    """Validate these configs' batches of these runs inside a job (no extra spark-submit), in one GX run
    (validate_batches), and stop the job when any failed, naming every failed expectation."""
    start = time.monotonic()
    outcomes = validate_batches(spec, batch, campaign, configs, run_ids, docs_dir, frames)
    failures = []
    for (config, run_id), outcome in outcomes.items():
        where = f"{batch} {campaign.name}/{config}/{run_id}"
        print(f"validate {where}: {outcome.message()}\nresult: "
              f"{spec.uri(layout.validation_key(batch, campaign.name, config, run_id))}")
        failures += [f"{where}: {failure}" for failure in outcome.failures]
    print(f"validate {batch}: {len(outcomes)} batch(es) in {time.monotonic() - start:.1f} s", flush=True)
    if failures:
        raise ValidationFailed(f"validation of {batch} failed:\n  " + "\n  ".join(failures))


class RawGate:
    """The raw batches' gate in a job whose own reads of client_seconds and node_seconds check them (phase_summary's
    folds: no raw row is read twice). From the moment the job knows its batches, a thread reads the phases and
    accounting (a few rows) and loads GX, overlapping the session's start; `passed(client_checks, node_checks)`,
    with the folds' check rows, validates every batch and raises ValidationFailed when one failed."""

    def __init__(self, spec: StoreSpec, campaign: Campaign, configs: Sequence[str], run_ids: Sequence[str],
                 docs_dir: str | None) -> None:
        self._batches = (spec, campaign, list(configs), list(run_ids), docs_dir)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raw-gate")
        self._early = self._pool.submit(self._read)
        self._verdict = False

    def _read(self) -> tuple[RawObjects, dict[str, pd.DataFrame]]:
        import great_expectations  # noqa: F401  # loaded now, beside the session's start, not at the verdict

        spec, campaign, configs, run_ids, _ = self._batches
        objects = RawObjects.list(spec, campaign.name, configs, run_ids)
        return objects, raw_rows(objects, ["phases", "accounting"])

    def passed(self, client_checks: pa.Table | None = None, node_checks: pa.Table | None = None) -> None:
        """The verdict; check rows that are None (the job's folds never finished) are read here."""
        if self._verdict:
            return
        spec, campaign, configs, run_ids, docs_dir = self._batches
        try:
            objects, raw = self._early.result()
            checked = {"client_seconds": client_checks, "node_seconds": node_checks}
            raw = {**raw, **{rt: rows.to_pandas() if rows is not None else raw_rows(objects, [rt])[rt]
                             for rt, rows in checked.items()}}
        finally:
            self._pool.shutdown(wait=False)
        gate(spec, "raw", campaign, configs, run_ids, docs_dir,
             campaign_raw_frames(raw, campaign, configs, run_ids))
        self._verdict = True  # passed: a later call (the job failing after its write began) has nothing to add
