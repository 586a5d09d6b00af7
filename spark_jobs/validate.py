"""validate: run the GX suites on one batch; write the result next to it; fail naming what failed.

    spark-submit --py-files build/sizing_jobs.zip spark_jobs/validate.py --batch raw \
        --spec campaigns/local-quick.yaml --campaign local-quick --config n1-c5.2xlarge-gp2 --run-id R1
    python -m spark_jobs.validate --batch leaderboards --spec ... --campaign local-quick --run-id R1

Batches: raw (one config's raw records of one run), phase_summary (one config's partition),
leaderboards (the campaign's leaderboards + adverse tables). The result JSON goes to
sizing.layout.validation_key(batch, campaign, config, run) (config "all" for campaign-wide batches);
Data Docs are built into --docs-dir (default build/gx_docs). Exit code 1 when any expectation failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.objectstore import StoreSpec
from sizing import layout, records
from spark_jobs import validation
from spark_jobs.s3source import read_objects
from spark_jobs.tables import PHASE_SUMMARY_DDL

RUN_COLS = validation.RUN_COLS
CAMPAIGN_WIDE = "all"


def raw_frames(raw: dict[str, DataFrame], expected_phases: dict[str, int]) -> dict[str, pd.DataFrame]:
    """Pandas frames for the raw suites. `expected_phases`: scenario -> phase count per the campaign spec."""
    cs = raw["client_seconds"]
    wire_ok = F.lit(True)
    for col in ("e2e_hist", "confirm_hist", "publish_delay_hist"):
        wire_ok = wire_ok & F.coalesce(F.length(col) % 6 == 0, F.lit(True))
    binary = [c.name for c in records.CLIENT_SECONDS if c.type == "binary"]
    client = cs.withColumn("hist_wire_ok", wire_ok).drop(*binary).toPandas()

    phases = raw["phases"].select(*RUN_COLS, "phase", "start_s", "warmup_s")
    warm = (cs.select(*RUN_COLS, "phase", "second", "warmup").join(phases, [*RUN_COLS, "phase"], "inner")
            .withColumn("expected", F.col("second") < F.col("start_s") + F.col("warmup_s"))
            .groupBy(*RUN_COLS, "phase")
            .agg(F.sum((F.col("warmup") != F.col("expected")).cast("int")).alias("warmup_flag_errors"))).toPandas()
    per_run = (cs.groupBy(*RUN_COLS)
               .agg((F.sum("published") + F.sum("redelivered")).alias("run_published_plus_redelivered"),
                    F.sum("consumed").alias("run_consumed"))).toPandas()
    # phase 0 is the drain after the timeline: records, but no phase of the spec
    seen_cs = cs.where(F.col("phase") > 0).select(*RUN_COLS, "phase").distinct().toPandas().assign(
        in_client_seconds=True)
    seen_ph = raw["phases"].select(*RUN_COLS, "phase").distinct().toPandas().assign(in_phases_table=True)
    acc = raw["accounting"].select(*RUN_COLS, "phase", "lost", "duplicates", "reordered").toPandas().assign(
        in_accounting=True)
    runs = pd.concat([seen_cs[RUN_COLS], seen_ph[RUN_COLS], per_run[RUN_COLS]]).drop_duplicates()
    expected = pd.DataFrame([{**r, "phase": p} for r in runs.to_dict("records")
                             for p in range(1, expected_phases.get(r["scenario"], 0) + 1)],
                            columns=[*RUN_COLS, "phase"])
    key = [*RUN_COLS, "phase"]
    frame = (expected.merge(seen_ph, on=key, how="outer").merge(seen_cs, on=key, how="outer")
             .merge(acc, on=key, how="left").merge(warm, on=key, how="left").merge(per_run, on=RUN_COLS, how="left"))
    for col in ("in_phases_table", "in_client_seconds", "in_accounting"):
        frame[col] = frame[col].astype("boolean").fillna(False).astype(bool)
    frame["warmup_flag_errors"] = frame["warmup_flag_errors"].fillna(0)
    return {"raw_client_seconds": client, "raw_run_phase": frame}


def _expected_phases(campaign, config_id: str) -> dict[str, int]:
    from sizing.timeline import expand

    nodes = campaign.cluster(config_id).nodes if config_id != CAMPAIGN_WIDE else 1
    return {s.name: len(expand(s, nodes, campaign.seed).phases) for s in campaign.scenarios}


def batch_frames(spark: SparkSession, spec: StoreSpec, batch: str, campaign, config_id: str,
                 run_id: str) -> dict[str, pd.DataFrame]:
    from spark_jobs import leaderboards
    from spark_jobs.phase_summary import read_raw

    if batch == "raw":
        raw = {rt: read_raw(spark, spec, campaign.name, [config_id], [run_id], rt) for rt in records.RECORD_TYPES}
        return raw_frames(raw, _expected_phases(campaign, config_id))
    if batch == "phase_summary":
        df = read_objects(spark, spec, [layout.table_prefix("phase_summary", campaign.name, config_id)],
                          PHASE_SUMMARY_DDL)
        return {"phase_summary": df.toPandas()}
    if batch == "leaderboards":
        return {name: read_objects(spark, spec, [layout.table_prefix(name, campaign.name)], ddl).toPandas()
                for name, ddl in (("leaderboards", leaderboards.LEADERBOARD_DDL),
                                  ("adverse", leaderboards.ADVERSE_DDL))}
    raise ValueError(f"unknown batch {batch!r}: raw | phase_summary | leaderboards")


def run(spark: SparkSession, spec: StoreSpec, batch: str, campaign, config_id: str, run_id: str,
        docs_dir: str | None) -> validation.Outcome:
    frames = batch_frames(spark, spec, batch, campaign, config_id, run_id)
    outcome = validation.validate_frames(frames, docs_dir)
    doc = outcome.document(batch, campaign.name, config_id, run_id)
    spec.open().put(layout.validation_key(batch, campaign.name, config_id, run_id),
                    json.dumps(doc, default=str, sort_keys=True).encode())
    return outcome


class ValidationFailed(SystemExit):
    """A batch failed its suite: the job exits non-zero, naming every failed expectation."""


def gate(spark: SparkSession, spec: StoreSpec, batch: str, campaign, config_id: str, run_id: str,
         docs_dir: str | None) -> None:
    """Validate a batch inside a job's own Spark session (no extra spark-submit) and stop the job on failure."""
    outcome = run(spark, spec, batch, campaign, config_id, run_id, docs_dir)
    where = f"{batch} {campaign.name}/{config_id}/{run_id}"
    print(f"validate {where}: {outcome.message()}\nresult: "
          f"{spec.uri(layout.validation_key(batch, campaign.name, config_id, run_id))}")
    if not outcome.success:
        raise ValidationFailed(f"validation of {where} failed:\n  " + "\n  ".join(outcome.failures))


def main(argv: Sequence[str] | None = None) -> int:
    from spark_jobs.campaigns import load as load_campaign
    from spark_jobs.session import get_session

    parser = argparse.ArgumentParser(prog="validate", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", required=True, choices=["raw", "phase_summary", "leaderboards"])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--config", default=CAMPAIGN_WIDE, help="config id (raw, phase_summary)")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--docs-dir", default="build/gx_docs")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    campaign = load_campaign(args.spec)
    if campaign.name != args.campaign:
        raise SystemExit(f"--campaign {args.campaign!r} but {args.spec} defines campaign {campaign.name!r}")
    if args.batch != "leaderboards" and args.config == CAMPAIGN_WIDE:
        raise SystemExit(f"--batch {args.batch} needs --config")
    spark = get_session(f"validate {args.batch} {args.campaign}")
    spec = StoreSpec.from_env()
    config = args.config if args.batch != "leaderboards" else CAMPAIGN_WIDE
    outcome = run(spark, spec, args.batch, campaign, config, args.run_id, args.docs_dir)
    key = layout.validation_key(args.batch, args.campaign, config, args.run_id)
    print(f"validate {args.batch} {args.campaign}/{config}/{args.run_id}: {outcome.message()}\n"
          f"result: {spec.uri(key)}")
    return 0 if outcome.success else 1


if __name__ == "__main__":
    # Run the importable module's main, so that functions shipped to Python workers come from
    # spark_jobs.validate (in the --py-files zip), not from a second copy loaded as __main__.
    from spark_jobs.validate import main as _main

    sys.exit(_main())
