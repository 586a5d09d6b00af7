"""The judgement rules of sizing.criteria.rules as Spark Column expressions (a library module: no job imports it twice).

Each builder applies the one predicate from sizing.criteria.rules to phase_summary columns and adds only what Spark
needs on top: null handling (a missing figure never passes) and `F.least` for the carried rate.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from sizing.criteria import rules


def invalid_reason() -> Column:
    """Comma list of why the load generator's figures are not conclusive, null when it kept up."""
    checks = rules.invalid_checks(F.col("workers").isNull(), F.col("worker_cpu_max"),
                                  F.coalesce(F.col("worker_behind_events"), F.lit(0)))
    reasons = F.concat_ws(",", *[F.when(check, F.lit(name)) for name, check in checks.items()])
    return F.when(reasons == "", None).otherwise(reasons)


def matched_target(slo_p99_ms: Column) -> Column:
    """sizing.criteria.rules.matched_target; false (not null) when a rate or the p99 is missing."""
    matched = rules.matched_target(F.col("confirm_rate"), F.col("consume_rate"), F.col("target_rate"),
                                   F.col("e2e_p99_ms"), slo_p99_ms)
    return F.coalesce(matched & F.col("e2e_p99_ms").isNotNull(), F.lit(False))


def carried() -> Column:
    """sizing.criteria.rules.carried_rate: the lower of the achieved confirm and consume rates."""
    return F.least("confirm_rate", "consume_rate")


def conclusive() -> Column:
    """sizing.criteria.rules.conclusive over phase_summary's valid (missing: not conclusive)."""
    return F.coalesce(rules.conclusive(F.col("valid")), F.lit(False))


def counts_toward_capacity() -> Column:
    """sizing.criteria.rules.counts_toward_capacity over phase_summary's own valid/p99/SLO columns."""
    return F.coalesce(rules.counts_toward_capacity(F.col("valid"), F.col("e2e_p99_ms"),
                                                   F.col("slo_p99_ms")), F.lit(False))


def bottleneck() -> Column:
    """sizing.criteria.rules.bottleneck over phase_summary's resource and client-ceiling columns: the same checks
    (rules.bottleneck_checks) in rules.BOTTLENECK_ORDER; a missing figure is 0 and a missing limit rules.UNKNOWN_LIMIT
    (neither triggers); null without node figures unless a label of rules.DECIDED_WITHOUT_NODES decides."""
    def figure(name: str) -> Column:
        return F.coalesce(F.col(name), F.lit(0.0))

    def limit(name: str) -> Column:
        return F.coalesce(F.col(name), F.lit(rules.UNKNOWN_LIMIT))

    def flag(name: str) -> Column:
        return F.coalesce(F.col(name), F.lit(False))

    carried = F.least(figure("confirm_rate"), figure("consume_rate"))
    checks = rules.bottleneck_checks(figure, limit, flag, carried=carried)
    # without node figures only the checks before cpu can name the phase; anything else would be a guess
    unseen = F.coalesce(F.col("resource_nodes"), F.lit(0)) == 0

    def named(label: str, needs_nodes: bool) -> Column:
        return F.when(unseen, F.lit(None).cast("string")).otherwise(F.lit(label)) if needs_nodes else F.lit(label)

    chain = None
    for name in rules.BOTTLENECK_ORDER:
        condition = F.coalesce(checks[name], F.lit(False))
        label = named(rules.bottleneck_label(name), name not in rules.DECIDED_WITHOUT_NODES)
        chain = F.when(condition, label) if chain is None else chain.when(condition, label)
    return chain.otherwise(named(rules.NO_BOTTLENECK, True))  # type: ignore[union-attr]


def bottleneck_detail() -> Column:
    """The figure behind phase_summary.bottleneck, against its threshold."""
    def fmt(template: str, *columns: str | Column) -> Column:
        return F.format_string(template, *[F.col(c) if isinstance(c, str) else c for c in columns])

    return (F.when(F.col("bottleneck") == "generator", F.concat(F.lit("generator: "), F.col("invalid_reason")))
            .when(F.col("bottleneck") == "memory",
                  fmt(f"memory: alarm=%s, max %.2f of the watermark (>= {rules.NEAR_LIMIT:g})", "broker_alarm",
                      "broker_mem_max_fraction"))
            .when(F.col("bottleneck") == "consumers",
                  fmt(f"consumers: consumed %.0f msg/s of a %.0f msg/s processing ceiling (>= {rules.NEAR_LIMIT:g}; "
                      "processing %.0f-%.0f ms), target %.0f", "consume_rate", "consumer_ceiling",
                      "processing_ms_start", "processing_ms_end", "target_rate"))
            .when(F.col("bottleneck") == "cpu",
                  fmt(f"cpu: %s mean %.2f (p95 %.2f), machine %.2f (>= {rules.NODE_CPU_SATURATION:g})",
                      "cpu_busiest_node", "cpu_busiest_mean", "cpu_busiest_p95", "machine_cpu_busy_mean"))
            .when(F.col("bottleneck") == "disk",
                  fmt(f"disk: the %s volume at %.2f of its own limit, the instance's EBS at %.2f (>= "
                      f"{rules.NEAR_LIMIT:g}); busiest node %s %.0f IOPS, %.1f MB/s", "volume_busiest_role",
                      "volume_load_share", "ebs_load_share", "disk_busiest_node", "disk_write_iops",
                      "disk_write_mb_s"))
            .when(F.col("bottleneck") == "network",
                  fmt(f"network: %.0f Mbit/s of %.0f (>= {rules.NEAR_LIMIT:g})", "net_peak_mbit_s",
                      "network_limit_mbit_s"))
            .when(F.col("bottleneck") == "consumer_prefetch",
                  fmt(f"consumer_prefetch: consumed %.0f msg/s of a %.0f msg/s prefetch ceiling (>= "
                      f"{rules.NEAR_LIMIT:g}; a slot's trip: hold %.1f ms + refill %.1f ms), target %.0f",
                      "consume_rate", "prefetch_ceiling", "consumer_hold_mean_ms", "consumer_refill_mean_ms",
                      "target_rate"))
            .when(F.col("bottleneck") == "publisher_window",
                  fmt(f"publisher_window: carried %.0f msg/s of a %.0f msg/s confirm-window ceiling (>= "
                      f"{rules.NEAR_LIMIT:g}; mean confirm latency %.1f ms), target %.0f", carried(),
                      "publisher_window_ceiling", "confirm_mean_ms", "target_rate"))
            .when(F.col("bottleneck") == "none",
                  fmt("none: cpu %.2f, machine %.2f, disk %.1f MB/s, net %.0f Mbit/s", "cpu_busiest_mean",
                      "machine_cpu_busy_mean", "disk_write_mb_s", "net_peak_mbit_s")))


def judged_group() -> Column:
    """sizing.criteria.rules.judged_group; tables written before workload groups have no `foreground`: judged."""
    return F.coalesce(rules.judged_group(F.col("foreground")), F.lit(True))


def probe_passes(slo_p99_ms: float, slo_p999_ms: float | None) -> Column:
    """sizing.criteria.rules.probe_verdict over phase_summary's figures of a capacity-search probe (the generator
    decided online with the same rule); false (not null) when a figure is missing, as a probe without them fails."""
    verdict = rules.probe_verdict(F.col("target_rate"), F.col("confirm_rate"), F.col("consume_rate"),
                                  F.col("backlog_slope"), F.col("e2e_p99_ms"), F.col("e2e_p999_ms"), F.col("valid"),
                                  F.lit(float(slo_p99_ms)), None if slo_p999_ms is None else F.lit(float(slo_p999_ms)))
    return F.coalesce(verdict, F.lit(False))
