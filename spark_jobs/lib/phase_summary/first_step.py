"""The analysis job's first step: read the raw records of the given configs and runs (never "latest"), fold and
summarise them, and overwrite exactly the `tables/phase_summary/campaign=C/config=K/run=R/` partitions of those
configs and runs (every other run of a config keeps its rows, issue 24), and the tables beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.objectstore import StoreSpec
from sizing.campaign import Campaign
from sizing.contract import layout, records
from spark_jobs.lib import gate, series
from spark_jobs.lib.phase_summary.broker_series import broker_series
from spark_jobs.lib.phase_summary.client_fold import CLIENT_FOLD, ClientRecords
from spark_jobs.lib.phase_summary.client_series import client_series
from spark_jobs.lib.phase_summary.keys import phase_windows
from spark_jobs.lib.phase_summary.node_fold import NODE_FOLD, NodeRecords
from spark_jobs.lib.phase_summary.node_series import write_node_series
from spark_jobs.lib.phase_summary.resources import resource_limits_frame
from spark_jobs.lib.phase_summary.run_events import run_events
from spark_jobs.lib.phase_summary.summary import TABLE, Rules, summarise
from spark_jobs.lib.tableio import RawObjects, replace_table


def run(spark: SparkSession, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
        rules: Rules, resource_limits: DataFrame | None = None,
        raw_gate: Callable[[pa.Table, pa.Table], None] | None = None) -> None:
    """Read these configs' raw records of these runs, summarise them, replace their phase_summary partitions (one
    per config and run: every other run's rows of the config stay). `raw_gate`: called with the folds' check rows
    (gate.client_checks, gate.node_checks) once the summary is computed and before anything is written (raising
    stops the write)."""
    objects = RawObjects.list(spec, campaign, configs, run_ids)
    raw = {rt: objects.read(spark, rt) for rt in records.RECORD_TYPES if rt not in ("client_seconds", "node_seconds")}
    # client_seconds and node_seconds are read once, never whole: folded per worker or node phase where read, and
    # checked for the raw gate in the same pass (and client_seconds' per-second columns summed over workers).
    windows = phase_windows(raw["phases"])
    clients = ClientRecords.folded(objects.read(spark, "client_seconds", CLIENT_FOLD.with_arguments(windows)))
    nodes = NodeRecords.folded(objects.read(spark, "node_seconds", NODE_FOLD.with_arguments(windows)))
    table = summarise(raw["phases"], clients, raw["accounting"], raw["events"], raw["broker_samples"], rules,
                      nodes=nodes, resource_limits=resource_limits)
    checked = None if raw_gate is None else lambda: raw_gate(clients.checks.toArrow(), nodes.checks.toArrow())
    start = time.monotonic()
    replace_table(table, spec, TABLE, campaign, run_ids, configs, checked)
    nodes.release()
    _progress(f"phase_summary: {len(configs)} config(s) folded, summarised and written", start)
    for chunk in series.config_chunks(objects, configs):
        write_series(spec, campaign, chunk, run_ids, clients, raw["broker_samples"], raw["events"])
        _progress(f"phase_summary: client_series, broker_series and run_events of {', '.join(chunk)} written", start)
    write_node_series(objects, campaign, configs, run_ids)
    _progress("phase_summary: node_series written", start)
    clients.release()


def _progress(what: str, start: float) -> None:
    print(f"{what} ({time.monotonic() - start:.1f} s)", flush=True)


def write_series(spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
                 clients: ClientRecords, broker_samples: DataFrame, events: DataFrame) -> None:
    """Issue 35: the tables beside phase_summary of these configs and runs (sizing.contract.records.BESIDE_SUMMARY: the
    per-second series and the run's events), from what phase_summary read, into the same partitions as
    phase_summary's; node_series apart (node_series.write_node_series)."""
    def of_chunk(frame: DataFrame) -> DataFrame:  # before the per-run grouping: each write computes its own runs
        return frame.filter(F.col("config_id").isin(list(configs)))

    frames = {"client_series": client_series(of_chunk(clients.series)),
              "broker_series": broker_series(of_chunk(broker_samples)),
              "run_events": run_events(of_chunk(events))}
    for name, frame in frames.items():
        replace_table(frame, spec, name, campaign, run_ids, configs)


def step(spark: SparkSession, spec: StoreSpec, campaign: Campaign, configs: Sequence[str], run_ids: Sequence[str],
         validate: bool = False, docs_dir: str | None = None, raw_gate: gate.RawGate | None = None) -> None:
    """The analysis job's first step: the phase_summary partitions of these configs from these runs. With
    `validate`, GX checks the raw batches before anything is written and each written partition after.

    The raw gate (`raw_gate`, or one started here) checks the client and node rows in the reads that fold them;
    the summary is written only once it has passed, and a failed gate stops the job with nothing written."""
    limits, rules = resource_limits_frame(spark, campaign), Rules.of(campaign)
    if not validate:
        run(spark, spec, campaign.name, configs, run_ids, rules, resource_limits=limits)
    else:
        raw_gate = raw_gate or gate.RawGate(spec, campaign, configs, run_ids, docs_dir)
        try:
            run(spark, spec, campaign.name, configs, run_ids, rules, resource_limits=limits,
                raw_gate=raw_gate.passed)
        except Exception:
            raw_gate.passed()  # a batch that failed its gate says so, not the summary's error on it
            raise
        gate.gate(spec, "phase_summary", campaign, configs, run_ids, docs_dir)
    print(f"phase_summary: wrote {', '.join(configs)} of {campaign.name}, run(s) {', '.join(run_ids)}, to "
          f"{spec.uri(layout.table_prefix(TABLE, campaign.name))}", flush=True)
