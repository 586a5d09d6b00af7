"""The phase_summary table (TRANSFORM): one row per campaign, config, scenario, run, repeat, phase and group (schema:
spark_jobs/README.md), assembled from the client and node folds, the dynamics and the broker, event, probe and
accounting records (summarise, a pure DataFrame transform)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sizing.campaign import Campaign
from sizing.contract import records
from sizing.criteria.rules import judged_against_target
from sizing.criteria.search import PROBE_EVENT, SearchSpec
from spark_jobs.lib import rules_columns
from spark_jobs.lib.phase_summary.client_fold import COUNT_BLOCK_COLUMNS, ClientRecords
from spark_jobs.lib.phase_summary.client_stats import client_phase_stats
from spark_jobs.lib.phase_summary.dynamics import phase_dynamics
from spark_jobs.lib.phase_summary.keys import GROUP_KEY, PHASE_KEY, Transform, with_group
from spark_jobs.lib.phase_summary.node_fold import NODE_PARTIAL_DDL, NodeRecords
from spark_jobs.lib.phase_summary.resources import node_phase_stats, with_resource_limits

TABLE = "phase_summary"
TRANSFORM = Transform(TABLE, ("phases", "client_seconds", "accounting", "events", "broker_samples", "node_seconds"))


@dataclass(frozen=True)
class Rules:
    """The campaign's part of the verdicts; thresholds are sizing.criteria.rules' (spark_jobs/README.md, "Rules").

    Publish lateness alone is no verdict on the load generator: with confirms it is mostly broker
    back-pressure (the in-flight limit is full) or an outage during a fault. The generator says itself
    when it fell behind (`worker_behind` events: its tick loop lagged or its CPU was saturated).
    """

    slo_p99_ms: float
    # Capacity-search scenarios (issue 16) and their specs: each probe's verdict is recomputed with its SLO.
    searches: tuple[tuple[str, SearchSpec], ...] = ()

    @classmethod
    def of(cls, campaign: Campaign) -> Rules:
        return cls(slo_p99_ms=campaign.target.p99_latency_ms,
                   searches=tuple((s.name, s.search) for s in campaign.scenarios if s.search is not None))


# --------------------------------------------------------------------------- broker, events, accounting


def broker_phase_stats(samples: DataFrame) -> DataFrame:
    per_second = (samples.groupBy(*PHASE_KEY, F.floor("second").alias("sample_second"))
                  .agg(F.sum("queue_messages").alias("queue_messages"),
                       F.min(F.col("running").cast("int")).alias("all_running")))
    depth = per_second.groupBy(*PHASE_KEY).agg(
        F.max("queue_messages").alias("broker_queue_max"),
        (F.min("all_running") == 0).alias("broker_node_down_seen"))
    # Which nodes some sample saw down (the answering node's view), and the first second after the last
    # such sample at which every node ran again (null: none down, or still down when the phase ended).
    down = (samples.filter(~F.col("running")).groupBy(*PHASE_KEY)
            .agg(F.concat_ws(",", F.array_sort(F.collect_set("node"))).alias("broker_nodes_down"),
                 F.max(F.floor("second")).alias("last_down_s")))
    whole = (per_second.join(down.select(*PHASE_KEY, "last_down_s"), PHASE_KEY)
             .filter((F.col("sample_second") > F.col("last_down_s")) & (F.col("all_running") == 1))
             .groupBy(*PHASE_KEY).agg(F.min("sample_second").alias("broker_whole_again_s")))
    nodes = samples.groupBy(*PHASE_KEY).agg(
        F.max("mem_used_bytes").alias("broker_mem_max_bytes"),
        F.max(F.col("mem_used_bytes") / F.col("mem_limit_bytes")).alias("broker_mem_max_fraction"),
        F.max((F.col("mem_alarm") | F.col("disk_alarm")).cast("int")).cast("boolean").alias("broker_alarm"),
        F.min("disk_free_bytes").alias("broker_disk_free_min_bytes"))
    return (nodes.join(depth, PHASE_KEY, "outer").join(down.drop("last_down_s"), PHASE_KEY, "left")
            .join(whole, PHASE_KEY, "left"))


def event_phase_stats(events: DataFrame) -> DataFrame:
    def count(kind: str) -> F.Column:
        return F.sum((F.col("kind") == kind).cast("int"))

    return events.groupBy(*PHASE_KEY).agg(
        count("worker_behind").alias("worker_behind_events"),
        count("connection_blocked").alias("connection_blocked_events"),
        count("fault_error").alias("fault_errors"),
        F.max(F.when(F.col("kind") == "fault_heal", F.col("second"))).alias("last_heal_s"))


# ------------------------------------------------------------------------------------ capacity-search probes

def probe_decisions(events: DataFrame) -> DataFrame:
    """The generator's online verdict, stage and bracket after every search probe, from its search_probe event."""
    return (events.filter(F.col("kind") == PROBE_EVENT)
            .select(*PHASE_KEY, F.get_json_object("detail", "$.stage").alias("probe_stage"),
                    F.get_json_object("detail", "$.passed").cast("boolean").alias("probe_online_passed"),
                    F.coalesce(F.get_json_object("detail", "$.inconclusive").cast("boolean"),
                               F.lit(False)).alias("probe_inconclusive"),
                    F.get_json_object("detail", "$.last_pass").cast("double").alias("probe_last_pass"),
                    F.get_json_object("detail", "$.first_fail").cast("double").alias("probe_first_fail")))


def recomputed_probe_verdict(rules: Rules) -> Column:
    """sizing.criteria.rules.probe_verdict with each search scenario's SLO; null outside search scenarios."""
    verdict = F.lit(None).cast("boolean")
    for name, search in rules.searches:
        verdict = F.when(F.col("scenario") == name,
                         rules_columns.probe_passes(search.slo_p99_ms, search.slo_p999_ms)).otherwise(verdict)
    return verdict


def accounting_stats(accounting: DataFrame) -> DataFrame:
    return with_group(accounting).select(*GROUP_KEY, "lost", "duplicates", "reordered",
                             F.col("consumed_unique"), F.col("redelivered").alias("redelivered_accounted"))



# ------------------------------------------------------------------------------------------ assemble


def rate_mode_columns() -> list[Column]:
    """Issue 13: the phase's rate mode and the basis of its latency figures (phases written before them are
    scheduled, measured from the intended send time)."""
    return [F.coalesce(F.col("rate_mode"), F.lit("scheduled")).alias("rate_mode"),
            F.coalesce(F.col("latency_basis"), F.lit("intended")).alias("latency_basis")]


def group_columns(phases: DataFrame) -> list[Column]:
    """Issue 14: whether the row's group is the foreground (phases written before groups: their one group is)."""
    detail = F.col("group_detail") if "group_detail" in phases.columns else F.lit(None).cast("string")
    foreground = F.col("foreground") if "foreground" in phases.columns else F.lit(None).cast("boolean")
    return [F.coalesce(foreground, F.lit(True)).alias("foreground"), detail.alias("group_detail")]


def summarise(phases: DataFrame, clients: ClientRecords, accounting: DataFrame, events: DataFrame,
              broker_samples: DataFrame, rules: Rules, nodes: NodeRecords | None = None,
              resource_limits: DataFrame | None = None) -> DataFrame:
    """The phase_summary table from the raw record types (pure DataFrame transform)."""
    base = with_group(phases).select(*GROUP_KEY, "phase_name", "start_s", "duration_s", "warmup_s", "target_rate",
                                     "processing_ms_start", "processing_ms_end", *rate_mode_columns(),
                                     *group_columns(phases))
    joined = (base.join(client_phase_stats(clients.partials), GROUP_KEY, "left")
              .join(phase_dynamics(clients.series.select(*COUNT_BLOCK_COLUMNS), events), GROUP_KEY, "left")
              .join(accounting_stats(accounting), GROUP_KEY, "left")
              .join(event_phase_stats(events), PHASE_KEY, "left")
              .join(broker_phase_stats(broker_samples), PHASE_KEY, "left"))
    steady = F.col("duration_s") - F.col("warmup_s")
    with_rates = (joined.withColumn("steady_s", steady)
                  .withColumn("publish_rate", F.col("published") / steady)
                  .withColumn("confirm_rate", F.col("confirmed") / steady)
                  .withColumn("consume_rate", F.col("consumed") / steady)
                  .withColumn("faults", F.coalesce("faults", F.lit(0)))
                  .withColumn("backlog_max", F.coalesce("broker_queue_max", "backlog_max_client"))
                  .withColumn("broker_whole_after_heal_s",
                              F.greatest(F.col("broker_whole_again_s") - F.col("last_heal_s"), F.lit(0.0))))
    with_validity = (with_rates.withColumn("invalid_reason", rules_columns.invalid_reason())
                     .withColumn("valid", F.col("invalid_reason").isNull()))
    # runs recorded before node_seconds existed: no partial rows, and the resource columns stay null
    partials = nodes.partials if nodes is not None else phases.sparkSession.createDataFrame([], NODE_PARTIAL_DDL)
    with_validity = with_validity.join(node_phase_stats(partials), PHASE_KEY, "left")
    with_validity = (with_resource_limits(with_validity, resource_limits)
                     .withColumn("bottleneck", rules_columns.bottleneck())
                     .withColumn("bottleneck_detail", rules_columns.bottleneck_detail()))
    with_validity = (with_validity.join(probe_decisions(events), PHASE_KEY, "left")
                     .withColumn("probe_passed", recomputed_probe_verdict(rules)))
    return (with_validity.withColumn("slo_p99_ms", F.lit(float(rules.slo_p99_ms)))
            .withColumn("matched_target", rules_columns.matched_target(F.col("slo_p99_ms"))
                        & judged_against_target(F.col("rate_mode")))
            # one expression list, one call: a Column per column was ~360 py4j calls (0.8 s of driver time)
            .selectExpr(*[f"CAST(`{c.name}` AS {records.SPARK_TYPES[c.type]}) AS `{c.name}`"
                          for c in records.PHASE_SUMMARY]))
