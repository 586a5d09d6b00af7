"""The raw-results data contract between the load generator (writer) and the Spark jobs (reader).

One place for every record type: its columns, their types and meaning. The load generator builds its
Parquet schemas from these lists; the Spark jobs and the GX suites read the same names. Types are
Arrow type names (see `arrow_type`). Every record carries the run key columns first.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "string" | "int32" | "int64" | "float64" | "bool" | "binary"
    doc: str
    nullable: bool = False


RUN_KEY = (
    Column("campaign", "string", "campaign name"),
    Column("config_id", "string", "cluster config, e.g. n3-c5.4xlarge-gp2"),
    Column("scenario", "string", "scenario name"),
    Column("run_id", "string", "run label given by the orchestrator (DAG run), never wall-clock 'latest'"),
    Column("repeat", "int32", "1-based repeat of this config x scenario"),
)

# One row per second per load-generator worker process.
CLIENT_SECONDS = (*RUN_KEY,
    Column("worker", "int32", "worker process index (0-based)"),
    Column("second", "int32", "whole seconds since scenario start (the row covers [second, second+1))"),
    Column("ts", "float64", "epoch seconds at the start of the row's second"),
    Column("phase", "int32", "1-based phase number the second belongs to; 0 = the drain after the last phase"),
    Column("warmup", "bool", "second lies in the phase's warm-up window (excluded from summaries)"),
    Column("target_rate", "float64", "scheduled total publish rate of the whole run at this second, msg/s"),
    Column("scheduled", "int64", "messages this worker's schedule made due in this second"),
    Column("processing_ms", "float64", "scheduled consumer processing time per message, ms"),
    Column("published", "int64", "basic.publish calls made"),
    Column("confirmed", "int64", "messages positively confirmed by the broker"),
    Column("nacked", "int64", "messages negatively confirmed"),
    Column("returned", "int64", "mandatory messages returned unroutable"),
    Column("consumed", "int64", "deliveries received (including redeliveries)"),
    Column("redelivered", "int64", "deliveries with the redelivered flag set"),
    Column("acked", "int64", "deliveries acknowledged"),
    Column("in_flight", "int64", "unconfirmed messages at the end of the second"),
    Column("publish_delay_max_us", "float64", "worst lateness of a send against its intended time"),
    Column("publish_delay_hist", "binary", "histogram of send lateness, us (sizing.histogram wire format)"),
    Column("e2e_hist", "binary", "histogram of end-to-end latency: intended send time -> delivery, us"),
    Column("e2e_max_us", "float64", "exact worst end-to-end latency of the second, us (the histogram's max is a "
           "bucket's representative value, up to 1 % low); null when nothing was delivered", nullable=True),
    Column("confirm_hist", "binary", "histogram of confirm latency: actual send -> confirm, us"),
    Column("blocked_ms", "float64", "time this worker's connections spent blocked by the broker"),
    Column("cpu_s", "float64", "CPU seconds the worker process used in this second"),
    Column("publishers", "int32", "publishers this worker runs"),
    Column("consumers", "int32", "consumers this worker runs"),
)

# One row per phase per run: what happened to every confirmed message (computed after the drain).
ACCOUNTING = (*RUN_KEY,
    Column("phase", "int32", "phase whose schedule the messages belong to (by intended send time)"),
    Column("published", "int64", "messages published"),
    Column("confirmed", "int64", "messages confirmed"),
    Column("consumed_unique", "int64", "distinct messages consumed"),
    Column("lost", "int64", "confirmed messages never consumed"),
    Column("duplicates", "int64", "messages consumed again without the redelivered flag"),
    Column("redelivered", "int64", "deliveries flagged redelivered"),
    Column("reordered", "int64", "deliveries older than an earlier delivery of the same publisher on one queue"),
)

# Anything that happens at a point in time: phase boundaries, faults, blocked connections, warnings.
EVENTS = (*RUN_KEY,
    Column("ts", "float64", "epoch seconds"),
    Column("second", "float64", "seconds since scenario start"),
    Column("phase", "int32", "phase at that time (0 before the first)"),
    Column("kind", "string", "phase_start | phase_end | fault_start | fault_heal | fault_error | "
                             "connection_blocked | connection_unblocked | worker_behind | run_start | run_end"),
    Column("fault_id", "string", "fault event id from the timeline", nullable=True),
    Column("fault_kind", "string", "kill_node | stop_node | ... ", nullable=True),
    Column("node", "string", "node name the event concerns", nullable=True),
    Column("detail", "string", "JSON with anything else", nullable=True),
)

# Broker-side samples from the management API, one row per node per sample.
BROKER_SAMPLES = (*RUN_KEY,
    Column("ts", "float64", "epoch seconds"),
    Column("second", "float64", "seconds since scenario start"),
    Column("phase", "int32", "phase at that time"),
    Column("node", "string", "node name"),
    Column("running", "bool", "node reported running"),
    Column("mem_used_bytes", "int64", "memory used", nullable=True),
    Column("mem_limit_bytes", "int64", "memory high watermark", nullable=True),
    Column("mem_alarm", "bool", "memory alarm in effect"),
    Column("disk_free_bytes", "int64", "free disk", nullable=True),
    Column("disk_alarm", "bool", "disk alarm in effect"),
    Column("queue_messages", "int64", "messages in queues led by this node"),
    Column("queue_messages_ready", "int64", "ready messages in queues led by this node"),
    Column("queue_messages_unacked", "int64", "unacknowledged messages in queues led by this node"),
    Column("publish_rate", "float64", "broker-side publish rate into queues led by this node, msg/s"),
    Column("deliver_rate", "float64", "broker-side deliver rate from queues led by this node, msg/s"),
)

# The timeline as run, one row per phase (the analysis reads phase windows from here).
PHASES = (*RUN_KEY,
    Column("phase", "int32", "1-based phase number"),
    Column("phase_name", "string", "e.g. rate-30000"),
    Column("start_s", "float64", "phase start, seconds since scenario start"),
    Column("duration_s", "float64", "phase length, s"),
    Column("warmup_s", "float64", "warm-up at the start of the phase, s"),
    Column("target_rate", "float64", "mean scheduled publish rate, msg/s"),
    Column("rate_start", "float64", "scheduled rate at phase start"),
    Column("rate_end", "float64", "scheduled rate at phase end"),
    Column("processing_ms_start", "float64", "processing time at phase start"),
    Column("processing_ms_end", "float64", "processing time at phase end"),
    Column("scenario_start_ts", "float64", "epoch seconds of scenario start (second 0)"),
)

RECORD_TYPES: dict[str, tuple[Column, ...]] = {
    "client_seconds": CLIENT_SECONDS,
    "accounting": ACCOUNTING,
    "events": EVENTS,
    "broker_samples": BROKER_SAMPLES,
    "phases": PHASES,
}


def column_names(record_type: str) -> list[str]:
    return [c.name for c in RECORD_TYPES[record_type]]


def arrow_schema(record_type: str):  # -> pyarrow.Schema; pyarrow imported lazily to keep the core light
    import pyarrow as pa

    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
             "bool": pa.bool_(), "binary": pa.binary()}
    return pa.schema([pa.field(c.name, types[c.type], nullable=c.nullable) for c in RECORD_TYPES[record_type]])


def spark_ddl(record_type: str) -> str:
    """The same schema as a Spark DDL string (the Spark jobs never infer raw schemas)."""
    types = {"string": "STRING", "int32": "INT", "int64": "BIGINT", "float64": "DOUBLE", "bool": "BOOLEAN",
             "binary": "BINARY"}
    return ", ".join(f"`{c.name}` {types[c.type]}" for c in RECORD_TYPES[record_type])
