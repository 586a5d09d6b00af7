"""The judgement rules of sizing.rules as Spark Column expressions (a library module: no job imports it twice).

Each builder applies the one predicate from sizing.rules to phase_summary columns and adds only what Spark
needs on top: null handling (a missing figure never passes) and `F.least` for the carried rate.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from sizing import rules


def invalid_reason() -> Column:
    """Comma list of why the load generator's figures are not conclusive, null when it kept up."""
    reasons = F.concat_ws(",",
                          F.when(F.col("workers").isNull(), F.lit("no_client_records")),
                          F.when(rules.cpu_saturated(F.col("worker_cpu_max")), F.lit("loadgen_cpu_saturated")),
                          F.when(F.coalesce(F.col("worker_behind_events"), F.lit(0)) > 0, F.lit("loadgen_behind")))
    return F.when(reasons == "", None).otherwise(reasons)


def matched_target(slo_p99_ms: Column) -> Column:
    """sizing.rules.matched_target; false (not null) when a rate or the p99 is missing."""
    matched = rules.matched_target(F.col("confirm_rate"), F.col("consume_rate"), F.col("target_rate"),
                                   F.col("e2e_p99_ms"), slo_p99_ms)
    return F.coalesce(matched & F.col("e2e_p99_ms").isNotNull(), F.lit(False))


def carried() -> Column:
    """sizing.rules.carried_rate: the lower of the achieved confirm and consume rates."""
    return F.least("confirm_rate", "consume_rate")


def counts_toward_capacity() -> Column:
    """sizing.rules.counts_toward_capacity over phase_summary's own valid/matched_target/p99/SLO columns."""
    return F.coalesce(rules.counts_toward_capacity(F.col("valid"), F.col("matched_target"), F.col("e2e_p99_ms"),
                                                   F.col("slo_p99_ms")), F.lit(False))


def held_target() -> Column:
    """sizing.rules.held_target over phase_summary's matched_target (a missing loss count counts as none lost)."""
    return F.coalesce(rules.held_target(F.col("matched_target"), F.coalesce("lost", F.lit(0))), F.lit(False))
