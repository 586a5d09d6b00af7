"""leaderboards: campaign-wide capacity and cost tables of one run, recomputed from that run's phase_summary rows
(every config's). The last step of the `analysis` job (spark_jobs/jobs/analysis.py runs it, once per run it analysed).

Writes the campaign tables (TABLES), each one object set per campaign and run (the run's partition is replaced
whole; every other run's answer stays, issue 24):
- capacity_repeats: per config and repeat, the top carried rate within the SLO (the leaderboard's figures are
  aggregates of these rows);
- leaderboards: per config, top matched throughput, cost per 1000 msg/s per month at it and at the
  campaign target (only configs that met target and SLO), ranks, Pareto flag;
- pareto: the configs on the cost-vs-capacity Pareto front;
- adverse: per config and adverse scenario, judged by its own criterion (sizing.judgement.adverse): fault scenarios hold
  the target and lose nothing (recovery time reported); backlog scenarios keep publishers unaffected, lose nothing and
  drain (reduced-publish and blocked seconds, peak backlog and memory, drain time reported);
- recommendation: a sizing campaign's answer, per config its standing (sizing.judgement.recommendation, pure, on the
  driver, from the leaderboard, adverse and phase_summary rows): which config is recommended, and why each other is not;
- findings: a compare or characterise campaign's answer (sizing.judgement.findings): every arm's medians, and each arm's
  effect against its baseline with an exact interval and a verdict;
- capacity: per config, search scenario and repeat, the capacity search replayed from phase_summary's recomputed
  probe verdicts (sustainable rate, bracket, probes, p99 and bottleneck there, agreement with the online
  verdicts) and the config's median with its order-statistic interval over its repeats. With search scenarios
  the leaderboard also ranks by sustainable rate and by cost per 1000 msg/s at it;
- repeat_intervals: per config, scenario (as written), phase and metric, the median over repeats with its
  order-statistic interval (sizing.judgement.repeats.phase_intervals: the report's per-phase figures);
- board_intervals: per board and config, the median of its capacity_repeats figures with its interval, and the exact
  comparison with the next-ranked config (sizing.judgement.repeats.board_intervals: the report's brackets and 'vs
  next');
- upgrade: a campaign comparing RabbitMQ versions (sizing.judgement.upgrade.version_arms), per config and metric the six
  figures of the upgrade question against the baseline version's, with the direction published results expect
  (sizing.judgement.upgrade, pure, on the driver). It alone reads raw records: the run's broker samples (memory per
  stored message) and events (node restart time) of its adverse scenarios, a few hundred rows, read in this process.
Costs come from sizing.resources.cost on the driver (21 rows; no second implementation of the cost model in Spark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from adapters.objectstore import StoreSpec
from sizing.campaign import Campaign, as_family_row, families, family_phases
from sizing.contract import layout, records
from sizing.criteria import rules
from sizing.criteria.search import Probe, ProbeOutcome, ProbeResult, SearchSpec, replay
from sizing.criteria.stats import median_interval
from sizing.judgement import adverse, findings, recommendation, repeats, upgrade
from sizing.planning.plan import ConfigPlan, plan_configs
from sizing.resources.cost import cost_per_1000_msgs
from spark_jobs.lib import gate, rules_columns
from spark_jobs.lib.tableio import RawObjects, read_table, replace_table

# schemas: sizing.contract.records.TABLES
TABLES = ("capacity_repeats", "leaderboards", "pareto", "adverse", "recommendation", "capacity", "findings",
          "repeat_intervals", "board_intervals", "upgrade")
PROBE_COLUMNS = ("campaign", "config_id", "scenario", "run_id", "repeat", "phase", "target_rate", "warmup_s",
                 "duration_s", "confirm_rate", "consume_rate", "backlog_slope", "e2e_p99_ms", "e2e_p999_ms", "valid",
                 "probe_stage", "probe_passed", "probe_online_passed", "probe_inconclusive", "bottleneck")
# What the interval tables read: of phase_summary (sizing.judgement.repeats.PHASE_KEY and the group's attributes), of
# capacity_repeats (the boards' per-repeat columns).
INTERVAL_INPUTS = ("config_id", "scenario", "phase", "phase_name", "target_rate", "repeat", "valid",
                   *repeats.REPEAT_METRICS)
BOARD_INPUTS = tuple(dict.fromkeys(b.per_repeat for b in repeats.BOARDS if b.per_repeat))
# capacity.status beyond sizing.criteria.search.STATUSES (the online search's own)
REPLAY_INCOMPLETE = "replay_incomplete"  # the recomputed verdicts call for a probe the run did not take
GENERATOR_BOUND = "generator_bound"  # a counted probe was not conclusive: the sustainable rate is only a floor


# -------------------------------------------------------------------------------- Spark aggregations


def capacity_repeats(phase_summary: DataFrame, capacity_scenarios: Sequence[str]) -> DataFrame:
    """Per (config, run, repeat): the top carried rate over the phases that count toward capacity, and at any
    latency.

    A phase counts by sizing.criteria.rules.counts_toward_capacity (conclusive and within the SLO) in a capacity
    scenario; what it carried is the lower of its confirm and consume rates: the highest rate a cluster carried
    within the SLO, whatever intensity it was offered. Seed 000's own "top throughput" is at any latency (its 40k
    of 3x36 io1 came with a p99 far over 1 s): the highest carried rate of any conclusive phase. The highest matched
    intensity of the repeat is the highest target among the counting phases that matched it. Repeats with no
    conclusive phase have no row; one with no phase within the SLO has a null top_matched_throughput.
    """
    conclusive = phase_summary.filter(rules_columns.conclusive() & F.col("scenario").isin(list(capacity_scenarios)))
    counts = rules_columns.counts_toward_capacity()
    return (conclusive.withColumn("carried", rules_columns.carried())
            .withColumn("counted", F.when(counts, F.col("carried")))
            .groupBy("campaign", "config_id", "run_id", "repeat")
            .agg(F.max("counted").alias("top_matched_throughput"),
                 F.max_by("phase_name", "counted").alias("top_matched_phase"),
                 F.max(F.when(counts & F.col("matched_target"), F.col("target_rate")))
                 .alias("max_matched_target_rate"),
                 F.sum(counts.cast("int")).cast("int").alias("capacity_phases"),
                 F.max("carried").alias("top_throughput_any_latency"))
            .select(*records.table_columns("capacity_repeats")))


def config_capacity(per_repeat: DataFrame) -> DataFrame:
    """Per config from its capacity_repeats rows: the median of the repeats' tops (a single lucky repeat must
    not lead the board; the report's interval is the median's), the best repeat's phase, and the highest intensity
    matched in every repeat."""
    return (per_repeat.groupBy("campaign", "config_id")
            .agg(F.median("top_matched_throughput").alias("top_matched_throughput"),
                 F.max_by("top_matched_phase", "top_matched_throughput").alias("top_matched_phase"),
                 F.min("max_matched_target_rate").alias("max_matched_target_rate"),
                 F.sum("capacity_phases").cast("int").alias("capacity_phases"),
                 F.median("top_throughput_any_latency").alias("top_throughput_any_latency")))


def adverse_verdicts(phase_summary: DataFrame, campaign: Campaign) -> list[dict[str, Any]]:
    """The adverse table's rows: each config's adverse scenarios judged by their own criterion
    (sizing.judgement.adverse.judge, pure, on the driver: a few phase rows per config and scenario). An isolated
    scenario's runs are judged as the one scenario the spec wrote (sizing.campaign.families)."""
    scenarios = {s.name: s for s in families(campaign.scenarios) if rules.is_adverse(s)}
    phases = family_phases(campaign.scenarios)
    members = [name for name, (family, _) in phases.items() if family in scenarios]
    if not scenarios:
        return []
    rows = (phase_summary.filter(F.col("scenario").isin(members))
            .select("campaign", "config_id", "scenario", *adverse.VERDICT_INPUTS).collect())
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        as_family = as_family_row(row.asDict(), phases)
        grouped.setdefault((row["campaign"], row["config_id"], as_family["scenario"]), []).append(as_family)
    return [{"campaign": campaign_name, "config_id": config_id,
             **adverse.judge(scenarios[scenario], phases_of, campaign.target.rate)}
            for (campaign_name, config_id, scenario), phases_of in sorted(grouped.items())]


def recommendation_rows(phase_summary: DataFrame, board: Sequence[dict[str, Any]],
                        adverse_rows: Sequence[dict[str, Any]], campaign: Campaign) -> list[dict[str, Any]]:
    """The recommendation table's rows (sizing.judgement.recommendation, pure, on the driver: one row per config); none
    unless the campaign sizes (a compare or characterise campaign's answer is the findings table)."""
    if campaign.purpose != findings.SIZE:
        return []
    valid = [r.asDict() for r in phase_summary.select("config_id", "valid").collect()]
    standings = recommendation.from_tables(campaign, board, adverse_rows, valid)
    return [{"campaign": campaign.name, **row} for row in recommendation.table_rows(standings)]


def campaign_findings(phase_summary: DataFrame, campaign: Campaign) -> list[dict[str, Any]]:
    """The findings table's rows: a compare or characterise campaign's answer (sizing.judgement.findings, pure, on the
    driver: a few figures per arm and repeat); none for a sizing campaign."""
    if campaign.purpose == findings.SIZE:
        return []
    rows = [r.asDict() for r in phase_summary.select(*findings.INPUTS).collect()]
    return [{"campaign": campaign.name, **row} for row in findings.findings(campaign, rows)]


def repeat_intervals(phase_summary: DataFrame, campaign: Campaign) -> list[dict[str, Any]]:
    """The repeat_intervals table's rows: per phase and metric the median over repeats with its interval
    (sizing.judgement.repeats.phase_intervals, pure, on the driver: one row per config, scenario, repeat and phase), an
    isolated scenario's runs as the phases of the scenario the spec wrote."""
    rows = [r.asDict() for r in phase_summary.select(*INTERVAL_INPUTS).collect()]
    return [{"campaign": campaign.name, **row}
            for row in repeats.phase_intervals(rows, phases=family_phases(campaign.scenarios))]


def board_intervals(per_repeat: DataFrame, board: Sequence[dict[str, Any]], campaign: Campaign
                    ) -> list[dict[str, Any]]:
    """The board_intervals table's rows: each board's configs in the board's order
    (sizing.judgement.repeats.board_entries over the leaderboard rows) with their figures over repeats
    (capacity_repeats, priced at the leaderboard's monthly cost) and the comparison with the next one
    (sizing.judgement.repeats.board_intervals)."""
    entries = repeats.board_entries(board, campaign.target.rate)
    monthly = {r["config_id"]: r["monthly_cost"] for r in board}
    rows = [r.asDict() for r in per_repeat.select("config_id", *BOARD_INPUTS).collect()]
    return [{"campaign": campaign.name, **row} for row in repeats.board_intervals(entries, rows, monthly)]


# The raw columns the upgrade table reads (sizing.judgement.upgrade.memory_per_message, restart_seconds), with the run
# key.
UPGRADE_RAW = {"broker_samples": ("second", "node", "running", "mem_used_bytes", "queue_messages"),
               "events": ("second", "kind", "fault_kind", "node", "detail")}


def version_comparison(phase_summary: DataFrame, capacity: Sequence[dict[str, Any]], campaign: Campaign,
                       raw: Mapping[str, Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The upgrade table's rows (sizing.judgement.upgrade.upgrade_rows, pure, on the driver); none unless the campaign
    compares RabbitMQ versions."""
    if upgrade.version_arms(campaign) is None:
        return []
    rows = [r.asDict() for r in phase_summary.select(*upgrade.PHASE_INPUTS).collect()]
    return upgrade.upgrade_rows(campaign, rows, capacity, raw.get("broker_samples", ()), raw.get("events", ()))


def version_comparison_raw(spec: StoreSpec, campaign: Campaign, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """The run's broker samples and events of its adverse scenarios, for the upgrade table (nothing for a campaign
    that compares no versions). Read in this process: a few hundred rows, not worth a Spark job."""
    if upgrade.version_arms(campaign) is None:
        return {}
    adverse_names = {s.name for s in campaign.scenarios if rules.is_adverse(s)}
    objects = RawObjects.list(spec, campaign.name, [p.config_id for p in plan_configs(campaign)], [run_id])
    run_key = [c.name for c in records.RUN_KEY]
    return {record_type: [r for r in objects.rows(record_type, columns=[*run_key, *columns]).to_pylist()
                          if r["scenario"] in adverse_names]
            for record_type, columns in UPGRADE_RAW.items()}


# ----------------------------------------------------------------------- pure driver-side ranking


def pareto_front(points: dict[str, tuple[float, float]]) -> set[str]:
    """Configs not dominated in (monthly cost: lower is better, capacity: higher is better)."""
    front = set()
    for name, (cost, cap) in points.items():
        dominated = any(c2 <= cost and k2 >= cap and (c2 < cost or k2 > cap)
                        for other, (c2, k2) in points.items() if other != name)
        if not dominated:
            front.add(name)
    return front


def _ranks(values: dict[str, float | None], descending: bool = False) -> dict[str, int]:
    present = sorted(((v, k) for k, v in values.items() if v is not None), key=lambda p: (
        -p[0] if descending else p[0], p[1]))
    return {k: i for i, (_, k) in enumerate(present, start=1)}


def rank_configs(capacity: dict[str, dict[str, Any]], plans: Sequence[ConfigPlan], queue_type: str,
                 target_rate: float, currency: str = "USD", run_id: str = "") -> list[dict[str, Any]]:
    """Leaderboard rows for every planned config (configs without a matched phase keep null costs), ranked over the
    campaign and, as seed 000 ranks them, within each volume type."""
    rows: dict[str, dict[str, Any]] = {}
    for plan in plans:
        cap = capacity.get(plan.config_id, {})
        top = cap.get("top_matched_throughput")
        any_latency = cap.get("top_throughput_any_latency")
        max_matched = cap.get("max_matched_target_rate")
        met = max_matched is not None and max_matched >= target_rate
        rows[plan.config_id] = {
            "campaign": plan.campaign, "run_id": run_id, "queue_type": queue_type, "config_id": plan.config_id,
            "nodes": plan.shape.nodes, "instance_type": plan.shape.instance_type,
            "volume_type": plan.shape.volume.type, "monthly_cost": plan.monthly_cost, "currency": currency,
            "top_matched_throughput": top, "top_matched_phase": cap.get("top_matched_phase"),
            "max_matched_target_rate": max_matched, "capacity_phases": cap.get("capacity_phases", 0),
            "campaign_target_rate": target_rate, "met_target": met,
            "cost_per_1k_at_top": cost_per_1000_msgs(plan.monthly_cost, top) if top else None,
            "cost_per_1k_at_target": cost_per_1000_msgs(plan.monthly_cost, target_rate) if met else None,
            "top_throughput_any_latency": any_latency,
            "cost_per_1k_at_top_any_latency": cost_per_1000_msgs(plan.monthly_cost, any_latency) if any_latency
            else None,
        }
    at_top = _ranks({k: r["cost_per_1k_at_top"] for k, r in rows.items()})
    at_target = _ranks({k: r["cost_per_1k_at_target"] for k, r in rows.items()})
    by_capacity = _ranks({k: r["top_matched_throughput"] for k, r in rows.items()}, descending=True)
    front = pareto_front({k: (r["monthly_cost"], r["top_matched_throughput"]) for k, r in rows.items()
                          if r["top_matched_throughput"]})
    for key, row in rows.items():
        row.update(rank_at_top=at_top.get(key), rank_at_target=at_target.get(key),
                   capacity_rank=by_capacity.get(key), pareto=key in front)
    for volume in {r["volume_type"] for r in rows.values()}:
        same = {k: r for k, r in rows.items() if r["volume_type"] == volume}
        by_any = _ranks({k: r["cost_per_1k_at_top_any_latency"] for k, r in same.items()})
        by_target = _ranks({k: r["cost_per_1k_at_target"] for k, r in same.items()})
        for key, row in same.items():
            row.update(volume_rank_at_top_any_latency=by_any.get(key), volume_rank_at_target=by_target.get(key))
    return sorted(rows.values(), key=lambda r: (r["rank_at_top"] is None, r["rank_at_top"] or 0, r["config_id"]))


# ------------------------------------------------------------------------------- capacity search (issue 16)


def _outcome(row: dict[str, Any]) -> ProbeOutcome:
    """A probe as recorded in phase_summary, with its recomputed verdict (a missing figure is a failing one)."""
    def number(key: str, missing: float) -> float:
        return missing if row.get(key) is None else float(row[key])

    measure_s = float(row["duration_s"]) - float(row["warmup_s"])
    probe = Probe(int(row["phase"]) - 1, float(row["target_rate"]), row.get("probe_stage") or "unknown",
                  float(row["warmup_s"]), measure_s)
    result = ProbeResult(probe, number("confirm_rate", 0.0), number("consume_rate", 0.0),
                         number("backlog_slope", 0.0), number("e2e_p99_ms", float("inf")),
                         None if row.get("e2e_p999_ms") is None else float(row["e2e_p999_ms"]), bool(row.get("valid")))
    return ProbeOutcome(result, bool(row.get("probe_passed")))


def capacity_rows(probes: Sequence[dict[str, Any]], searches: dict[str, SearchSpec]) -> list[dict[str, Any]]:
    """The capacity table from phase_summary's probe rows (PROBE_COLUMNS): each repeat's search replayed by
    sizing.criteria.search.replay on the recomputed verdicts, and each config's bootstrap interval over its repeats."""
    runs: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in probes:
        if row["scenario"] in searches:
            key = (row["campaign"], row["config_id"], row["scenario"], row["run_id"], row["repeat"])
            runs.setdefault(key, []).append(row)
    out = []
    for (campaign, config_id, scenario, run_id, repeat), attempts in sorted(runs.items()):
        attempts = sorted(attempts, key=lambda r: r["phase"])
        # attempts the generator fell behind in were re-run (the GX gate checks they were indeed not valid)
        rows = [r for r in attempts if not r.get("probe_inconclusive")]
        spec = searches[scenario]
        result = replay(spec, tuple(_outcome(r) for r in rows))
        # A probe counted although the generator fell behind in it (its re-runs ran out) failed for the generator,
        # not the broker (sizing.criteria.rules.conclusive): what the search sustained is a floor, the broker's limit
        # unknown.
        status = result.status if result else REPLAY_INCOMPLETE
        if result and not all(rules.conclusive_row(r) for r in rows):
            status = GENERATOR_BOUND
        disagreeing = sum(1 for r in attempts if bool(r.get("probe_passed")) != bool(r.get("probe_online_passed")))
        sustainable = result.sustainable_rate if result else None
        at_sustainable = [r for r in rows if sustainable is not None and r["target_rate"] == sustainable
                          and r.get("probe_passed")]
        out.append({"campaign": campaign, "config_id": config_id, "scenario": scenario, "run_id": run_id,
                    "repeat": int(repeat), "status": status,
                    "sustainable_rate": sustainable, "last_pass": result.last_pass if result else None,
                    "first_fail": result.first_fail if result else None, "probes_used": len(rows),
                    "inconclusive_attempts": len(attempts) - len(rows),
                    "worst_case_probes": spec.worst_case_probes(),
                    "p99_at_sustainable_ms": result.p99_at_sustainable_ms if result else None,
                    "bottleneck_at_sustainable": at_sustainable[-1].get("bottleneck") if at_sustainable else None,
                    "probes_disagreeing": disagreeing, "verdicts_agree": disagreeing == 0})
    by_config: dict[tuple[str, str], list[float]] = {}
    for row in out:
        if row["sustainable_rate"] is not None:
            by_config.setdefault((row["config_id"], row["scenario"]), []).append(row["sustainable_rate"])
    for row in out:
        values = by_config.get((row["config_id"], row["scenario"]), [])
        interval = median_interval(values) if values else None
        with_interval = interval is not None and interval.has_interval
        row.update(repeats=len(values), sustainable_median=interval.estimate if interval else None,
                   sustainable_ci_low=interval.low if with_interval else None,
                   sustainable_ci_high=interval.high if with_interval else None,
                   sustainable_ci_level=interval.level if with_interval else None)
    return out


def add_search_ranks(board: list[dict[str, Any]], capacity: Sequence[dict[str, Any]],
                     plans: Sequence[ConfigPlan]) -> list[dict[str, Any]]:
    """The leaderboard's search columns (records.LEADERBOARD_SEARCH_COLUMNS): each config's sustainable rate (the
    highest median over its search scenarios), cost per 1000 msg/s at it, and both ranks. Without search rows
    they stay null and the order is unchanged; with them the board is ordered by cost at the sustainable rate, and
    a config whose sustainable rate reaches the campaign target has met it (cost and rank at target follow)."""
    cost = {p.config_id: p.monthly_cost for p in plans}
    rates: dict[str, float] = {}
    for row in capacity:
        if row["sustainable_median"] is not None:
            rates[row["config_id"]] = max(rates.get(row["config_id"], 0.0), row["sustainable_median"])
    per_1k = {k: cost_per_1000_msgs(cost[k], v) for k, v in rates.items() if k in cost and v > 0}
    at_sustainable, by_rate = _ranks(dict(per_1k)), _ranks(dict(rates), descending=True)
    for row in board:
        key = row["config_id"]
        row.update(sustainable_rate=rates.get(key), cost_per_1k_at_sustainable=per_1k.get(key),
                   rank_at_sustainable=at_sustainable.get(key), sustainable_rank=by_rate.get(key))
        # A search that sustained the campaign target within the SLO met it, as a matched ladder step does.
        target = row["campaign_target_rate"]
        if not row["met_target"] and key in per_1k and rates[key] >= target:
            row.update(met_target=True, cost_per_1k_at_target=cost_per_1000_msgs(cost[key], target))
    if not rates:
        return board
    at_target = _ranks({r["config_id"]: r["cost_per_1k_at_target"] for r in board})
    for row in board:
        row["rank_at_target"] = at_target.get(row["config_id"])
    return sorted(board, key=lambda r: (r["rank_at_sustainable"] is None, r["rank_at_sustainable"] or 0,
                                        r["config_id"]))


def search_capacity(spark: SparkSession, phase_summary: DataFrame, campaign: Campaign) -> list[dict[str, Any]]:
    searches = {s.name: s.search for s in campaign.scenarios if s.search is not None}
    if not searches:
        return []
    probes = phase_summary.filter(F.col("scenario").isin(list(searches))).select(*PROBE_COLUMNS).collect()
    return capacity_rows([r.asDict() for r in probes], searches)


# ------------------------------------------------------------------------------------------------ job


def scenarios_of(campaign: Campaign, kind: str) -> list[str]:
    return [s.name for s in campaign.scenarios if rules.scenario_kind(s) == kind]


def build(spark: SparkSession, phase_summary: DataFrame, campaign: Campaign,
          run_id: str | None = None, raw: Mapping[str, Sequence[dict[str, Any]]] | None = None
          ) -> dict[str, DataFrame]:
    """The campaign tables (TABLES) of one run from its phase_summary rows and the spec (`run_id`: the run's label;
    default the one run the rows hold). `raw`: the upgrade table's raw rows (version_comparison_raw)."""
    if run_id is None:
        runs = sorted({r["run_id"] for r in phase_summary.select("run_id").distinct().collect()})
        if len(runs) > 1:
            raise ValueError(f"the campaign tables are computed per run; these rows hold runs {', '.join(runs)}")
        run_id = runs[0] if runs else ""
    phase_summary = phase_summary.filter(rules_columns.judged_group())  # issue 14: background groups are not ranked
    per_repeat = capacity_repeats(phase_summary, scenarios_of(campaign, rules.CAPACITY)).cache()
    capacity = {r["config_id"]: r.asDict() for r in config_capacity(per_repeat).collect()}
    plans = plan_configs(campaign)
    board = rank_configs(capacity, plans, campaign.workload.queues.type, campaign.target.rate,
                         campaign.catalog.currency, run_id)
    searched = search_capacity(spark, phase_summary, campaign)
    board = add_search_ranks(board, searched, plans)
    leaderboards = spark.createDataFrame(board, records.table_ddl("leaderboards"))
    pareto_columns = records.table_columns("pareto")
    pareto = spark.createDataFrame([{k: r[k] for k in pareto_columns} for r in board if r["pareto"]],
                                   records.table_ddl("pareto"))
    adverse_rows = _of_run(adverse_verdicts(phase_summary, campaign), run_id)
    adverse_table = spark.createDataFrame(adverse_rows, records.table_ddl("adverse"))
    recommendation_table = spark.createDataFrame(
        _of_run(recommendation_rows(phase_summary, board, adverse_rows, campaign), run_id),
        records.table_ddl("recommendation"))
    capacity_table = spark.createDataFrame(searched, records.table_ddl("capacity"))
    findings_table = spark.createDataFrame(_of_run(campaign_findings(phase_summary, campaign), run_id),
                                           records.table_ddl("findings"))
    intervals = spark.createDataFrame(_of_run(repeat_intervals(phase_summary, campaign), run_id),
                                      records.table_ddl("repeat_intervals"))
    board_table = spark.createDataFrame(_of_run(board_intervals(per_repeat, board, campaign), run_id),
                                        records.table_ddl("board_intervals"))
    upgrade_table = spark.createDataFrame(_of_run(version_comparison(phase_summary, searched, campaign, raw or {}),
                                                  run_id), records.table_ddl("upgrade"))
    return {"capacity_repeats": per_repeat, "leaderboards": leaderboards, "pareto": pareto, "adverse": adverse_table,
            "recommendation": recommendation_table, "capacity": capacity_table, "findings": findings_table,
            "repeat_intervals": intervals, "board_intervals": board_table, "upgrade": upgrade_table}


def _of_run(rows: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [{**row, "run_id": run_id} for row in rows]


def run(spark: SparkSession, spec: StoreSpec, campaign: Campaign, run_id: str) -> dict[str, DataFrame]:
    """The run's campaign tables from its phase_summary rows (every config's), written into the run's partitions."""
    # Every table (and the driver-side cost and search steps) reads phase_summary: read it once.
    summary = read_table(spark, spec, "phase_summary", campaign.name, run_id=run_id).cache()
    tables = build(spark, summary, campaign, run_id, version_comparison_raw(spec, campaign, run_id))
    for name, frame in tables.items():
        replace_table(frame, spec, name, campaign.name, [run_id])
    summary.unpersist()
    return tables


def step(spark: SparkSession, spec: StoreSpec, campaign: Campaign, run_id: str, validate: bool = False,
         docs_dir: str | None = None) -> None:
    """The analysis job's last step for one run: every campaign table from the run's phase_summary partitions.
    With `validate`, GX checks the written tables (and the run's `runs` row) and files the result under the run."""
    tables = run(spark, spec, campaign, run_id)
    where = spec.uri(layout.TABLES_ROOT)
    print(f"leaderboards: wrote {', '.join(tables)} for {campaign.name} run {run_id} under {where}", flush=True)
    if validate:
        gate.gate(spec, "leaderboards", campaign, [gate.CAMPAIGN_WIDE], [run_id], docs_dir)
