"""The raw-results data contract between the load generator (writer) and the Spark jobs (reader).

One place for every record type: its columns, their types and meaning. The load generator builds its
Parquet schemas from these lists; the Spark jobs and the GX suites read the same names. Types are
Arrow type names (see `arrow_type`). Every record carries the run key columns first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sizing.resources.disks import VOLUME_ROLES

# The latency percentiles every latency figure carries (phase_summary's e2e_<q>_ms and confirm_<q>_ms, the series'
# per second): name -> quantile, read by nearest rank from merged histograms (spark_jobs' histmerge and series). The
# one list: the tables' columns, the Spark folds, the GX suites and the report read it from here.
LATENCY_QUANTILES: dict[str, float] = {"p50": 0.50, "p75": 0.75, "p95": 0.95, "p99": 0.99, "p999": 0.999}


def quantile_label(name: str) -> str:
    """A percentile's name in words: `p999` -> `p99.9`."""
    return "p99.9" if name == "p999" else name


# The end-to-end percentiles phase_summary gives a spread within one run (e2e_<q>_ms_rse): read by the client fold
# (spark_jobs) and the findings (sizing.judgement.findings.PERCENTILES). A choice among LATENCY_QUANTILES, not the same
# list: a median's spread is not read.
SPREAD_QUANTILES = ("p75", "p95", "p99", "p999")

# node_seconds.cpu_source: the exact counter of the node's cgroup, or tick counts (adapters/nodestats.py, issue 44).
CPU_SOURCE_CGROUP, CPU_SOURCE_TICKS = "cgroup", "ticks"

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
    Column("foreign", "int64", "deliveries of another run or attempt (not this run's nonce: a backlog left in a queue "
           "it shares), counted in consumed, none of its messages (null in records written before the column)",
           nullable=True),
    Column("acked", "int64", "deliveries acknowledged"),
    Column("in_flight", "int64", "unconfirmed messages at the end of the second"),
    Column("publish_delay_max_us", "float64", "worst lateness of a send against its intended time"),
    Column("publish_delay_hist", "binary", "histogram of send lateness, us (sizing.contract.histogram wire format)"),
    Column("e2e_hist", "binary", "histogram of end-to-end latency: intended send time -> delivery, us"),
    Column("e2e_max_us", "float64", "exact worst end-to-end latency of the second, us (the histogram's max is a "
           "bucket's representative value, up to 1 % low); null when nothing was delivered", nullable=True),
    Column("confirm_hist", "binary", "histogram of confirm latency: actual send -> confirm, us"),
    Column("blocked_ms", "float64", "time this worker's connections spent blocked by the broker, summed over its "
           "connections (connection-ms: up to 1000 x its publishing connections in a second)"),
    Column("cpu_s", "float64", "CPU seconds the worker process used in this second"),
    Column("publishers", "int32", "publishers this worker runs"),
    Column("consumers", "int32", "consumers this worker runs"),
    # Issue 13: the client settings in force this second. Nullable: records written before them have none.
    Column("rate_mode", "string", "scheduled (open loop) | max (closed loop: no target, throughput is measured)",
           nullable=True),
    Column("latency_basis", "string", "e2e latency measured from: intended (send time) | sent (actual send time)",
           nullable=True),
    Column("confirms_in_flight", "int32", "publisher confirm window in force (0: no confirms)", nullable=True),
    Column("prefetch", "int32", "consumer prefetch in force", nullable=True),
    Column("multi_ack_every", "int32", "consumer ack interval in force (ack with multiple every N)", nullable=True),
    Column("in_flight_max", "int64", "highest unconfirmed count of one publisher of this worker in the second",
           nullable=True),
    # Issue 14: the workload group the worker runs (a worker runs one group). Null in records written before
    # groups: read as DEFAULT_GROUP ("main").
    Column("group", "string", "workload group of the worker (the scenario's implicit group: main)", nullable=True),
    # Issue 44: the two parts of a prefetch slot's trip (sizing.criteria.rules.prefetch_ceiling). Null in records
    # written before them; no acks (auto-ack) none.
    Column("ack_hold_us", "int64", "the deliveries acknowledged in this second: their times from delivery to ack, "
           "summed, us", nullable=True),
    Column("ack_holds", "int64", "how many deliveries ack_hold_us sums", nullable=True),
    Column("refill_us", "int64", "deliveries whose message waited for its prefetch slot: each one's time from the "
           "ack that freed the slot (the first covering its tag - prefetch) to its arrival, summed, us",
           nullable=True),
    Column("refills", "int64", "how many refills refill_us sums (0: no message waited for a slot)", nullable=True),
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
    Column("group", "string", "workload group of the publishers counted (null before groups: main)", nullable=True),
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

# Broker-side samples, one row per node per sample: memory, alarms and queue depths from the management API (only it
# has them); message counts and rates from the node's exact counters (Prometheus rabbitmq_global_messages_*_total,
# adapters/brokercounters.py: the management API's message_stats lose counts across a stall).
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
    Column("publish_rate", "float64", "messages received by this node's channels per second since the node's previous "
           "sample (exact counters; null on its first sample, after a failed one or across a node restart)",
           nullable=True),
    Column("deliver_rate", "float64", "messages delivered by this node's channels per second, as publish_rate",
           nullable=True),
    Column("messages_received", "int64", "rabbitmq_global_messages_received_total of this node (since it started)",
           nullable=True),
    Column("messages_confirmed", "int64", "rabbitmq_global_messages_confirmed_total of this node", nullable=True),
    Column("messages_delivered", "int64", "rabbitmq_global_messages_delivered_total of this node", nullable=True),
    Column("messages_acknowledged", "int64", "rabbitmq_global_messages_acknowledged_total of this node",
           nullable=True),
)

# Resources of every broker node, one row per node per second (loadgen.nodes.NodeSampler; adapters.nodestats reads
# /proc and the node's Prometheus endpoint locally, prometheus-node-exporter plus that endpoint on AWS). Rates are
# per second over the row's span; a second whose sample failed or outlived its interval is a row with missing=True
# and null figures, never an interpolated value.
NODE_SECONDS = (*RUN_KEY,
    Column("second", "int32", "whole seconds since scenario start the row's data starts in"),
    Column("ts", "float64", "epoch seconds the data starts at (the previous sample's response time)"),
    Column("span_s", "float64", "seconds the rates cover (between two sample responses)", nullable=True),
    Column("phase", "int32", "phase at that second"),
    Column("node", "string", "node name"),
    Column("target", "string", "local | aws: where the figures come from (see adapters/nodestats.py)"),
    Column("missing", "bool", "no data for this second (node down, endpoint silent, or the sample came too late)"),
    Column("shared_cores", "bool", "the node shares its cores with the other nodes and the load generator (local)"),
    Column("cores", "int32", "cores the node may use (machine cores locally, vCPUs on AWS)", nullable=True),
    Column("cpu_quota_cores", "float64", "local scale model: the node's CPU envelope in cores "
           "(sizing/resources/scalemodel.py); the cpu_* fractions are of it, not of `cores`", nullable=True),
    Column("cpu_user", "float64", "user CPU as a fraction of `cores` (of `cpu_quota_cores` when set)", nullable=True),
    Column("cpu_system", "float64", "system CPU as a fraction of `cores`", nullable=True),
    Column("cpu_iowait", "float64", "I/O wait as a fraction of `cores` (local: the VM's block-I/O delay)",
           nullable=True),
    Column("cpu_steal", "float64", "steal as a fraction of `cores` (AWS only; not visible per process)", nullable=True),
    Column("cpu_busy", "float64", "cpu_user + cpu_system: the figure the bottleneck rule reads", nullable=True),
    Column("cpu_s", "float64", "CPU seconds the node used per second (user + system)", nullable=True),
    Column("cpu_source", "string", f"where cpu_s, cpu_user, cpu_system and cpu_busy come from: "
           f"'{CPU_SOURCE_CGROUP}' (local scale model: the node's cgroup's exact ns counter, user/system its split in "
           f"the cgroup's own proportion) or '{CPU_SOURCE_TICKS}' (10 ms tick counts: /proc/<pid>/stat locally, "
           "node-exporter on AWS); null: no CPU figure (adapters/nodestats.py)", nullable=True),
    Column("machine_cpu_busy_s", "float64", "busy CPU seconds per second of the whole machine the node runs on "
           "(/proc/stat: everything but idle and iowait; locally shared with the generator)", nullable=True),
    Column("machine_cores", "int32", "cores of that machine", nullable=True),
    Column("mem_rss_bytes", "int64", "resident memory of the node's VM", nullable=True),
    Column("run_queue", "float64", "Erlang scheduler run queue (rabbitmq_erlang_scheduler_run_queue)", nullable=True),
    Column("disk_read_bytes_per_s", "float64", "bytes read from storage (local: /proc/<pid>/io read_bytes)",
           nullable=True),
    Column("disk_write_bytes_per_s", "float64", "bytes written to storage (local: /proc/<pid>/io write_bytes)",
           nullable=True),
    Column("disk_read_ops_per_s", "float64", "device reads completed, over the node's volumes (AWS; null locally: "
           "not attributable to one process)", nullable=True),
    Column("disk_write_ops_per_s", "float64", "device writes completed, over the node's volumes (AWS; local scale "
           "model: each volume's loop device; null locally without it)", nullable=True),
    Column("write_syscalls_per_s", "float64", "write system calls of the VM (local: /proc/<pid>/io syscw; files AND "
           "sockets, so not IOPS)", nullable=True),
    Column("fsyncs_per_s", "float64", "rabbitmq_io_sync_ops_total: fsyncs of the classic message store and index "
           "(quorum-queue WAL syncs are not counted by 3.10)", nullable=True),
    Column("net_in_bytes_per_s", "float64", "client_in + internode_in (the node's AMQP and distribution traffic)",
           nullable=True),
    Column("net_out_bytes_per_s", "float64", "client_out + internode_out", nullable=True),
    Column("client_in_bytes_per_s", "float64", "AMQP client connections, in (rabbitmq_connection_incoming_bytes; "
           "the broker refreshes it every collect_statistics_interval, 5 s: lumpy per second, right over a phase)",
           nullable=True),
    Column("client_out_bytes_per_s", "float64", "AMQP client connections, out", nullable=True),
    Column("internode_in_bytes_per_s", "float64", "Erlang distribution from other nodes (erlang_vm_dist_recv_bytes)",
           nullable=True),
    Column("internode_out_bytes_per_s", "float64", "Erlang distribution to the other nodes", nullable=True),
    Column("nic_in_bytes_per_s", "float64", "bytes received by the instance's NIC (AWS: node-exporter; local: the "
           "node's own link with `network: namespaces`, null on the loopback)", nullable=True),
    Column("nic_out_bytes_per_s", "float64", "bytes sent by the instance's NIC (AWS), or the node's link (local)",
           nullable=True),
    Column("raft_written_per_s", "float64", "quorum-queue log entries written (WAL), summed over the node's members",
           nullable=True),
    Column("raft_snapshot_per_s", "float64", "quorum-queue entries released by snapshots (segment truncation)",
           nullable=True),
    # Issue 22: per volume, by the role it holds (sizing.resources.disks), so each is compared with its own limit. AWS
    # and the local scale model (a loop device per volume); null where the layout gives the role no volume of its own,
    # and locally without the scale model (a role is then a directory of one filesystem).
    *(Column(f"{role}_write_{what}_per_s", "float64", f"{unit} written to the node's `{role}` volume (AWS, local "
             f"scale model; null otherwise or when {role} lives on the data volume)", nullable=True)
      for role in VOLUME_ROLES for what, unit in (("bytes", "bytes"), ("ops", "device writes"))),
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
    Column("rate_mode", "string", "scheduled | max (max: target_rate is 0, the phase is not judged against a rate)",
           nullable=True),
    Column("latency_basis", "string", "intended | sent: what the phase's e2e latency is measured from",
           nullable=True),
    # Issue 14: one row per group per phase (every group has the scenario's phase boundaries).
    Column("group", "string", "workload group the row's schedule is (null before groups: main)", nullable=True),
    Column("foreground", "bool", "the group the SLO and the leaderboards judge (null before groups: true)",
           nullable=True),
    Column("group_detail", "string", "JSON: the group's queues (count, type, arguments), message size, publishers, "
           "consumers, held rate", nullable=True),
)

# The workload group of records written before groups existed (sizing.campaign.DEFAULT_GROUP).
DEFAULT_GROUP = "main"

RECORD_TYPES: dict[str, tuple[Column, ...]] = {
    "client_seconds": CLIENT_SECONDS,
    "accounting": ACCOUNTING,
    "events": EVENTS,
    "broker_samples": BROKER_SAMPLES,
    "node_seconds": NODE_SECONDS,
    "phases": PHASES,
}


def column_names(record_type: str) -> list[str]:
    return [c.name for c in RECORD_TYPES[record_type]]


def arrow_schema(record_type: str):  # -> pyarrow.Schema; pyarrow imported lazily to keep the core light
    return columns_arrow_schema(RECORD_TYPES[record_type])


def columns_arrow_schema(columns: Sequence[Column]):  # -> pyarrow.Schema
    """Declared columns as an Arrow schema (a raw record's, or some columns of a derived table's)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(),
             "bool": pa.bool_(), "binary": pa.binary()}
    return pa.schema([pa.field(c.name, types[c.type], nullable=c.nullable) for c in columns])


def spark_ddl(record_type: str, columns: Sequence[str] | None = None) -> str:
    """The same schema as a Spark DDL string (the Spark jobs never infer raw schemas); with `columns`, only those
    (in the record's order: a read that needs a few columns of a wide record decodes only them)."""
    fields = RECORD_TYPES[record_type]
    if columns is not None:
        unknown = set(columns) - {c.name for c in fields}
        if unknown:
            raise ValueError(f"{record_type} has no column(s) {sorted(unknown)}")
        fields = [c for c in fields if c.name in set(columns)]
    return columns_ddl(fields)


def columns_ddl(columns: Sequence[Column]) -> str:
    """Declared columns as a Spark DDL string (`name` TYPE, ...): the one way from a declaration to a DDL, for the
    records and for the Spark jobs' intermediate schemas (a fold's rows), which are declared, never spelled."""
    return ", ".join(f"`{c.name}` {SPARK_TYPES[c.type]}" for c in columns)


# ------------------------------------------------------------------------------------ derived tables
# The tables the Spark jobs write (spark_jobs/README.md, "Tables"): one definition each, read by the jobs (which
# cast to them), the GX suites' generator, the query CLI and the report. Same Column type as the raw records.

_TABLE_KEY = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("config_id", "string", "cluster config (partition)"),
    Column("scenario", "string", "scenario name"),
    Column("run_id", "string", "run label given by the orchestrator (partition)"),
    Column("repeat", "int32", "1-based repeat"),
    Column("phase", "int32", "1-based phase number"),
)
_LATENCY = (*LATENCY_QUANTILES, "max")

# phase_summary's resource view (node_seconds over the steady window; the bottleneck rule is sizing.criteria.rules').
_RESOURCE_COLUMNS = (
    Column("cluster_nodes", "int32", "nodes the run's node_seconds name (every node of the cluster)", nullable=True),
    Column("resource_nodes", "int32", "nodes with figures in the steady window", nullable=True),
    Column("resource_missing_seconds", "int64", "node-seconds of the steady window without figures", nullable=True),
    Column("resource_target", "string", "local | aws: where the node figures come from", nullable=True),
    Column("shared_cores", "bool", "the nodes shared their cores with the load generator (local)", nullable=True),
    Column("cpu_busiest_node", "string", "node with the highest mean CPU", nullable=True),
    Column("cpu_busiest_mean", "float64", "its mean busy share of its cores", nullable=True),
    Column("cpu_busiest_p95", "float64", "its p95 busy share over the steady seconds", nullable=True),
    Column("machine_cpu_busy_mean", "float64", "mean busy share of the machine's cores (local: nodes + generator)",
           nullable=True),
    Column("run_queue_max", "float64", "highest Erlang run queue of any node", nullable=True),
    Column("disk_busiest_node", "string", "node with the highest mean write MB/s", nullable=True),
    Column("disk_write_mb_s", "float64", "its mean write throughput, MB/s (10^6 B)", nullable=True),
    Column("disk_write_iops", "float64", "highest mean write IOPS of a node (locally: from each volume's loop "
           "device on the scale model, null without it)", nullable=True),
    Column("disk_write_kb_per_op", "float64", "write size of the IOPS-busiest node, KB (null locally without the "
           "scale model)", nullable=True),
    Column("disk_read_mb_s", "float64", "highest mean read throughput of a node, MB/s", nullable=True),
    Column("net_busiest_node", "string", "node with the most traffic (in + out)", nullable=True),
    Column("net_mb_s", "float64", "its mean traffic in + out, MB/s", nullable=True),
    Column("net_client_mb_s", "float64", "of which AMQP clients, MB/s", nullable=True),
    Column("net_internode_mb_s", "float64", "of which inter-node, MB/s", nullable=True),
    Column("net_peak_mbit_s", "float64", "highest mean of one direction on one node (NIC on AWS), Mbit/s",
           nullable=True),
    Column("network_limit_mbit_s", "float64", "instance bandwidth per direction (catalog; local: the node's link "
           "envelope with `network: namespaces`, null on the loopback)",
           nullable=True),
    Column("volume_iops_limit", "float64", "the data volume's IOPS limit at its size (catalog; null locally)",
           nullable=True),
    Column("volume_mb_s_limit", "float64", "the data volume's throughput limit at its size, MB/s (catalog; null "
           "locally)", nullable=True),
    Column("volume_busiest_role", "string", "the volume (by role: data, logs, wal, segments) nearest its own limit "
           "(AWS)", nullable=True),
    Column("volume_load_share", "float64", "that volume's busiest-node write IOPS or MB/s / its own limit "
           "(sizing.resources.catalog.volume_limits; null locally)", nullable=True),
    Column("ebs_iops_limit", "float64", "the instance's EBS IOPS ceiling, all volumes together (catalog; null "
           "locally)", nullable=True),
    Column("ebs_mb_s_limit", "float64", "the instance's EBS throughput ceiling, MB/s (catalog; null locally)",
           nullable=True),
    Column("ebs_load_share", "float64", "the busiest node's volumes together / the instance's EBS ceiling (IOPS or "
           "MB/s)", nullable=True),
    Column("bottleneck", "string", "generator | memory | consumers | cpu | disk | network | consumer_prefetch | "
           "publisher_window | none (sizing.criteria.rules.bottleneck, in sizing.criteria.rules.BOTTLENECK_ORDER); "
           "null: no node figures and "
           "nothing before cpu decides", nullable=True),
    Column("bottleneck_detail", "string", "the figure that triggered the label against its threshold",
           nullable=True),
)

# Capacity-search probes (issue 16): every phase of a search scenario is one probe. Null on other phases.
_SEARCH_COLUMNS = (
    Column("backlog_slope", "float64", "least-squares slope of the client-side backlog (cumulative published - "
           "acked: prefetched but unprocessed messages count) over the steady seconds, msg/s per s "
           "(sizing.criteria.search.backlog_slope)", nullable=True),
    Column("probe_stage", "string", "search probe: ladder | bisect | confirm (its search_probe event)", nullable=True),
    Column("probe_online_passed", "bool", "search probe: the generator's online verdict (search_probe event)",
           nullable=True),
    Column("probe_passed", "bool", "search probe: the verdict recomputed from this row "
           "(sizing.criteria.rules.probe_verdict with the scenario's SLO); the GX gate fails when it differs from "
           "probe_online_passed", nullable=True),
    Column("probe_inconclusive", "bool", "search probe: an attempt the generator fell behind in (not valid), "
           "re-run and left out of the search's replay", nullable=True),
    Column("probe_last_pass", "float64", "search probe: the bracket's low end the generator held after this probe",
           nullable=True),
    Column("probe_first_fail", "float64", "search probe: the bracket's high end after this probe (null: no fail "
           "yet)", nullable=True),
)

# Backlog scenarios (issue 22, seed 002; sizing/judgement/adverse.py): per-second figures of the "publishers unaffected"
# criterion, per phase. A run's drain composes from its phases (sizing.judgement.adverse.run_drain).
_BACKLOG_COLUMNS = (
    Column("reduced_publish_s", "float64", "steady seconds whose 5 s confirm rate (publish rate without confirms) fell "
           "below 98% of the offered rate (sizing.criteria.rules.publish_reduced)", nullable=True),
    Column("publishers_blocked_s", "float64", "steady seconds in which a memory or disk alarm blocked publishers (the "
           "most blocked worker's connection.blocked time)", nullable=True),
    Column("backlog_peak_s", "float64", "second (since scenario start) of backlog_max_client", nullable=True),
    Column("backlog_end_client", "int64", "client-side backlog at the phase's last second", nullable=True),
    Column("backlog_last_above_s", "float64", "last second of the phase with the client backlog above drain_level_msgs "
           "(null: never)", nullable=True),
    Column("drain_level_msgs", "float64", "the run's drained level: 1 s of its final offered rate "
           "(sizing.criteria.rules.DRAINED_BACKLOG_S)", nullable=True),
)

PHASE_SUMMARY = (*_TABLE_KEY,
    Column("phase_name", "string", "e.g. rate-30000"),
    Column("start_s", "float64", "phase start, s since scenario start"),
    Column("duration_s", "float64", "phase length, s"),
    Column("warmup_s", "float64", "warm-up excluded from every figure below"),
    Column("steady_s", "float64", "duration_s - warmup_s: the window rates are computed over"),
    Column("target_rate", "float64", "mean scheduled publish rate of the phase, msg/s"),
    Column("processing_ms_start", "float64", "consumer processing time at phase start"),
    Column("processing_ms_end", "float64", "consumer processing time at phase end"),
    Column("workers", "int32", "load-generator workers with steady rows"),
    Column("steady_seconds_observed", "int32", "seconds spanned by steady rows"),
    Column("scheduled", "int64", "messages due in the steady window"),
    Column("published", "int64", "basic.publish calls in the steady window"),
    Column("confirmed", "int64", "confirms in the steady window"),
    Column("nacked", "int64", "nacks in the steady window"),
    Column("returned", "int64", "returns in the steady window"),
    Column("consumed", "int64", "deliveries in the steady window (incl. redeliveries)"),
    Column("redelivered", "int64", "redelivered deliveries in the steady window"),
    Column("publish_rate", "float64", "published / steady_s, msg/s"),
    Column("confirm_rate", "float64", "confirmed / steady_s, msg/s"),
    Column("consume_rate", "float64", "consumed / steady_s, msg/s"),
    # Issue 32: what one run says of its own rates' precision (sizing.criteria.stats.batch_means over the steady
    # seconds).
    *(Column(f"{rate}_rse", "float64", f"{rate}'s standard error within the run relative to it, from the means of "
             "rate_batches equal windows of its steady seconds (null: fewer than sizing.criteria.stats."
             "WITHIN_RUN_MIN_SECONDS, or nothing counted)", nullable=True)
      for rate in ("publish_rate", "confirm_rate", "consume_rate")),
    Column("rate_batches", "int32",
           "windows those standard errors come from (sizing.criteria.stats.WITHIN_RUN_BATCHES)",
           nullable=True),
    Column("publish_rate_cv", "float64", "how choppy the per-second publish rate (confirmed; published without "
           "confirms) is: its coefficient of variation within each of rate_batches windows, mean over the windows "
           "(sizing.criteria.stats.batch_variation; null as the _rse columns)", nullable=True),
    Column("publish_rate_cv_rse", "float64", "publish_rate_cv's standard error from its windows' spread, relative to "
           "it (null: as publish_rate_cv, or no variation)", nullable=True),
    # ... and of its percentiles (sizing.criteria.stats.sectioned_rse over the client fold's window histograms).
    *(Column(f"e2e_{q}_ms_rse", "float64", f"e2e_{q}_ms's standard error within the run, on logs, from the same "
             "percentile of each of sizing.criteria.stats.WITHIN_RUN_BATCHES equal windows of the planned steady "
             "seconds (null: fewer than sizing.criteria.stats.SECTION_MIN_SECONDS, a window with too few samples "
             "beyond it, or windows not known to the read)", nullable=True)
      for q in SPREAD_QUANTILES),
    Column("matched_target", "bool",
           "confirm_rate and consume_rate >= 98% of target AND e2e_p99_ms <= SLO "
           "(sizing.criteria.rules.matched_target); "
           "false for a max-mode phase (sizing.criteria.rules.judged_against_target)"),
    Column("slo_p99_ms", "float64", "the campaign's end-to-end p99 SLO"),
    Column("valid", "bool", "the load generator kept up (see invalid_reason)"),
    Column("invalid_reason", "string", "no_client_records | loadgen_cpu_saturated | loadgen_behind (comma list)"),
    Column("e2e_samples", "int64", "messages in the merged end-to-end histogram"),
    *(Column(f"e2e_{q}_ms", "float64", f"end-to-end latency {q} (merged histograms, 1% rel. error), ms")
      for q in _LATENCY),
    *(Column(f"confirm_{q}_ms", "float64", f"confirm latency {q}, ms") for q in _LATENCY),
    # Issue 44: the clients' own ceilings, which the bottleneck rule names when a phase's rate reached them.
    Column("confirm_mean_ms", "float64", "mean confirm latency (merged histogram, 1% rel. error), ms: Little's law's "
           "time in the system", nullable=True),
    Column("publisher_window_ceiling", "float64", "publishers x confirms in flight / confirm_mean_ms: the rate the "
           "confirm windows allow, msg/s (sizing.criteria.rules.publisher_window_ceiling; null: no confirms)",
           nullable=True),
    Column("consumer_ceiling", "float64", "consumers x 1000 / processing ms, the mean over the steady seconds: the "
           "rate the consumers' processing allows, msg/s (sizing.criteria.rules.consumer_ceiling; null: no processing "
           "time)",
           nullable=True),
    Column("consumer_hold_mean_ms", "float64", "mean time from a delivery to its ack (client_seconds ack_hold_us), ms",
           nullable=True),
    Column("consumer_refill_mean_ms", "float64", "mean time from the ack that freed a prefetch slot to the delivery "
           "that took it, where the message waited for the slot (client_seconds refill_us), ms; null: none waited",
           nullable=True),
    Column("prefetch_ceiling", "float64", "consumers x prefetch / (hold + refill mean): the rate the consumers' "
           "prefetch windows allow, msg/s (sizing.criteria.rules.prefetch_ceiling; null: no message waited for a slot)",
           nullable=True),
    Column("publish_delay_p99_ms", "float64", "p99 lateness of sends against the open-loop schedule, ms"),
    Column("publish_delay_max_ms", "float64", "worst lateness, ms"),
    Column("blocked_share", "float64", "fraction of worker time the broker blocked publishers"),
    Column("worker_cpu_max", "float64", "highest per-worker CPU share (cpu_s per second) in the steady window"),
    Column("worker_behind_events", "int64", "worker_behind events in the phase"),
    Column("connection_blocked_events", "int64", "connection_blocked events in the phase"),
    Column("backlog_max", "int64", "broker_queue_max, else backlog_max_client"),
    Column("backlog_max_client", "int64", "max of cumulative confirmed (published without confirms) - consumed over "
           "the phase's seconds"),
    Column("broker_queue_max", "int64", "max over samples of messages in all queues (summed over nodes)"),
    Column("broker_mem_max_bytes", "int64", "max memory used by any node"),
    Column("broker_mem_max_fraction", "float64", "max memory used / high watermark"),
    Column("broker_alarm", "bool", "any memory or disk alarm seen"),
    Column("broker_node_down_seen", "bool", "a sample saw a node not running"),
    Column("broker_nodes_down", "string", "the nodes some sample saw not running (comma list; each sample is the "
           "answering node's view: a killed node, a partition's other side; none while no node answers)",
           nullable=True),
    Column("broker_whole_after_heal_s", "float64", "seconds from the phase's last fault heal to the first sample "
           "with every node running after the last one that saw a node down (0: whole by the heal; null: no node "
           "down, no heal in the phase, or still down at its end)", nullable=True),
    Column("broker_disk_free_min_bytes", "int64", "lowest free disk"),
    Column("rate_mode", "string", "scheduled | max (closed loop: no target rate; throughput is the measurement)"),
    Column("latency_basis", "string", "intended | sent: what every e2e_* figure of the row is measured from"),
    Column("lost", "int64", "confirmed messages never consumed (ACCOUNTING)"),
    Column("duplicates", "int64", "consumed again without the redelivered flag"),
    Column("reordered", "int64", "deliveries older than an earlier one of the same publisher on one queue"),
    Column("consumed_unique", "int64", "distinct messages consumed"),
    Column("redelivered_accounted", "int64", "redelivered deliveries (ACCOUNTING)"),
    Column("faults", "int32", "fault_start events in the phase"),
    Column("fault_kinds", "string", "comma list of fault kinds"),
    Column("fault_errors", "int64", "fault_error events"),
    Column("pre_fault_rate", "float64", "throughput before the fault (mean of the 30 s before), msg/s"),
    Column("time_to_recover_s", "float64",
           "longest time back to >= 95% of pre_fault_rate for 5 s (null: no fault/never)"),
    Column("recovered", "bool", "every fault of the phase recovered before the phase ended"),
    Column("unavailable_s", "float64", "degraded seconds (< 95% of pre_fault_rate) between faults and recovery"),
    Column("worst_dip_ratio", "float64", "lowest 5 s mean throughput after a fault / pre_fault_rate"),
    *_RESOURCE_COLUMNS,
    *_BACKLOG_COLUMNS,
    # Issue 14: one row per workload group per phase. Client figures (rates, latencies, accounting, validity) are
    # the group's own; broker, event and node figures are the cluster's, the same on every group's row.
    Column("group", "string", "workload group (a scenario without groups: main)"),
    Column("foreground", "bool", "the group the SLO and the leaderboards judge; the others are background load"),
    Column("group_detail", "string", "JSON: the group's queues, message size, clients and held rate",
           nullable=True),
    *_SEARCH_COLUMNS,
)

# Per (config, run, repeat): that trial's capacity figures. The leaderboard's figures are medians/minimums over
# these rows; the board_intervals table's intervals over repeats are computed from them too.
CAPACITY_REPEATS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("config_id", "string", "cluster config"),
    Column("run_id", "string", "run label (partition)"),
    Column("repeat", "int32", "1-based repeat"),
    Column("top_matched_throughput", "float64",
           "highest carried rate (min of confirm, consume) of a phase counting toward capacity, msg/s (null: no "
           "phase within the SLO)", nullable=True),
    Column("top_matched_phase", "string", "the phase it was carried in", nullable=True),
    Column("max_matched_target_rate", "float64", "highest target rate a counted phase matched, msg/s",
           nullable=True),
    Column("capacity_phases", "int32", "phases of this repeat that counted toward capacity"),
    Column("top_throughput_any_latency", "float64", "highest carried rate of a conclusive capacity phase at any "
           "latency (seed 000's 'top throughput'), msg/s"),
)

LEADERBOARDS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("queue_type", "string", "quorum | classic | stream"),
    Column("config_id", "string", "cluster config"),
    Column("nodes", "int32", "cluster nodes"),
    Column("instance_type", "string", "instance type"),
    Column("volume_type", "string", "volume type"),
    Column("monthly_cost", "float64", "cluster cost per month (sizing.resources.cost)"),
    Column("currency", "string", "catalog currency"),
    Column("top_matched_throughput", "float64", "median over repeats of capacity_repeats.top_matched_throughput"),
    Column("top_matched_phase", "string", "phase of the best repeat's top"),
    Column("max_matched_target_rate", "float64", "highest target matched in every repeat"),
    Column("capacity_phases", "int32", "phases that counted toward capacity, all repeats"),
    Column("campaign_target_rate", "float64", "the campaign target, msg/s"),
    Column("met_target", "bool", "max_matched_target_rate >= the campaign target"),
    Column("cost_per_1k_at_top", "float64", "sizing.resources.cost.cost_per_1000_msgs at top_matched_throughput"),
    Column("rank_at_top", "int32", "1 = cheapest per 1000 msg/s at top"),
    Column("cost_per_1k_at_target", "float64", "cost per 1000 msg/s at the campaign target (met_target only)"),
    Column("rank_at_target", "int32", "1 = cheapest at target"),
    Column("capacity_rank", "int32", "1 = highest top_matched_throughput"),
    Column("pareto", "bool", "on the cost-vs-capacity Pareto front"),
    Column("top_throughput_any_latency", "float64", "median over repeats of capacity_repeats."
           "top_throughput_any_latency (seed 000's top throughput, whatever the p99)", nullable=True),
    Column("cost_per_1k_at_top_any_latency", "float64", "sizing.resources.cost.cost_per_1000_msgs at "
           "top_throughput_any_latency (seed 000's 'cost at top throughput')", nullable=True),
    Column("volume_rank_at_top_any_latency", "int32", "1 = cheapest at top_throughput_any_latency among configs of "
           "the same volume type (seed 000 ranks per volume type)", nullable=True),
    Column("volume_rank_at_target", "int32", "1 = cheapest at the campaign target among configs of the same volume "
           "type", nullable=True),
)

PARETO = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("queue_type", "string", "queue type"),
    Column("config_id", "string", "cluster config"),
    Column("monthly_cost", "float64", "cluster cost per month"),
    Column("top_matched_throughput", "float64", "as in leaderboards"),
    Column("cost_per_1k_at_top", "float64", "as in leaderboards"),
)

# Per (config, adverse scenario): the scenario judged by its own criterion (sizing/judgement/adverse.py), over every
# repeat.
ADVERSE = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("config_id", "string", "cluster config"),
    Column("scenario", "string", "adverse scenario"),
    Column("criterion", "string", "fault (judged phases hold the target, nothing lost) | backlog (publishers "
           "unaffected, nothing lost, backlog drained): sizing.criteria.rules.scenario_kind"),
    Column("repeats", "int32", "runs x repeats judged"),
    Column("held", "bool", "the scenario held by its criterion in every repeat; null: not judged (too few "
           "conclusive phases: sizing.criteria.rules.conclusive, the generator kept up)", nullable=True),
    Column("reason", "string", "why it did not hold or was not judged, and the phases flagged invalid that did not "
           "count (null: it held on every phase)", nullable=True),
    Column("phases_judged", "int32", "conclusive phases judged (fault on steps: offered <= campaign target; else "
           "all)"),
    Column("phases_held", "int32", "judged phases that held the target (sizing.criteria.rules.held_target)"),
    Column("worst_dip_ratio", "float64", "lowest 5 s mean after a fault / pre-fault rate (>= 1: no dip)",
           nullable=True),
    Column("worst_confirm_ratio", "float64", "lowest confirm_rate / target_rate", nullable=True),
    Column("max_time_to_recover_s", "float64", "longest recovery after a fault", nullable=True),
    Column("all_recovered", "bool", "every fault recovered before its phase ended"),
    Column("unavailable_s", "float64", "degraded seconds after faults, summed"),
    Column("reduced_publish_s", "float64", "worst repeat's seconds of reduced publish rate (judged phases)"),
    Column("publish_tolerance_s", "float64", "seconds of reduced publish rate the scenario tolerates (spec)"),
    Column("publishers_blocked_s", "float64", "worst repeat's seconds with publishers blocked by an alarm"),
    Column("peak_backlog_msgs", "int64", "highest backlog (broker queue depth, else client-side)"),
    Column("peak_memory_share", "float64", "highest memory used / high watermark of any node", nullable=True),
    Column("nodes_down", "string", "the nodes some broker sample saw not running in the scenario's phases (comma "
           "list; phase_summary.broker_nodes_down)", nullable=True),
    Column("max_whole_after_heal_s", "float64", "longest time from a fault's heal until every node ran again "
           "(phase_summary.broker_whole_after_heal_s)", nullable=True),
    Column("drained", "bool", "every repeat's backlog was back under its drain level by the end"),
    Column("drain_s", "float64", "worst repeat's seconds from the peak backlog until it stayed drained (null: not "
           "drained)", nullable=True),
    Column("lost", "int64", "confirmed messages never consumed"),
    Column("duplicates", "int64", "duplicate deliveries"),
    Column("max_e2e_p99_ms", "float64", "worst judged phase's end-to-end p99 (reported; judged for faults only)",
           nullable=True),
)

# Per config of a sizing campaign: its standing in the recommendation (sizing/judgement/recommendation.py decides, on
# the driver, from the leaderboards, adverse and phase_summary rows): the report's verdict, `query`, `compare` and
# `trend` read which config was recommended here, none of them decides it again.
RECOMMENDATION = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("config_id", "string", "cluster config"),
    Column("shape_id", "string", "the config without its RabbitMQ version: configs of one shape on several versions "
           "share it"),
    Column("rabbitmq_version", "string", "the RabbitMQ version the spec asks the config to run (null: the target's "
           "installed one)", nullable=True),
    Column("standing", "int32", "1 = first: by rank at the target, configs off that board last by monthly cost"),
    Column("monthly_cost", "float64", "cluster cost per month (leaderboards)"),
    Column("cost_per_1k_at_target", "float64", "cost per 1000 msg/s per month at the target (null: did not meet the "
           "target within the SLO under ideal conditions)", nullable=True),
    Column("rank_at_target", "int32", "1 = cheapest at the target (null: off that board)", nullable=True),
    Column("meets_target", "bool", "met the target within the SLO under ideal conditions"),
    Column("adverse_held", "string", "required adverse scenarios it held (comma list; null: none)", nullable=True),
    Column("adverse_failed", "string", "required adverse scenarios it did not hold (comma list; null: none)",
           nullable=True),
    Column("adverse_not_judged", "string", "required adverse scenarios without a judgement (comma list; null: none)",
           nullable=True),
    Column("not_judged_reasons", "string", "why each was not judged, in the same order (JSON list of strings; null: "
           "none)", nullable=True),
    Column("optional_failed", "string", "adverse scenarios with `required: false` it did not hold (comma list; "
           "reported, deciding nothing; null: none)", nullable=True),
    Column("invalid_phases", "int32", "phases flagged invalid (the generator fell behind): evidence neither way"),
    Column("passes_all", "bool", "meets the target and holds every required adverse scenario, each judged"),
    Column("recommended", "bool", "the recommendation: the first config by standing that passes_all, per RabbitMQ "
           "version (a campaign over several versions answers for each; at most one row per version of a run)"),
)

# Per (config, search scenario, run, repeat): the capacity search replayed from phase_summary's recomputed probe
# verdicts (sizing.criteria.search.replay); the interval columns are the config's, over its repeats.
CAPACITY = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("config_id", "string", "cluster config"),
    Column("scenario", "string", "search scenario"),
    Column("run_id", "string", "run label (partition)"),
    Column("repeat", "int32", "1-based repeat"),
    Column("status", "string", "converged | at_upper | below_start | unstable (sizing.criteria.search.STATUSES), "
           "replay_incomplete when the recomputed verdicts call for a probe the run did not take, generator_bound "
           "when a probe the search counted was not conclusive (the generator fell behind: sustainable_rate is a "
           "floor, not the broker's limit)"),
    Column("sustainable_rate", "float64", "highest rate that passed twice below every failing probe, msg/s",
           nullable=True),
    Column("last_pass", "float64", "bracket: highest pass below first_fail, msg/s", nullable=True),
    Column("first_fail", "float64", "bracket: lowest failing rate, msg/s (null: nothing failed)", nullable=True),
    Column("probes_used", "int32", "conclusive probes the search ran (what worst_case_probes bounds)"),
    Column("inconclusive_attempts", "int32", "attempts re-run because the generator fell behind"),
    Column("worst_case_probes", "int32", "the plan's bound (SearchSpec.worst_case_probes)"),
    Column("p99_at_sustainable_ms", "float64", "worst e2e p99 of the passes at the sustainable rate", nullable=True),
    Column("bottleneck_at_sustainable", "string", "phase_summary.bottleneck of the last pass at the sustainable "
           "rate", nullable=True),
    Column("probes_disagreeing", "int32", "probes whose online verdict differs from the recomputed one"),
    Column("verdicts_agree", "bool", "probes_disagreeing == 0 (the GX gate requires it)"),
    Column("repeats", "int32", "repeats of this config's search with a sustainable rate"),
    Column("sustainable_median", "float64", "median sustainable rate over those repeats", nullable=True),
    Column("sustainable_ci_low", "float64", "order-statistic interval of that median "
           "(sizing.criteria.stats.median_interval), low; null with fewer than 2 repeats", nullable=True),
    Column("sustainable_ci_high", "float64", "its high end", nullable=True),
    Column("sustainable_ci_level", "float64", "the interval's true coverage for this many repeats (0.75 for 3; "
           "null without an interval)", nullable=True),
)

# The columns of an interval over repeats and of an effect between two arms, as
# sizing.judgement.repeats.interval_columns and sizing.criteria.stats' comparisons write them (the findings,
# repeat_intervals and board_intervals tables share them).
def interval_schema(median: str, *, no_interval: str = "with one repeat",
                     median_nullable: bool = False) -> tuple[Column, ...]:
    """value (`median`), value_low, value_high (null `no_interval`), value_level."""
    return (Column("value", "float64", median, nullable=median_nullable),
            Column("value_low", "float64", "order-statistic interval of that median "
                   f"(sizing.criteria.stats.median_interval), low (null {no_interval})", nullable=True),
            Column("value_high", "float64", "its high end", nullable=True),
            Column("value_level", "float64", "the interval's true coverage (0.75 for 3 repeats; 0: no interval)"))


def effect_schema(prefix: str = "", baseline: str = "the baseline") -> tuple[Column, ...]:
    """effect against `baseline`, its exact interval and level, and the verdict (`prefix`: before each text)."""
    return (Column("effect", "float64", f"{prefix}relative change against {baseline} (Hodges-Lehmann on logs; "
                   "0.1 = +10%)", nullable=True),
            Column("effect_low", "float64", f"{prefix}exact Mann-Whitney interval, low (null: too few repeats for "
                   "one)", nullable=True),
            Column("effect_high", "float64", f"{prefix}its high end", nullable=True),
            Column("effect_level", "float64", f"{prefix}the interval's true coverage (0.9 for 3 vs 3)",
                   nullable=True),
            Column("verdict", "string", f"{prefix}higher | lower | unchanged | inconclusive (sizing.criteria.stats."
                   "effect_verdict at sizing.criteria.stats.COMPARE_CONFIDENCE, 90%, 5% practical threshold)",
                   nullable=True))


# A compare / characterise campaign's answer (sizing/judgement/findings.py): per arm (config, scenario family, phase
# label) and metric its median over repeats (kind level), and for compare its effect against the baseline arm (kind
# effect).
FINDINGS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("purpose", "string", "compare | characterise (the campaign's question)"),
    Column("kind", "string", "level: the arm's median with its interval | effect: the arm against its baseline | "
           "step: a stepped client setting's step against the previous step (the curve's shape)"),
    Column("config_id", "string", "the arm's config"),
    Column("family", "string", "the arm's scenario as written (isolate: true runs are one family)"),
    Column("phase_name", "string", "the arm's phase label (step, e.g. prefetch=1000, or rate-30000)"),
    Column("metric", "string", "publish_rate | consume_rate | e2e_p75_ms | e2e_p95_ms | e2e_p99_ms | e2e_p999_ms "
           "(sizing.judgement.findings.METRICS)"),
    Column("latency_basis", "string", "intended | sent: what the arm's latency figures are measured from"),
    *interval_schema("the arm's median over its repeats", no_interval="with one repeat, but for a rate with its "
                     "interval within the run: interval_basis"),
    Column("n", "int32", "the arm's conclusive repeats (one the generator fell behind in is no figure: "
           "sizing.criteria.rules.conclusive)"),
    Column("interval_basis", "string", "what the row's interval rests on (sizing.judgement.findings.BASES): 'between "
                                       "repeats', "
           "or 'within one run (batch means)': one repeat per arm, a rate's t interval from batch means of the run's "
           "steady seconds at a nominal level (sizing.criteria.stats.run_mean_interval, run_compare), run-to-run "
           "variation not "
           "measured, or 'within one run (sectioning)': the same for a percentile, from its windows' percentiles "
           "(sizing.criteria.stats.sectioned_rse); the effect's when the row has one, else the level's (null: no "
           "interval)",
           nullable=True),
    Column("baseline_config_id", "string", "effect: the baseline arm's config", nullable=True),
    Column("baseline_family", "string", "effect: the baseline arm's scenario family", nullable=True),
    Column("baseline_phase_name", "string", "effect: the baseline arm's phase label", nullable=True),
    Column("baseline_value", "float64", "effect: the baseline's median", nullable=True),
    Column("n_baseline", "int32", "effect: the baseline's repeats", nullable=True),
    *effect_schema("effect: "),
    Column("better", "bool", "effect: the arm is better on this metric (null: unchanged or inconclusive)",
           nullable=True),
    Column("largest_step", "bool", "step: this pair is the family's largest change for this config and metric "
           "(by |log ratio|; null with one pair)", nullable=True),
    Column("no_better", "bool", "step: the step is no better than the previous one (its 90% interval excludes a "
           "gain beyond 5%); false: better; null: the repeats cannot tell", nullable=True),
    Column("knee", "bool", "step: the previous step is the knee: after it no step is better than the one before, "
           "and the pair before it was better", nullable=True),
)

# Per (config, scenario, phase) and metric: the median over the run's repeats with its interval
# (sizing.judgement.repeats. phase_intervals over phase_summary's judged rows; an `isolate: true` scenario's runs as the
# phases of its family).
REPEAT_INTERVALS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("config_id", "string", "cluster config"),
    Column("scenario", "string", "scenario as written (an isolate: true scenario's runs are its phases)"),
    Column("phase", "int32", "1-based phase number within that scenario"),
    Column("phase_name", "string", "the phase's label, e.g. rate-30000 or prefetch=1000"),
    Column("target_rate", "float64", "the phase's target rate, msg/s"),
    Column("metric", "string", "the phase_summary column summarised (sizing.judgement.repeats.REPEAT_METRICS)"),
    Column("repeats", "int32", "repeats of this phase in the run"),
    Column("valid", "bool", "every repeat of the phase was valid (phase_summary.valid)"),
    Column("n", "int32", "repeats with a figure for this metric (0: none, value is null)"),
    *interval_schema("median of the metric over those repeats", no_interval="with fewer than 2 figures",
                      median_nullable=True),
)

# Per leaderboard board and config: its figure over its repeats (capacity_repeats) with its interval, and whether the
# repeats tell it apart from the next-ranked config (sizing.judgement.repeats.board_intervals).
BOARD_INTERVALS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("board", "string", "top_matched_throughput | max_matched_target_rate | cost_at_top "
           "(sizing.judgement.repeats.BOARDS with a spread over repeats)"),
    Column("rank", "int32", "the config's rank on the board (sizing.judgement.repeats.board_entries)"),
    Column("config_id", "string", "cluster config"),
    Column("n", "int32", "repeats with a figure"),
    *interval_schema("median over those repeats (msg/s, or USD per 1000 msg/s per month for cost_at_top)"),
    Column("next_config_id", "string", "the next-ranked config compared with (null: last, or either has fewer than "
           "2 repeats)", nullable=True),
    Column("n_next", "int32", "its repeats", nullable=True),
    *effect_schema(baseline="the next-ranked config"),
)

# Leaderboard columns of campaigns with search scenarios (null otherwise).
LEADERBOARD_SEARCH_COLUMNS = (
    Column("sustainable_rate", "float64", "capacity.sustainable_median of the config's search", nullable=True),
    Column("cost_per_1k_at_sustainable", "float64", "sizing.resources.cost.cost_per_1000_msgs at sustainable_rate",
           nullable=True),
    Column("rank_at_sustainable", "int32", "1 = cheapest per 1000 msg/s at its sustainable rate", nullable=True),
    Column("sustainable_rank", "int32", "1 = highest sustainable rate", nullable=True),
)
LEADERBOARDS = (*LEADERBOARDS, *LEADERBOARD_SEARCH_COLUMNS)

# One row per run of a campaign (issue 24): what ran, on what, under which spec and code, and how it ended. Built by
# the analysis job from the run's manifests (what each load run recorded, the broker's versions read from the running
# broker) and its own session (sizing.judgement.history.run_row).
RUNS = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition)"),
    Column("status", "string", "complete (every planned config x scenario x repeat recorded complete) | partial "
           "(some not recorded) | failed (a load run did not complete) | unknown (no manifest): "
           "sizing.judgement.history"),
    Column("spec_hash", "string", "hash of the resolved spec the analysis read (sizing.campaign.Campaign.spec_hash)"),
    Column("manifest_spec_hashes", "string", "spec hashes the load runs recorded (comma list; differs from spec_hash "
           "when a backfill ran another spec under this label)", nullable=True),
    Column("spec", "string", "the resolved spec as canonical JSON (what `sizing compare` lists differences of)"),
    Column("code_commit", "string", "git commit of the code the load runs ran (comma list; `-dirty`: uncommitted "
           "changes)", nullable=True),
    Column("analysis_commit", "string", "git commit of the analysis job's code", nullable=True),
    Column("rabbitmq_version", "string", "RabbitMQ version the running brokers reported (comma list)", nullable=True),
    Column("erlang_version", "string", "Erlang/OTP version the running brokers reported (comma list)",
           nullable=True),
    Column("pika_version", "string", "pika version of the load generator (comma list)", nullable=True),
    Column("spark_version", "string", "Spark version of the analysis"),
    Column("deployment", "string", "local | aws | ... (the spec's target)"),
    Column("configs", "string", "configs with recorded load runs in this run (comma list)"),
    Column("instance_types", "string", "their instance types (comma list)"),
    Column("requested_rabbitmq_versions", "string", "RabbitMQ versions the spec asked for (comma list; null: the "
           "target's installed version)", nullable=True),
    Column("target_rate", "float64", "the campaign target, msg/s"),
    Column("slo_p99_ms", "float64", "the campaign's end-to-end p99 SLO, ms"),
    Column("repeats", "int32", "repeats per config the spec asks for"),
    Column("load_runs", "int32", "load runs (config x scenario x repeat) with a manifest"),
    Column("load_runs_complete", "int32", "of which recorded complete"),
    Column("started_at", "float64", "epoch seconds the first load run started", nullable=True),
    Column("ended_at", "float64", "epoch seconds the last load run ended", nullable=True),
    Column("analysed_at", "float64", "epoch seconds the analysis wrote this row"),
    Column("baseline_run", "string", "the run this one was compared with (the DAG's baseline_run param)",
           nullable=True),
    Column("measured_on", "string", "what the figures were measured on (sizing.resources.scalemodel.measured_on): the "
           "cloud target, or the local scale model and its factors; a local figure is never a cloud figure"),
    Column("scale_model", "string", "the scale model's factors as JSON (null: none)", nullable=True),
    Column("envelope_enforced", "string", "what this machine enforced of the envelopes, from the load runs (comma "
           "list; null: no envelopes)", nullable=True),
)

# A compare campaign of RabbitMQ versions (issue 33; sizing/judgement/upgrade.py): per config, metric and scenario the
# median over repeats of one figure per repeat, and for each config but the baseline its change against the baseline's
# with the direction published results lead one to expect.
UPGRADE = (
    Column("campaign", "string", "campaign name (partition)"),
    Column("run_id", "string", "run label (partition): every run's answer is kept"),
    Column("config_id", "string", "cluster config"),
    Column("rabbitmq_version", "string", "the RabbitMQ version the spec asks the config to run", nullable=True),
    Column("metric", "string", "capacity_msg_s | p99_at_target_ms | drain_rate_msg_s | reduced_publish_s | "
           "memory_per_message_bytes | restart_s (sizing.judgement.upgrade.METRICS: what each is, from which table)"),
    Column("scenario", "string", "the scenario the figure comes from"),
    Column("unit", "string", "msg/s | ms | s | bytes"),
    Column("value", "float64", "median over the config's repeats"),
    Column("n", "int32", "repeats with a figure"),
    Column("lower_bound", "bool", "some repeat's figure is only a lower bound: its backlog drained within one second, "
           "the client records' resolution (sizing.judgement.upgrade.drain_at_resolution)"),
    Column("baseline_config_id", "string", "the baseline config compared with (null on the baseline's rows)",
           nullable=True),
    Column("baseline_version", "string", "its RabbitMQ version", nullable=True),
    Column("baseline_value", "float64", "the baseline's median (null: the baseline has no figure)", nullable=True),
    Column("n_baseline", "int32", "the baseline's repeats with a figure", nullable=True),
    Column("change", "float64", "value / baseline_value - 1 (0.1 = +10%)", nullable=True),
    Column("direction", "string", "higher | lower | unchanged: the change against "
           "sizing.criteria.stats.PRACTICAL_EFFECT (5%), whatever the repeats", nullable=True),
    Column("verdict", "string", "higher | lower | unchanged | inconclusive over the repeats "
                                "(sizing.criteria.stats.compare; "
           "inconclusive with one repeat each; null: a figure not positive)", nullable=True),
    Column("better", "bool", "the direction is the better one for this metric (null: unchanged or no change)",
           nullable=True),
    Column("expected", "string", "higher | lower: the direction published results lead one to expect between the "
           "two versions (sizing.judgement.upgrade.EXPECTATIONS; null: none published)", nullable=True),
    Column("expected_source", "string", "the published result that sets it", nullable=True),
    Column("agrees", "bool", "direction == expected (false: the measurement contradicts the published result; "
           "null: no expectation or no change)", nullable=True),
)

# Per-second series (issue 35), written by the analysis beside phase_summary, so that the report, the demo and any
# Parquet engine read a run's per-second figures rather than the raw records.
_SERIES_KEY = (*RUN_KEY,
    Column("second", "int32", "whole seconds since scenario start (the row covers [second, second+1))"),
    Column("phase", "int32", "phase of the second (0 = the drain after the last phase); a boundary second some "
           "workers counted in the phase before is the later phase's"),
)


def _named(columns: Sequence[Column], *names: str) -> tuple[Column, ...]:
    """Columns of a raw record type reused as they are documented there (one home for their meaning)."""
    by_name = {c.name: c for c in columns}
    return tuple(by_name[name] for name in names)


def _percentiles(prefix: str, what: str) -> tuple[Column, ...]:
    return tuple(Column(f"{prefix}_{q}_ms", "float64", f"{what} {label} of the second, ms, nearest rank over every "
                        "worker's histogram of the second merged (sizing.contract.histogram; null: no sample)",
                        nullable=True)
                 for q, label in ((q, quantile_label(q)) for q in LATENCY_QUANTILES))


# One row per run, workload group and second: client_seconds summed over the group's workers. A count per second is
# the rate in msg/s.
CLIENT_SERIES = (*_SERIES_KEY,
    Column("group", "string", "workload group (records written before groups: main)"),
    Column("warmup", "bool", "some worker counted the second in its phase's warm-up window"),
    Column("workers", "int32", "worker rows of the group in this second"),
    Column("offered_rate", "float64", "scheduled total publish rate of the whole run at this second, msg/s (the "
           "client records' target_rate)"),
    Column("scheduled", "int64", "messages the group's schedule made due in this second"),
    Column("published", "int64", "basic.publish calls made in this second (msg/s)"),
    Column("confirmed", "int64", "messages positively confirmed in this second (msg/s)"),
    Column("consumed", "int64", "deliveries received in this second, redeliveries included (msg/s)"),
    Column("acked", "int64", "deliveries acknowledged in this second"),
    Column("publish_delay_max_ms", "float64", "publish lateness: the worst lateness of a send against its intended "
           "time in this second, ms (exact)", nullable=True),
    Column("e2e_samples", "int64", "end-to-end latency samples of the second (deliveries measured)"),
    *_percentiles("e2e", "end-to-end latency (from the client records' latency_basis)"),
    Column("e2e_max_ms", "float64", "exact worst end-to-end latency of the second, ms (null: nothing delivered, or "
           "records without it)", nullable=True),
    *_percentiles("confirm", "confirm latency"),
    Column("blocked_ms", "float64", "the most blocked worker's blocked time in this second, connection-ms summed "
           "over its connections as client_seconds.blocked_ms (above 1000 when several were blocked the whole "
           "second; null: no worker said)", nullable=True),
)

# One row per run, broker node and second: the node's last management sample in that second (broker_samples).
BROKER_SERIES = (*_SERIES_KEY,
    *_named(BROKER_SAMPLES, "node"),
    Column("samples", "int32", "samples of the node in this second (the row holds the last)"),
    *_named(BROKER_SAMPLES, "running", "mem_used_bytes", "mem_limit_bytes"),
    Column("mem_share", "float64", "mem_used_bytes / mem_limit_bytes: memory against its high watermark (1: the "
           "memory alarm blocks publishers)", nullable=True),
    *_named(BROKER_SAMPLES, "mem_alarm", "disk_alarm", "disk_free_bytes", "queue_messages", "queue_messages_ready",
            "queue_messages_unacked", "publish_rate", "deliver_rate"),
)

# One row per run, node and second: the node's resources (node_seconds; a missing second is a row with null figures).
NODE_SERIES = (*_SERIES_KEY,
    *_named(NODE_SECONDS, "node", "target", "missing", "cores", "cpu_quota_cores", "cpu_busy", "cpu_source",
            "cpu_iowait", "cpu_steal", "machine_cpu_busy_s", "machine_cores", "run_queue", "mem_rss_bytes",
            "disk_read_bytes_per_s", "disk_write_bytes_per_s", "disk_write_ops_per_s", "fsyncs_per_s",
            "net_in_bytes_per_s", "net_out_bytes_per_s", "client_in_bytes_per_s", "client_out_bytes_per_s",
            "internode_in_bytes_per_s", "internode_out_bytes_per_s", "nic_in_bytes_per_s", "nic_out_bytes_per_s",
            *(f"{role}_write_{what}_per_s" for role in VOLUME_ROLES for what in ("bytes", "ops"))),
)

# One row per event of a run, as the generator recorded it (events): phase marks, faults, blocked connections, a
# generator behind. The report marks its charts' phases and faults from it, and a user can query it like any table.
RUN_EVENTS = EVENTS

TABLES: dict[str, tuple[Column, ...]] = {
    "phase_summary": PHASE_SUMMARY,
    "capacity_repeats": CAPACITY_REPEATS,
    "leaderboards": LEADERBOARDS,
    "pareto": PARETO,
    "adverse": ADVERSE,
    "recommendation": RECOMMENDATION,
    "capacity": CAPACITY,
    "findings": FINDINGS,
    "repeat_intervals": REPEAT_INTERVALS,
    "board_intervals": BOARD_INTERVALS,
    "runs": RUNS,
    "upgrade": UPGRADE,
    "client_series": CLIENT_SERIES,
    "broker_series": BROKER_SERIES,
    "node_series": NODE_SERIES,
    "run_events": RUN_EVENTS,
}

SERIES_TABLES = ("client_series", "broker_series", "node_series")
# What the analysis writes with phase_summary, into its partitions, and checks with it: the apps read these, never
# the raw records (issue 35).
BESIDE_SUMMARY = (*SERIES_TABLES, "run_events")
# Every table is partitioned by run (issue 24: each run's answer stays queryable). Per-config tables by campaign,
# config and run (a backfill of one config of one run replaces exactly its partition); the others are campaign-wide,
# recomputed per run by the leaderboards step (and `runs` by the analysis job) into the run's partition.
PER_CONFIG_TABLES = ("phase_summary", *BESIDE_SUMMARY)
CAMPAIGN_TABLES = tuple(name for name in TABLES if name not in PER_CONFIG_TABLES)


def partition_columns(table: str) -> tuple[str, ...]:
    """The columns a table's objects are partitioned by (sizing.contract.layout.table_prefix)."""
    return ("campaign", "config_id", "run_id") if table in PER_CONFIG_TABLES else ("campaign", "run_id")

SPARK_TYPES = {"string": "STRING", "int32": "INT", "int64": "BIGINT", "float64": "DOUBLE", "bool": "BOOLEAN",
                "binary": "BINARY"}


def table_columns(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def table_ddl(table: str) -> str:
    """A derived table's schema as a Spark DDL string (`name TYPE, ...`)."""
    return ", ".join(f"{c.name} {SPARK_TYPES[c.type]}" for c in TABLES[table])


def table_markdown(table: str) -> str:
    """The README's table of a derived table's columns."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    return "\n".join(lines + [f"| `{c.name}` | {SPARK_TYPES[c.type]} | {c.doc} |" for c in TABLES[table]])


if __name__ == "__main__":  # prints the Markdown tables of spark_jobs/README.md ("Tables")
    print("\n\n".join(f"### {name}\n\n{table_markdown(name)}" for name in TABLES))
