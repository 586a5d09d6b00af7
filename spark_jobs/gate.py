"""The GX gate (a library module): validate one batch, file the result next to it, stop a job on failure.

Batches: raw (one config's raw records of one run), phase_summary (one config's partition of one run),
leaderboards (the campaign-wide tables of one run: VALIDATED_CAMPAIGN_TABLES, the `runs` row included). The
result JSON goes to sizing.layout.validation_key(batch, campaign, config, run) (config CAMPAIGN_WIDE for
campaign-wide batches).
The suites themselves are spark_jobs/validation.py; the `validate` job and the jobs' --validate flags call this.
"""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.objectstore import StoreSpec
from sizing import layout, records
from sizing.spec import Campaign
from sizing.timeline import expand
from spark_jobs import validation
from spark_jobs.tableio import RawObjects, read_table

RUN_COLS = validation.RUN_COLS
CAMPAIGN_WIDE = "all"
BATCHES = ("raw", "phase_summary", "leaderboards")
# The campaign-wide tables the `leaderboards` batch validates: every one that has a suite of the same name
# (derived, so a new campaign table with a suite is validated without a second list to update).
VALIDATED_CAMPAIGN_TABLES = tuple(name for name in records.CAMPAIGN_TABLES if name in validation.SUITES)


def raw_frames(raw: dict[str, DataFrame], expected_phases: dict[str, int],
               expected_groups: dict[str, list[str]] | None = None) -> dict[str, pd.DataFrame]:
    """Pandas frames for the raw suites. `expected_phases`: scenario -> phase count per the campaign spec;
    `expected_groups`: scenario -> its workload groups (issue 14; default: the one implicit group). The
    cross-record rules hold per (run, phase, group): every group of every phase has phases, client and
    accounting rows."""
    expected_groups = expected_groups or {}
    group = F.coalesce(F.col("group"), F.lit(records.DEFAULT_GROUP)).alias("group")
    cs = raw["client_seconds"]
    wire_ok = F.lit(True)
    for col in ("e2e_hist", "confirm_hist", "publish_delay_hist"):
        wire_ok = wire_ok & F.coalesce(F.length(col) % 6 == 0, F.lit(True))
    binary = [c.name for c in records.CLIENT_SECONDS if c.type == "binary"]
    # Cached without the histograms: four frames below read it, and each would read every object again.
    cs = cs.withColumn("hist_wire_ok", wire_ok).drop(*binary).cache()
    client = cs.toPandas()

    phases = raw["phases"].select(*RUN_COLS, "phase", "start_s", "warmup_s").dropDuplicates([*RUN_COLS, "phase"])
    warm = (cs.select(*RUN_COLS, "phase", "second", "warmup").join(phases, [*RUN_COLS, "phase"], "inner")
            .withColumn("expected", F.col("second") < F.col("start_s") + F.col("warmup_s"))
            .groupBy(*RUN_COLS, "phase")
            .agg(F.sum((F.col("warmup") != F.col("expected")).cast("int")).alias("warmup_flag_errors"))).toPandas()
    per_run = (cs.groupBy(*RUN_COLS)
               .agg((F.sum("published") + F.sum("redelivered")).alias("run_published_plus_redelivered"),
                    F.sum("consumed").alias("run_consumed"))).toPandas()
    # phase 0 is the drain after the timeline: records, but no phase of the spec
    seen_cs = cs.where(F.col("phase") > 0).select(*RUN_COLS, "phase", group).distinct().toPandas().assign(
        in_client_seconds=True)
    seen_ph = raw["phases"].select(*RUN_COLS, "phase", group).distinct().toPandas().assign(in_phases_table=True)
    acc = raw["accounting"].select(*RUN_COLS, "phase", group, "lost", "duplicates", "reordered").toPandas().assign(
        in_accounting=True)
    runs = pd.concat([seen_cs[RUN_COLS], seen_ph[RUN_COLS], per_run[RUN_COLS]]).drop_duplicates()
    expected = pd.DataFrame([{**r, "phase": p, "group": g} for r in runs.to_dict("records")
                             for p in range(1, expected_phases.get(r["scenario"], 0) + 1)
                             for g in expected_groups.get(r["scenario"], [records.DEFAULT_GROUP])],
                            columns=[*RUN_COLS, "phase", "group"])
    key = [*RUN_COLS, "phase", "group"]
    frame = (expected.merge(seen_ph, on=key, how="outer").merge(seen_cs, on=key, how="outer")
             .merge(acc, on=key, how="left").merge(warm, on=[*RUN_COLS, "phase"], how="left")
             .merge(per_run, on=RUN_COLS, how="left"))
    for col in ("in_phases_table", "in_client_seconds", "in_accounting"):
        frame[col] = frame[col].astype("boolean").fillna(False).astype(bool)
    frame["warmup_flag_errors"] = frame["warmup_flag_errors"].fillna(0)
    cs.unpersist()
    nodes = raw["node_seconds"].toPandas()
    nodes["missing_has_no_figures"] = ~nodes["missing"].astype(bool) | nodes["cpu_busy"].isna()
    return {"raw_client_seconds": client, "raw_run_phase": frame, "raw_node_seconds": nodes}


def _expected_phases(campaign: Campaign, config_id: str) -> dict[str, int]:
    nodes = campaign.cluster(config_id).nodes if config_id != CAMPAIGN_WIDE else 1
    return {s.name: len(expand(s, nodes, campaign.seed).phases) for s in campaign.scenarios}


def batch_frames(spark: SparkSession, spec: StoreSpec, batch: str, campaign: Campaign, config_id: str,
                 run_id: str) -> dict[str, pd.DataFrame]:
    if batch == "raw":
        objects = RawObjects.list(spec, campaign.name, [config_id], [run_id])
        raw = {rt: objects.read(spark, rt) for rt in records.RECORD_TYPES}
        return raw_frames(raw, _expected_phases(campaign, config_id),
                          {s.name: [g.name for g in s.workload_groups] for s in campaign.scenarios})
    if batch == "phase_summary":
        return {"phase_summary": read_table(spark, spec, "phase_summary", campaign.name, config_id,
                                            run_id).toPandas()}
    if batch == "leaderboards":
        return {name: read_table(spark, spec, name, campaign.name, run_id=run_id).toPandas()
                for name in VALIDATED_CAMPAIGN_TABLES}
    raise ValueError(f"unknown batch {batch!r}: raw | phase_summary | leaderboards")


def validate_batch(spark: SparkSession, spec: StoreSpec, batch: str, campaign: Campaign, config_id: str,
                   run_id: str, docs_dir: str | None) -> validation.Outcome:
    """Run the batch's suites and file the result at sizing.layout.validation_key (whatever the outcome)."""
    frames = batch_frames(spark, spec, batch, campaign, config_id, run_id)
    outcome = validation.validate_frames(frames, docs_dir)
    doc = outcome.document(batch, campaign.name, config_id, run_id)
    spec.open().put(layout.validation_key(batch, campaign.name, config_id, run_id),
                    json.dumps(doc, default=str, sort_keys=True).encode())
    return outcome


class ValidationFailed(SystemExit):
    """A batch failed its suite: the job exits non-zero, naming every failed expectation."""


def gate(spark: SparkSession, spec: StoreSpec, batch: str, campaign: Campaign, config_id: str, run_id: str,
         docs_dir: str | None) -> None:
    """Validate a batch inside a job's own Spark session (no extra spark-submit) and stop the job on failure."""
    outcome = validate_batch(spark, spec, batch, campaign, config_id, run_id, docs_dir)
    where = f"{batch} {campaign.name}/{config_id}/{run_id}"
    print(f"validate {where}: {outcome.message()}\nresult: "
          f"{spec.uri(layout.validation_key(batch, campaign.name, config_id, run_id))}")
    if not outcome.success:
        raise ValidationFailed(f"validation of {where} failed:\n  " + "\n  ".join(outcome.failures))
