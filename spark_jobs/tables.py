"""Schemas of the derived tables, one place (the jobs cast to them, the readers declare them, README shows them).

`python -m spark_jobs.tables` prints the Markdown tables used in spark_jobs/README.md.
"""

from __future__ import annotations

import sys

_KEY = [
    ("campaign", "STRING", "campaign name (partition)"),
    ("config_id", "STRING", "cluster config (partition)"),
    ("scenario", "STRING", "scenario name"),
    ("run_id", "STRING", "run label given by the orchestrator"),
    ("repeat", "INT", "1-based repeat"),
    ("phase", "INT", "1-based phase number"),
]

PHASE_SUMMARY = [
    *_KEY,
    ("phase_name", "STRING", "e.g. rate-30000"),
    ("start_s", "DOUBLE", "phase start, s since scenario start"),
    ("duration_s", "DOUBLE", "phase length, s"),
    ("warmup_s", "DOUBLE", "warm-up excluded from every figure below"),
    ("steady_s", "DOUBLE", "duration_s - warmup_s: the window rates are computed over"),
    ("target_rate", "DOUBLE", "mean scheduled publish rate of the phase, msg/s"),
    ("processing_ms_start", "DOUBLE", "consumer processing time at phase start"),
    ("processing_ms_end", "DOUBLE", "consumer processing time at phase end"),
    ("workers", "INT", "load-generator workers with steady rows"),
    ("steady_seconds_observed", "INT", "seconds spanned by steady rows"),
    ("scheduled", "BIGINT", "messages due in the steady window"),
    ("published", "BIGINT", "basic.publish calls in the steady window"),
    ("confirmed", "BIGINT", "confirms in the steady window"),
    ("nacked", "BIGINT", "nacks in the steady window"),
    ("returned", "BIGINT", "returns in the steady window"),
    ("consumed", "BIGINT", "deliveries in the steady window (incl. redeliveries)"),
    ("redelivered", "BIGINT", "redelivered deliveries in the steady window"),
    ("publish_rate", "DOUBLE", "published / steady_s, msg/s"),
    ("confirm_rate", "DOUBLE", "confirmed / steady_s, msg/s"),
    ("consume_rate", "DOUBLE", "consumed / steady_s, msg/s"),
    ("matched_target", "BOOLEAN", "valid AND confirm_rate and consume_rate >= 98% of target AND e2e_p99_ms <= SLO"),
    ("slo_p99_ms", "DOUBLE", "the campaign's end-to-end p99 SLO"),
    ("valid", "BOOLEAN", "the load generator kept up (see invalid_reason)"),
    ("invalid_reason", "STRING", "no_client_records | loadgen_cpu_saturated | loadgen_behind (comma list)"),
    ("e2e_samples", "BIGINT", "messages in the merged end-to-end histogram"),
    *[(f"e2e_{q}_ms", "DOUBLE", f"end-to-end latency {q} (merged histograms, 1% rel. error), ms")
      for q in ("p50", "p75", "p95", "p99", "p999", "max")],
    *[(f"confirm_{q}_ms", "DOUBLE", f"confirm latency {q}, ms") for q in ("p50", "p75", "p95", "p99", "p999", "max")],
    ("publish_delay_p99_ms", "DOUBLE", "p99 lateness of sends against the open-loop schedule, ms"),
    ("publish_delay_max_ms", "DOUBLE", "worst lateness, ms"),
    ("blocked_share", "DOUBLE", "fraction of worker time the broker blocked publishers"),
    ("worker_cpu_max", "DOUBLE", "highest per-worker CPU share (cpu_s per second) in the steady window"),
    ("worker_behind_events", "BIGINT", "worker_behind events in the phase"),
    ("connection_blocked_events", "BIGINT", "connection_blocked events in the phase"),
    ("backlog_max", "BIGINT", "broker_queue_max, else backlog_max_client"),
    ("backlog_max_client", "BIGINT", "max of cumulative confirmed - consumed over the phase's seconds"),
    ("broker_queue_max", "BIGINT", "max over samples of messages in all queues (summed over nodes)"),
    ("broker_mem_max_bytes", "BIGINT", "max memory used by any node"),
    ("broker_mem_max_fraction", "DOUBLE", "max memory used / high watermark"),
    ("broker_alarm", "BOOLEAN", "any memory or disk alarm seen"),
    ("broker_node_down_seen", "BOOLEAN", "a sample saw a node not running"),
    ("broker_disk_free_min_bytes", "BIGINT", "lowest free disk"),
    ("lost", "BIGINT", "confirmed messages never consumed (ACCOUNTING)"),
    ("duplicates", "BIGINT", "consumed again without the redelivered flag"),
    ("reordered", "BIGINT", "deliveries older than an earlier one of the same publisher on one queue"),
    ("consumed_unique", "BIGINT", "distinct messages consumed"),
    ("redelivered_accounted", "BIGINT", "redelivered deliveries (ACCOUNTING)"),
    ("faults", "INT", "fault_start events in the phase"),
    ("fault_kinds", "STRING", "comma list of fault kinds"),
    ("fault_errors", "BIGINT", "fault_error events"),
    ("pre_fault_rate", "DOUBLE", "throughput before the fault (mean of the 30 s before), msg/s"),
    ("time_to_recover_s", "DOUBLE", "longest time back to >= 95% of pre_fault_rate for 5 s (null: no fault/never)"),
    ("recovered", "BOOLEAN", "every fault of the phase recovered before the phase ended"),
    ("unavailable_s", "DOUBLE", "degraded seconds (< 95% of pre_fault_rate) between faults and recovery"),
    ("worst_dip_ratio", "DOUBLE", "lowest 5 s mean throughput after a fault / pre_fault_rate"),
]


def ddl(columns: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind, _ in columns)


PHASE_SUMMARY_DDL = ddl(PHASE_SUMMARY)


def markdown(columns: list[tuple[str, str, str]]) -> str:
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{n}` | {t} | {d} |" for n, t, d in columns]
    return "\n".join(lines)


def _ddl_markdown(ddl_text: str) -> str:
    return "\n".join(["| column | type |", "|---|---|"]
                     + [f"| `{p.split()[0]}` | {p.split()[1]} |" for p in ddl_text.split(", ")])


if __name__ == "__main__":
    from spark_jobs import leaderboards

    sys.stdout.write("### phase_summary\n\n" + markdown(PHASE_SUMMARY) + "\n\n")
    for name, text in (("leaderboards", leaderboards.LEADERBOARD_DDL), ("pareto", leaderboards.PARETO_DDL),
                       ("adverse", leaderboards.ADVERSE_DDL)):
        sys.stdout.write(f"### {name}\n\n{_ddl_markdown(text)}\n\n")
