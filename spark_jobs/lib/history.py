"""history: the `runs` table (a library module; the analysis job calls it for every run it analyses).

One row per run (schema sizing.contract.records RUNS, built by the pure sizing.judgement.history.run_row): the run's
load-run manifests (what each run recorded: status, times, spec hash, code commit, the running broker's RabbitMQ and
Erlang versions, pika), the spec the analysis read, and the analysis' own Spark version and commit. Written into the
run's partition `tables/runs/campaign=C/run=R/`, replacing only that run's row; a re-analysis without a baseline keeps
the one the row named.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from adapters.installed import code_commit
from adapters.objectstore import StoreSpec
from sizing.campaign import Campaign
from sizing.contract import layout, raw_layout, records
from sizing.judgement.history import run_row
from spark_jobs.lib.tableio import read_table, replace_table

TABLE = "runs"


def manifests(spec: StoreSpec, campaign: str, run_id: str) -> list[dict[str, Any]]:
    """Every load run's manifest of the run (any config, scenario, repeat), as the load generator last wrote it."""
    store = spec.open()
    keys = [k for k in store.list(raw_layout.raw_campaign_prefix(campaign))
            if raw_layout.is_manifest(k) and layout.partition_value(k, "run") == run_id]
    out = []
    for key in sorted(keys):
        try:
            out.append(json.loads(store.get(key)))
        except (ValueError, KeyError):
            continue  # a half-written or vanished manifest: the run's status then says what is missing
    return out


def stored_baseline(spark: SparkSession, spec: StoreSpec, campaign: str, run_id: str) -> str | None:
    rows = read_table(spark, spec, TABLE, campaign, run_id=run_id).select("baseline_run").collect()
    return next((r["baseline_run"] for r in rows if r["baseline_run"]), None)


def write_runs(spark: SparkSession, spec: StoreSpec, campaign: Campaign, run_ids: Sequence[str],
               baseline_run: str | None = None) -> list[dict[str, Any]]:
    """The `runs` row of each run, written into its partition. `baseline_run`: the run each was compared with (None
    keeps what the stored row says)."""
    rows = []
    for run_id in run_ids:
        baseline = baseline_run or stored_baseline(spark, spec, campaign.name, run_id)
        row = run_row(campaign, run_id, manifests(spec, campaign.name, run_id), spark_version=spark.version,
                      analysis_commit=code_commit(), analysed_at=time.time(), baseline_run=baseline)
        replace_table(spark.createDataFrame([row], records.table_ddl(TABLE)), spec, TABLE, campaign.name, [run_id])
        print(f"runs: {campaign.name} run {run_id}: {row['status']}, {row['load_runs']} load run(s), RabbitMQ "
              f"{row['rabbitmq_version'] or 'unknown'}, Erlang {row['erlang_version'] or 'unknown'}"
              + (f", baseline {baseline}" if baseline else ""), flush=True)
        rows.append(row)
    return rows
