"""Builders of raw records for the Spark tests (real record schema, real layout keys)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sizing.contract import raw_layout, records
from sizing.contract.histogram import LogHistogram
from sizing.contract.layout import RunKey


def client_rows(key: RunKey, phase: int, worker: int, seconds: range, warmup_until: int, *, target_rate: float,
                per_second: int, e2e_us: list[np.ndarray] | None = None, cpu_s: float = 0.2,
                publish_delay_us: float = 500.0, consumed: int | None = None) -> list[dict]:
    rows = []
    for i, s in enumerate(seconds):
        e2e = LogHistogram()
        if e2e_us is not None:
            e2e.add_many(e2e_us[i])
        else:
            e2e.add(5000.0, per_second)
        confirm = LogHistogram()
        confirm.add(2000.0, per_second)
        delay = LogHistogram()
        delay.add(publish_delay_us, per_second)
        rows.append({**key.as_dict(), "worker": worker, "second": s, "ts": 1.6e9 + s, "phase": phase,
                     "warmup": s < warmup_until, "target_rate": target_rate, "scheduled": per_second,
                     "processing_ms": 0.0, "published": per_second, "confirmed": per_second, "nacked": 0,
                     "returned": 0, "consumed": per_second if consumed is None else consumed, "redelivered": 0,
                     "foreign": 0, "acked": per_second, "in_flight": 0, "publish_delay_max_us": publish_delay_us,
                     "publish_delay_hist": delay.to_bytes(), "e2e_hist": e2e.to_bytes(),
                     "confirm_hist": confirm.to_bytes(), "blocked_ms": 0.0, "cpu_s": cpu_s, "publishers": 1,
                     "consumers": 1})
    return rows


def phase_row(key: RunKey, phase: int, start_s: float, duration_s: float, warmup_s: float, rate: float) -> dict:
    return {**key.as_dict(), "phase": phase, "phase_name": f"rate-{rate:g}", "start_s": start_s,
            "duration_s": duration_s, "warmup_s": warmup_s, "target_rate": rate, "rate_start": rate,
            "rate_end": rate, "processing_ms_start": 0.0, "processing_ms_end": 0.0, "scenario_start_ts": 1.6e9}


def table(record_type: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=records.arrow_schema(record_type))


def rows_as_read(record_type: str, rows: list[dict]):  # -> pandas.DataFrame
    """Rows as the raw gate reads them (gate.raw_rows): aligned like a stored object, client and node rows as check
    rows."""
    from spark_jobs.lib import gate
    from spark_jobs.lib.s3source import align_to_schema, fold_input_schema, fold_table

    checked = gate.CHECKED_WHERE_READ.get(record_type)
    schema = records.arrow_schema(record_type)
    if not checked:
        return align_to_schema(table(record_type, rows), schema).to_pandas()
    return fold_table(align_to_schema(table(record_type, rows), fold_input_schema(schema)), checked[0]).to_pandas()


def frames(spark, record_type: str, rows: list[dict]):
    """A Spark DataFrame in the raw schema (what the reader yields)."""
    return spark.createDataFrame(table(record_type, rows).to_pandas(), records.spark_ddl(record_type)) if rows \
        else spark.createDataFrame([], records.spark_ddl(record_type))


def put(store, key: RunKey, record_type: str, rows: list[dict], phase: int | None = None,
        worker: int | None = None) -> None:
    store.put_parquet(raw_layout.raw_part_key(key, record_type, phase, worker), table(record_type, rows))


def write_with_loadgen_recorder(objects: dict[str, pa.Table], key: RunKey, out_dir, s3) -> list[str]:
    """Write raw objects through the load generator's own writer (loadgen.recorder.RecordStore): same keys,
    same schema, same upload path as a real run."""
    import re

    from loadgen.recorder import RecordStore

    recorder = RecordStore(key, out_dir, upload=True, s3=s3)
    run_cols = set(key.as_dict())
    for object_key, tbl in objects.items():
        rest = object_key[len(raw_layout.raw_run_prefix(key)):]
        record_type = rest.split("/", 1)[0]
        phase = re.search(r"/phase=(\d+)/", object_key)
        worker = re.search(r"/worker=(\d+)\.parquet$", object_key)
        rows = [{k: v for k, v in row.items() if k not in run_cols} for row in tbl.to_pylist()]
        written = recorder.write_records(record_type, rows, phase=int(phase.group(1)) if phase else None,
                                         worker=int(worker.group(1)) if worker else None)
        assert written == object_key, (written, object_key)
    assert not recorder.errors, recorder.errors
    return recorder.uploaded


def node_rows(key: RunKey, phase: int, node: str, seconds: range, *, cpu_busy: float, target: str = "local",
              write_bytes: float = 0.0, write_ops: float | None = None, net_bytes: float = 0.0,
              missing: range = range(0), volumes: dict[str, tuple[float, float]] | None = None,
              cpu_quota_cores: float | None = None) -> list[dict]:
    """node_seconds rows with constant figures (net_bytes per direction, half of it client traffic; `volumes`:
    role -> (write bytes/s, write ops/s) of each volume of the node; `cpu_quota_cores`: a local node in its
    scale-model envelope, whose cores are not shared)."""
    rows = []
    for s in seconds:
        figures = dict.fromkeys(records.column_names("node_seconds"))
        if s not in missing:
            figures.update({"cores": 2, "cpu_busy": cpu_busy, "cpu_user": cpu_busy, "cpu_system": 0.0,
                            "cpu_s": cpu_busy * 2, "machine_cpu_busy_s": cpu_busy * 2, "machine_cores": 2,
                            "disk_write_bytes_per_s": write_bytes, "disk_read_bytes_per_s": 0.0,
                            "disk_write_ops_per_s": write_ops, "net_in_bytes_per_s": net_bytes,
                            "net_out_bytes_per_s": net_bytes, "client_in_bytes_per_s": net_bytes / 2,
                            "client_out_bytes_per_s": net_bytes / 2, "internode_in_bytes_per_s": net_bytes / 2,
                            "internode_out_bytes_per_s": net_bytes / 2, "run_queue": 1.0, "span_s": 1.0})
            for role, (written, ops) in (volumes or {}).items():
                figures.update({f"{role}_write_bytes_per_s": written, f"{role}_write_ops_per_s": ops})
        rows.append({**figures, **key.as_dict(), "second": s, "ts": 1.6e9 + s, "phase": phase, "node": node,
                     "target": target, "missing": s in missing, "cpu_quota_cores": cpu_quota_cores,
                     "shared_cores": target == "local" and cpu_quota_cores is None})
    return rows


def series_tables(raw: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """The tables beside phase_summary (sizing.contract.records.BESIDE_SUMMARY) of one run's raw records, as the
    analysis writes them: run_events the events as they are; client
    and node series by the analysis' own pure code (the client fold's blocks and their per-run rows; node_series is
    node_seconds' columns), broker_series as each node's last sample per whole second. For report tests that write
    tables without running Spark."""
    import pandas as pd

    from spark_jobs.lib import series
    from spark_jobs.lib.phase_summary.client_fold import _series
    from spark_jobs.lib.phase_summary.client_series import _client_series_of_run
    from spark_jobs.lib.phase_summary.keys import with_group_rows

    out = {}
    if "client_seconds" in raw:
        blocks = _series(with_group_rows(raw["client_seconds"]))
        rows = _client_series_of_run(blocks.to_pandas()) if blocks is not None else pd.DataFrame()
        out["client_series"] = pa.Table.from_pandas(rows, schema=series.arrow_schema("client_series"),
                                                    preserve_index=False)
    if "node_seconds" in raw:
        out["node_series"] = raw["node_seconds"].select(records.table_columns("node_series")).cast(
            series.arrow_schema("node_series"))
    if "events" in raw:
        out["run_events"] = raw["events"].select(records.table_columns("run_events")).cast(
            series.arrow_schema("run_events"))
    if "broker_samples" in raw:
        samples = raw["broker_samples"].to_pandas()
        samples["second"] = samples["second"].floordiv(1).astype("int32")
        by = samples.sort_values("ts", kind="stable").groupby([*(c.name for c in records.RUN_KEY), "node", "second"],
                                                              sort=True)
        last = by.last().reset_index()
        last["samples"] = by.size().to_numpy()
        last["mem_share"] = last["mem_used_bytes"] / last["mem_limit_bytes"]
        out["broker_series"] = pa.Table.from_pandas(last[records.table_columns("broker_series")],
                                                    schema=series.arrow_schema("broker_series"), preserve_index=False)
    return out
