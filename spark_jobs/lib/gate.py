"""The GX gate (a library module): validate batches, file each result next to its batch, stop a job on failure.

Batches: raw (one config's raw records of one run), phase_summary (one config's partition of one run),
leaderboards (the campaign-wide tables of one run: VALIDATED_CAMPAIGN_TABLES, the `runs` row included). The
result JSON goes to sizing.layout.validation_key(batch, campaign, config, run) (config CAMPAIGN_WIDE for
campaign-wide batches). A job validates all its configs' batches of a kind in one read and one GX run, and only
when that fails each batch on its own (validate_batches).
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
from pyspark.sql import SparkSession

from adapters.objectstore import StoreSpec
from sizing import layout, records
from sizing.spec import Campaign
from sizing.timeline import expand
from spark_jobs.lib import validation
from spark_jobs.lib.tableio import RawObjects, read_partitions, read_table

RUN_COLS = validation.RUN_COLS
CAMPAIGN_WIDE = "all"
BATCHES = ("raw", "phase_summary", "leaderboards")
# The campaign-wide tables the `leaderboards` batch validates: every one that has a suite of the same name
# (derived, so a new campaign table with a suite is validated without a second list to update).
VALIDATED_CAMPAIGN_TABLES = tuple(name for name in records.CAMPAIGN_TABLES if name in validation.SUITES)


# The histogram columns, checked for their wire format (whole 6-byte buckets) where they are read and then dropped:
# the suites see `hist_wire_ok`, and no frame carries the blobs for the gate.
HIST_COLUMNS = [c.name for c in records.CLIENT_SECONDS if c.type == "binary"]
CHECKED_CLIENT_COLUMNS = [c.name for c in records.CLIENT_SECONDS if c.type != "binary"]


def checked_client_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """client_seconds rows as the raw suite checks them: every column but the histograms,
    plus whether every histogram is whole 6-byte buckets (a null histogram is fine)."""
    fields = [f for f in records.arrow_schema("client_seconds") if f.name in CHECKED_CLIENT_COLUMNS]
    schema = pa.schema([*(f.with_nullable(True) for f in fields), pa.field("hist_wire_ok", pa.bool_())])
    for batch in batches:
        ok = np.ones(batch.num_rows, dtype=bool)
        for col in HIST_COLUMNS:
            ok &= whole_buckets(batch.column(col))
        yield pa.RecordBatch.from_arrays([*(batch.column(f.name) for f in fields), pa.array(ok)], schema=schema)


def whole_buckets(histograms: pa.Array) -> np.ndarray:
    """Per row: the histogram is whole 6-byte buckets (sizing.histogram's wire format), or null."""
    return pc.fill_null(pc.binary_length(histograms), 0).to_numpy(zero_copy_only=False) % 6 == 0


def raw_frames(raw: dict[str, pd.DataFrame], expected_phases: dict[str, int] | Callable[[str], dict[str, int]],
               expected_groups: dict[str, list[str]] | None = None,
               expected_batches: Sequence[dict[str, str]] = ()) -> dict[str, pd.DataFrame]:
    """Pandas frames for the raw suites, of any number of configs and runs at once (every suite's keys hold the
    config and run), from the raw records: `raw["client_seconds"]` as checked where read (checked_client_rows).
    `expected_phases`: scenario -> phase count per the campaign spec (or config -> that mapping: the count
    depends on the cluster); `expected_groups`: scenario -> its workload groups (issue 14; default: the one
    implicit group); `expected_batches`: the {campaign, config_id, run_id} read, each of which must have records
    (a batch with none gets a row that fails, so that a union of batches cannot hide an empty one). The
    cross-record rules hold per (run, phase, group): every group of every phase has phases, client and accounting
    rows."""
    expected_groups = expected_groups or {}
    phases_of = expected_phases if callable(expected_phases) else (lambda _config: expected_phases)
    client = raw["client_seconds"]
    phases = raw["phases"].assign(group=_group(raw["phases"]))[[*RUN_COLS, "phase", "start_s", "warmup_s", "group"]]
    acc = raw["accounting"].assign(group=_group(raw["accounting"]))[
        [*RUN_COLS, "phase", "group", "lost", "duplicates", "reordered"]]
    nodes = raw["node_seconds"]
    nodes["missing_has_no_figures"] = ~nodes["missing"].astype(bool) | nodes["cpu_busy"].isna()

    key = [*RUN_COLS, "phase", "group"]
    # Null keys never match in a join (as in Spark SQL): a row with a null key is the row-level suites' to fail.
    by_phase = phases.dropna(subset=[*RUN_COLS, "phase"]).drop_duplicates([*RUN_COLS, "phase"])
    timed = client[[*RUN_COLS, "phase", "second", "warmup"]].dropna(subset=[*RUN_COLS, "phase"]).merge(
        by_phase[[*RUN_COLS, "phase", "start_s", "warmup_s"]], on=[*RUN_COLS, "phase"], how="inner")
    expected_flag = timed["second"] < timed["start_s"] + timed["warmup_s"]
    judged = timed[["second", "warmup", "start_s", "warmup_s"]].notna().all(axis=1)
    timed["warmup_flag_errors"] = (judged & (timed["warmup"].astype("boolean") != expected_flag)).astype(int)
    warm = timed.groupby([*RUN_COLS, "phase"], as_index=False)["warmup_flag_errors"].sum()
    # sums as Spark SQL's: nulls skipped, null when every value is
    sums = client.groupby(RUN_COLS, dropna=False)[["published", "redelivered", "consumed"]].sum(min_count=1)
    per_run = pd.DataFrame({"run_published_plus_redelivered": sums["published"] + sums["redelivered"],
                            "run_consumed": sums["consumed"]}).reset_index()
    # phase 0 is the drain after the timeline: records, but no phase of the spec
    seen_cs = (client.loc[client["phase"] > 0, [*RUN_COLS, "phase"]]
               .assign(group=client["group"].fillna(records.DEFAULT_GROUP)).drop_duplicates()
               .assign(in_client_seconds=True))
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
    return {"raw_client_seconds": client, "raw_run_phase": frame, "raw_node_seconds": nodes}


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


def batch_frames(spark: SparkSession | None, spec: StoreSpec, batch: str, campaign: Campaign, configs: Sequence[str],
                 run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The frames of a batch kind for these configs and runs, each record type read once for all of them (the raw
    batch without Spark: `spark` may be None)."""
    if batch == "raw":  # every row of the batch is checked, so read in this process: not through the JVM
        objects = RawObjects.list(spec, campaign.name, configs, run_ids)
        raw = {rt: objects.rows(rt, checked_client_rows if rt == "client_seconds" else None).to_pandas()
               for rt in ("client_seconds", "phases", "accounting", "node_seconds")}
        return campaign_raw_frames(raw, campaign, configs, run_ids)
    if spark is None:
        raise ValueError(f"the {batch} batch is read through Spark: a session is needed")
    if batch == "phase_summary":
        return {"phase_summary": read_partitions(spark, spec, "phase_summary", campaign.name, configs,
                                                 run_ids).toPandas()}
    if batch == "leaderboards":
        return {name: pd.concat([read_table(spark, spec, name, campaign.name, run_id=run_id).toPandas()
                                 for run_id in run_ids], ignore_index=True)
                for name in VALIDATED_CAMPAIGN_TABLES}
    raise ValueError(f"unknown batch {batch!r}: raw | phase_summary | leaderboards")


def of_batch(frames: dict[str, pd.DataFrame], config_id: str, run_id: str) -> dict[str, pd.DataFrame]:
    """One config's and run's rows of frames that hold several (of a campaign-wide batch: the run's rows)."""
    def rows(frame: pd.DataFrame) -> pd.Series:
        of_run = frame["run_id"] == run_id
        return of_run if config_id == CAMPAIGN_WIDE else of_run & (frame["config_id"] == config_id)

    return {name: frame[rows(frame)].reset_index(drop=True) for name, frame in frames.items()}


def validate_batches(spark: SparkSession | None, spec: StoreSpec, batch: str, campaign: Campaign,
                     configs: Sequence[str], run_ids: Sequence[str],
                     docs_dir: str | None) -> dict[tuple[str, str], validation.Outcome]:
    """Run the batch's suites over these configs and runs, and file one result per config and run at
    sizing.layout.validation_key (whatever the outcome).

    All of them are validated in one GX run (a GX run costs ~2 s however few its rows: 21 configs paid it 21 times
    per batch kind). Every suite's expectations hold row by row or per key, and every key holds the config and
    run, so the union passes exactly when each part would; the one exception, a batch with no rows, is an
    explicit failing row (raw_frames). Only when the union fails is each config and run validated on its own, so
    that each document names its own failures (the union's verdict is GX's BOOLEAN_ONLY, half the time of the
    counts and lists of unexpected values on a million rows; a single batch gets them at once)."""
    frames = batch_frames(spark, spec, batch, campaign, configs, run_ids)
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


def validate_batch(spark: SparkSession, spec: StoreSpec, batch: str, campaign: Campaign, config_id: str,
                   run_id: str, docs_dir: str | None) -> validation.Outcome:
    """One config's batch of one run (the `validate` job): validate_batches of just it."""
    return validate_batches(spark, spec, batch, campaign, [config_id], [run_id], docs_dir)[(config_id, run_id)]


class ValidationFailed(SystemExit):
    """A batch failed its suite: the job exits non-zero, naming every failed expectation."""


def gate(spark: SparkSession | None, spec: StoreSpec, batch: str, campaign: Campaign, configs: Sequence[str],
         run_ids: Sequence[str], docs_dir: str | None) -> None:
    """Validate these configs' batches of these runs inside a job's own Spark session (no extra spark-submit),
    in one GX run (validate_batches), and stop the job when any failed, naming every failed expectation."""
    start = time.monotonic()
    outcomes = validate_batches(spark, spec, batch, campaign, configs, run_ids, docs_dir)
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
    """The raw batches' gate, running in a thread from the moment a job knows its batches. It reads and checks
    every raw row in this process without Spark, so it overlaps the session's start and Spark's summary of the
    same records; `passed()` waits for its verdict and raises ValidationFailed when a batch failed."""

    def __init__(self, spec: StoreSpec, campaign: Campaign, configs: Sequence[str], run_ids: Sequence[str],
                 docs_dir: str | None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raw-gate")
        self._verdict = self._pool.submit(gate, None, spec, "raw", campaign, configs, run_ids, docs_dir)

    def passed(self) -> None:
        try:
            self._verdict.result()
        finally:
            self._pool.shutdown(wait=False)
