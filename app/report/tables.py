"""The one place the report reads data (edge module): Spark tables (the per-second series and the run's events
too) and GX results; never a raw record (issue 35).

Everything the report knows about the analysis tables' column names is in this module. When the
Spark jobs rename a column, change the constants / RENAMES here and nothing else.

Layout (sizing.contract.layout; a report reads its own run's partitions, issue 24):
    tables/phase_summary/campaign=C/config=K/run=R/part-*.parquet   one row per config x scenario x repeat x phase
    tables/leaderboards/campaign=C/run=R/part-*.parquet       one row per config (wide; see board_views)
    tables/repeat_intervals/campaign=C/run=R/part-*.parquet   per config x scenario x phase x metric: median, interval
    tables/board_intervals/campaign=C/run=R/part-*.parquet    per board x config: median, interval, vs the next config
    tables/pareto/campaign=C/run=R/part-*.parquet             optional
    tables/capacity/campaign=C/run=R/part-*.parquet           capacity searches, one row per config x repeat
    tables/runs/campaign=C/run=R/part-*.parquet               the run's record (versions, spec, baseline)
    tables/upgrade/campaign=C/run=R/part-*.parquet            a version comparison: per config x metric, vs baseline
    tables/recommendation/campaign=C/run=R/part-*.parquet     a sizing campaign's answer: per config its standing
    tables/{client,broker,node}_series/campaign=C/config=K/run=R/part-*.parquet   per second: per group, broker
        node, node (issue 35: the charts' series; the report merges no histogram and sums no worker)
    tables/run_events/campaign=C/config=K/run=R/part-*.parquet   the run's events: fault and phase marks
    validation/<batch>/campaign=C/config=K/run=R/result.json
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field

import pandas as pd

from adapters.objectstore import S3Settings
from sizing.contract import layout, records
from sizing.contract.records import DEFAULT_GROUP
from sizing.criteria.rules import judged_group
from sizing.judgement.repeats import BOARD_COST_AT_TARGET as BOARD_COST_AT_TARGET
from sizing.judgement.repeats import BOARD_COST_AT_TOP as BOARD_COST_AT_TOP
from sizing.judgement.repeats import BOARD_MATCHED_TARGET as BOARD_MATCHED_TARGET
from sizing.judgement.repeats import BOARD_TOP_MATCHED, PHASE_KEY, REPEAT_METRICS, board_entries
from sizing.judgement.repeats import BOARDS as BOARD_SPECS

# ----------------------------------------------------------------------------------------- contract
# The tables' schemas are sizing.contract.records.TABLES (one definition, written by the Spark jobs). The lists
# below are the subset the report needs (a test checks that each name is a column of its table there).

PHASE_SUMMARY = "phase_summary"
LEADERBOARDS = "leaderboards"
REPEAT_INTERVALS = "repeat_intervals"
BOARD_INTERVALS = "board_intervals"
ADVERSE = "adverse"
PARETO = "pareto"
CAPACITY = "capacity"
FINDINGS = "findings"
UPGRADE = "upgrade"
RECOMMENDATION = "recommendation"

RUN_KEYS = ["campaign", "config_id", "scenario", "run_id", "repeat"]

# Columns of phase_summary the report relies on (must be present).
PHASE_SUMMARY_REQUIRED = [
    *RUN_KEYS, "phase", "phase_name", "target_rate",
    "confirm_rate",  # confirmed / steady_s: the achieved publish rate, msg/s
    "consume_rate",  # deliveries / steady_s, msg/s
    *(f"e2e_{q}_ms" for q in records.LATENCY_QUANTILES),
    "valid",  # the load generator kept up
]
# Used when present; the report says "n/a" (or makes no claim) otherwise.
PHASE_SUMMARY_OPTIONAL: dict[str, object] = {
    # sizing.criteria.rules.matched_target: confirm and consume rate >= 98% of target, p99 <= SLO
    "matched_target": None,
    "slo_p99_ms": float("nan"),
    "invalid_reason": None,
    "e2e_max_ms": float("nan"),
    "backlog_max": float("nan"),
    "lost": 0, "duplicates": 0,
    "faults": 0,
    "time_to_recover_s": float("nan"),  # longest time back to within 5% of the pre-fault rate
    "recovered": None,
    "worst_dip_ratio": float("nan"),
    "broker_queue_max": float("nan"), "broker_mem_max_bytes": float("nan"),
    "broker_mem_max_fraction": float("nan"), "broker_alarm": None, "broker_node_down_seen": None,
    # node resources and the bottleneck label (sizing.criteria.rules.bottleneck, computed by phase_summary)
    "bottleneck": None, "bottleneck_detail": None, "cpu_busiest_mean": float("nan"),
    "cpu_busiest_p95": float("nan"), "machine_cpu_busy_mean": float("nan"), "disk_write_mb_s": float("nan"),
    "disk_write_iops": float("nan"), "disk_write_kb_per_op": float("nan"),  # seed 000 Figs 7/9: write size
    "net_mb_s": float("nan"), "net_peak_mbit_s": float("nan"),
    "rate_mode": "scheduled", "latency_basis": "intended",  # issue 13; tables written before it are scheduled
    # capacity-search probes (issue 16): start, recomputed verdict, stage and the generator's bracket after it
    "start_s": float("nan"), "probe_passed": None, "probe_stage": None, "probe_inconclusive": None,
    "probe_last_pass": float("nan"),
    "probe_first_fail": float("nan"),
    # issue 14: one row per workload group per phase; tables written before groups have their one group
    "group": DEFAULT_GROUP, "foreground": True, "group_detail": None,
}

# leaderboards: one row per config (wide); the report turns it into the seed's four boards.
LEADERBOARD_REQUIRED = ["config_id", "monthly_cost", "top_matched_throughput", "capacity_rank", "cost_per_1k_at_top",
                        "rank_at_top", "cost_per_1k_at_target", "rank_at_target"]
LEADERBOARD_OPTIONAL: dict[str, object] = {"max_matched_target_rate": float("nan"), "met_target": None,
                                           "campaign_target_rate": float("nan"), "pareto": None}
# repeat_intervals: per config x scenario (as written) x phase x metric, the median over repeats with its interval.
REPEAT_INTERVALS_REQUIRED = ["config_id", "scenario", "phase", "phase_name", "target_rate", "metric", "repeats",
                             "valid", "n", "value", "value_low", "value_high", "value_level"]
# board_intervals: per board x config, its figure over repeats and the comparison with the next-ranked config.
BOARD_INTERVALS_REQUIRED = ["board", "rank", "config_id", "n", "value", "value_low", "value_high", "value_level",
                            "next_config_id", "n_next", "effect", "effect_low", "effect_high", "effect_level",
                            "verdict"]
# capacity: one row per config x search scenario x run x repeat (the search replayed by the leaderboards step).
CAPACITY_REQUIRED = ["config_id", "scenario", "run_id", "repeat", "status", "sustainable_rate", "last_pass",
                     "first_fail", "probes_used", "worst_case_probes", "p99_at_sustainable_ms", "verdicts_agree"]
CAPACITY_OPTIONAL: dict[str, object] = {"bottleneck_at_sustainable": None, "repeats": 1, "inconclusive_attempts": 0,
                                        "sustainable_median": float("nan"), "sustainable_ci_low": float("nan"),
                                        "sustainable_ci_high": float("nan"), "sustainable_ci_level": float("nan")}
# adverse: one row per config x adverse scenario: did it hold by its criterion (sizing.judgement.adverse).
ADVERSE_REQUIRED = ["config_id", "scenario", "criterion", "held"]
ADVERSE_OPTIONAL: dict[str, object] = {"reason": None, "phases_judged": None, "phases_held": None,
                                       "worst_dip_ratio": float("nan"), "max_time_to_recover_s": float("nan"),
                                       "unavailable_s": float("nan"), "reduced_publish_s": float("nan"),
                                       "publish_tolerance_s": 0.0, "publishers_blocked_s": float("nan"),
                                       "peak_backlog_msgs": None, "peak_memory_share": float("nan"),
                                       "drained": None, "drain_s": float("nan"), "lost": 0,
                                       "nodes_down": None, "max_whole_after_heal_s": float("nan"),
                                       "max_e2e_p99_ms": float("nan")}

# findings: a compare / characterise campaign's answer (sizing.judgement.findings), every column of the table.
FINDINGS_REQUIRED = ["kind", "config_id", "family", "phase_name", "metric", "value", "n", "value_level"]
# upgrade: a version comparison (sizing.judgement.upgrade): per config, metric and scenario its median, the change
# against the baseline version and the published expectation.
UPGRADE_REQUIRED = ["config_id", "rabbitmq_version", "metric", "scenario", "unit", "value", "n", "lower_bound",
                    "baseline_config_id",
                    "baseline_version", "baseline_value", "change", "direction", "verdict", "better", "expected",
                    "expected_source", "agrees"]

# recommendation: a sizing campaign's answer (sizing.judgement.recommendation.ConfigVerdict.from_row reads every
# column).
RECOMMENDATION_REQUIRED = records.table_columns(RECOMMENDATION)

BOARDS = tuple(b.name for b in BOARD_SPECS)  # sizing.judgement.repeats: what each board shows and how it is ranked
BOARD_COLUMNS = ["board", "rank", "config_id", "value", "rate", "monthly_cost"]

# Renames from other spellings to the names above (applied before the checks).
RENAMES: dict[str, dict[str, str]] = {
    PHASE_SUMMARY: {"config": "config_id"},
    LEADERBOARDS: {"config": "config_id"},
    ADVERSE: {"config": "config_id"},
}

CLIENT_SERIES = "client_series"
BROKER_SERIES = "broker_series"
RUN_EVENTS = "run_events"
NODE_SERIES = "node_series"
SERIES_QUANTILES = list(records.LATENCY_QUANTILES)
# Columns of the series tables the charts read (sizing.contract.records.CLIENT_SERIES, BROKER_SERIES, NODE_SERIES,
# RUN_EVENTS).
CLIENT_SERIES_COLUMNS = ["scenario", "repeat", "group", "second", "phase", "warmup", "offered_rate", "published",
                         "confirmed", "consumed",
                         "e2e_max_ms",  # the exact worst latency of each second (client-setting charts)
                         *(f"e2e_{q}_ms" for q in SERIES_QUANTILES)]
EVENTS_COLUMNS = ["scenario", "repeat", "second", "phase", "kind", "fault_id", "fault_kind", "node"]
NODE_SERIES_COLUMNS = ["scenario", "repeat", "second", "phase", "node", "missing", "cpu_busy", "net_in_bytes_per_s",
                       "net_out_bytes_per_s", "client_in_bytes_per_s", "client_out_bytes_per_s",
                       "disk_write_bytes_per_s", "disk_write_ops_per_s"]
BROKER_SERIES_COLUMNS = ["scenario", "repeat", "second", "phase", "node", "running", "mem_used_bytes",
                         "mem_limit_bytes", "mem_share", "mem_alarm", "disk_alarm", "queue_messages"]


class SchemaError(ValueError):
    pass


def conform(df: pd.DataFrame, table: str, required: list[str], optional: dict[str, object]) -> pd.DataFrame:
    """Rename known aliases, fail on missing required columns, add missing optional ones with defaults."""
    df = df.rename(columns={k: v for k, v in RENAMES.get(table, {}).items() if k in df.columns})
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise SchemaError(f"table {table} lacks column(s) {', '.join(missing)} (has: {', '.join(df.columns)})")
    for name, default in optional.items():
        if name not in df.columns:
            df[name] = default
    return df


INTERVAL_FIGURES = ["value", "value_low", "value_high", "value_level", "effect", "effect_low", "effect_high",
                    "effect_level", "n_next"]


def numbers(intervals: pd.DataFrame) -> pd.DataFrame:
    """An interval table with its figures as floats (a null is NaN, whatever type a writer gave an all-null column)."""
    return intervals.astype({c: float for c in INTERVAL_FIGURES if c in intervals.columns})


def board_views(wide: pd.DataFrame, target_rate: float) -> pd.DataFrame:
    """The wide leaderboards table as long rows (board, rank, config_id, value, rate, monthly_cost): the boards as
    sizing.judgement.repeats.board_entries ranks them (the leaderboards step's ranks; board_intervals follows the same
    order); configs without a figure on a board are left off it."""
    return pd.DataFrame(board_entries(wide.to_dict("records"), target_rate), columns=BOARD_COLUMNS)


INTERVAL_PARTS = {"value": "", "value_low": "_low", "value_high": "_high"}  # repeat_intervals column -> suffix


def phase_interval_view(long: pd.DataFrame) -> pd.DataFrame:
    """The repeat_intervals rows (one per phase and metric) as one row per (config_id, scenario, phase), as the
    sections show them: phase_name, target_rate, `n` (the phase's repeats), `valid`, and per metric M of
    sizing.judgement.repeats.REPEAT_METRICS the columns M, M_low, M_high (NaN: no figure, or no interval). A reshape:
    every figure is the table's."""
    key = list(PHASE_KEY)
    columns = [*key, "phase_name", "target_rate", "n", "valid",
               *(f"{m}{suffix}" for m in REPEAT_METRICS for suffix in INTERVAL_PARTS.values())]
    if long.empty:
        return pd.DataFrame(columns=columns)
    figures = numbers(long).set_index([*key, "metric"])[list(INTERVAL_PARTS)]
    figures = figures.unstack("metric")
    out = long.groupby(key, sort=True)[["phase_name", "target_rate", "repeats", "valid"]].first()
    out = out.rename(columns={"repeats": "n"}).astype({"n": int, "valid": bool})
    for metric in REPEAT_METRICS:
        for part, suffix in INTERVAL_PARTS.items():
            out[f"{metric}{suffix}"] = figures[(part, metric)] if (part, metric) in figures.columns else math.nan
    return out.reset_index()[columns]


def single_repeat_view(summary: pd.DataFrame) -> pd.DataFrame:
    """For a run whose tables predate repeat_intervals: the phases that ran once, as phase_interval_view shows them
    (each figure is its one phase_summary row's; no interval). Phases with several repeats are left out: their
    medians are the table's to give."""
    key = list(PHASE_KEY)
    once = summary[summary.groupby(key)["repeat"].transform("size") == 1] if not summary.empty else summary
    out = once.assign(n=1)
    for metric in REPEAT_METRICS:
        if metric not in out.columns:
            out[metric] = math.nan
        out[f"{metric}_low"] = math.nan
        out[f"{metric}_high"] = math.nan
    return out[phase_interval_view(pd.DataFrame()).columns].sort_values(key).reset_index(drop=True)


# --------------------------------------------------------------------------------------------- data


@dataclass
class ValidationResult:
    batch: str
    config_id: str
    run_id: str
    success: bool
    evaluated: int | None
    successful: int | None
    failed: list[str] = field(default_factory=list)
    key: str = ""


@dataclass
class ReportData:
    campaign: str
    phase_summary: pd.DataFrame
    leaderboards: pd.DataFrame  # long form: BOARD_COLUMNS (see board_views)
    adverse: pd.DataFrame | None  # per config x adverse scenario, None when the table is absent
    pareto: pd.DataFrame | None
    # per (config_id, scenario, run_id), every repeat, for the time-series charts: client_series rows (of the
    # foreground groups), run_events rows (phase and fault marks), broker_series rows
    client_series: dict[tuple[str, str, str], pd.DataFrame]
    events: dict[tuple[str, str, str], pd.DataFrame]
    broker_series: dict[tuple[str, str, str], pd.DataFrame]
    validations: list[ValidationResult]
    # per (config_id, scenario, run_id): node_series of the top and bottom config's intensity runs (Figs 6-9)
    node_series: dict[tuple[str, str, str], pd.DataFrame] = field(default_factory=dict)
    # issue 14: phase_summary rows of every workload group (`phase_summary` above holds the foreground's only)
    group_summary: pd.DataFrame | None = None
    capacity: pd.DataFrame | None = None  # CAPACITY_REQUIRED; None when the campaign ran no search
    findings: pd.DataFrame | None = None  # a compare / characterise campaign's answer; None for a sizing campaign
    # seed 000 Figs 26-31: one cluster shape on each volume type at the campaign target; per config the per-second
    # end-to-end latency percentiles of its target phase (first repeat; client_series: latency_seconds)
    at_target: dict[str, pd.DataFrame] = field(default_factory=dict)
    # per config: throughput per second (confirmed, consumed) in its capacity phase at the target (seed 000 Fig 10)
    rates_at_target: dict[str, pd.DataFrame] = field(default_factory=dict)
    # the leaderboards step's figures over repeats (REPEAT_INTERVALS_REQUIRED, BOARD_INTERVALS_REQUIRED); None when
    # the run's tables predate them (the report then shows no interval rather than computing one)
    repeat_intervals: pd.DataFrame | None = None
    board_intervals: pd.DataFrame | None = None
    upgrade: pd.DataFrame | None = None  # UPGRADE_REQUIRED; None unless the campaign compares RabbitMQ versions
    # RECOMMENDATION_REQUIRED, one row per config; None for a compare or characterise campaign, or a run analysed
    # before the table existed (the verdict then says so rather than deciding the size itself)
    recommendation: pd.DataFrame | None = None


# ------------------------------------------------------------------------------------------ reading


class TableReader:
    """Reads the campaign's tables and raw series from one bucket through the object-store client + pyarrow."""

    def __init__(self, settings: S3Settings) -> None:
        self.settings = settings
        self.store = settings.store()

    def keys(self, prefix: str) -> list[str]:
        return self.store.list(prefix)

    def get(self, key: str) -> bytes:
        return self.store.get(key)

    def parquet(self, prefix: str, columns: list[str] | None = None, run_id: str | None = None
                ) -> pd.DataFrame | None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        frames = []
        keys = self.keys(prefix)
        for key in layout.of_run(keys, run_id) if run_id is not None else keys:
            if not key.endswith(".parquet"):
                continue
            table = pq.read_table(io.BytesIO(self.get(key)))
            if columns is not None:
                table = table.select([c for c in columns if c in table.column_names])
            frames.append(table)
        if not frames:
            return None
        return pa.concat_tables(frames, promote_options="default").to_pandas()

    def read_table(self, table: str, campaign: str, config_id: str | None = None, run_id: str | None = None
                   ) -> pd.DataFrame | None:
        """A derived table's rows (of one config, of one run: None = all)."""
        return self.parquet(layout.table_prefix(table, campaign, config_id), run_id=run_id)

    def validations(self, campaign: str, run_id: str | None = None) -> list[ValidationResult]:
        results = []
        for key in self.keys(layout.VALIDATION_ROOT):
            where = layout.validation_of(key)
            if where is None or where.campaign != campaign or (run_id is not None and where.run_id != run_id):
                continue
            results.append(parse_validation(json.loads(self.get(key)), where.batch, where.config_id, where.run_id,
                                            key))
        return results


def parse_validation(doc: dict, batch: str, config_id: str, run_id: str, key: str = "") -> ValidationResult:
    """A stored validation result (spark_jobs.lib.validation.Outcome.document): the verdict, the failed
    expectations as "suite: ExpectX(...)", and one GX 1.x suite result per validated frame."""
    suites = (doc.get("results") or {}).values()
    stats = [r.get("statistics") or {} for r in suites]
    return ValidationResult(batch, config_id, run_id, bool(doc.get("success", False)),
                            sum(s.get("evaluated_expectations", 0) for s in stats),
                            sum(s.get("successful_expectations", 0) for s in stats), list(doc.get("failures") or []),
                            key)


def top_and_bottom(boards: pd.DataFrame) -> list[str]:
    """The configs seed 000 shows server metrics for: the top and the bottom of the top-throughput board."""
    board = boards[boards["board"] == BOARD_TOP_MATCHED].sort_values("rank")
    ids = list(board["config_id"])
    return list(dict.fromkeys([ids[0], ids[-1]])) if ids else []


def latency_seconds(client: pd.DataFrame) -> pd.DataFrame:
    """Per second, end-to-end latency percentiles in ms, as client_series gives them (the analysis merged every
    worker's histogram of the second); seconds without a sample are left out. One workload group's rows: the
    percentiles of two groups cannot be merged here."""
    rows = client.dropna(subset=["e2e_p50_ms"]).sort_values("second")
    out = rows[["second", *(f"e2e_{q}_ms" for q in SERIES_QUANTILES)]]
    out.columns = ["second", *SERIES_QUANTILES]
    return out.astype({"second": int}).reset_index(drop=True)


def throughput_seconds(client: pd.DataFrame) -> pd.DataFrame:
    """Per second, the totals over the rows' groups: confirmed (what the broker accepted) and consumed, msg/s."""
    totals = client.groupby("second", sort=True)[["confirmed", "consumed"]].sum()
    return totals.reset_index().astype({"second": int})


def target_runs(summary: pd.DataFrame, configs: list[str], target_rate: float,
                capacity_scenarios: list[str]) -> dict[str, tuple[str, str, int, int]]:
    """Per config, the capacity run and phase offered the campaign target (scenario, run, first repeat, phase)."""
    rows = summary[summary["config_id"].isin(configs) & summary["scenario"].isin(capacity_scenarios)
                   & (summary["target_rate"] == target_rate)]
    out = {}
    for config_id, part in rows.sort_values(["repeat", "run_id"]).groupby("config_id", sort=False):
        first = part.iloc[0]
        out[str(config_id)] = (str(first["scenario"]), str(first["run_id"]), int(first["repeat"]), int(first["phase"]))
    return out


def load_report_data(settings: S3Settings, campaign: str, config_ids: list[str],
                     time_series_scenarios: list[str], target_rate: float,
                     resource_scenarios: list[str] | None = None,
                     resource_configs: list[str] | None = None,
                     volume_siblings: dict[str, list[str]] | None = None,
                     run_id: str | None = None) -> ReportData:
    """Everything the report shows, for the configs of the campaign (missing configs simply have no rows), of run
    `run_id` (None: every stored run's rows)."""
    reader = TableReader(settings)
    frames = [f for c in config_ids if (f := reader.read_table(PHASE_SUMMARY, campaign, c, run_id)) is not None]
    if not frames:
        run = f" run {run_id}" if run_id is not None else ""
        raise FileNotFoundError(f"no {PHASE_SUMMARY} rows{run} under "
                                f"{layout.s3_uri(settings.bucket, layout.table_prefix(PHASE_SUMMARY, campaign))} "
                                f"for configs {', '.join(config_ids)}")
    summary = conform(pd.concat(frames, ignore_index=True), PHASE_SUMMARY, PHASE_SUMMARY_REQUIRED,
                      PHASE_SUMMARY_OPTIONAL)
    everything, summary = foreground_split(summary)
    wide = reader.read_table(LEADERBOARDS, campaign, run_id=run_id)
    wide = conform(wide if wide is not None else pd.DataFrame(columns=LEADERBOARD_REQUIRED), LEADERBOARDS,
                   LEADERBOARD_REQUIRED, LEADERBOARD_OPTIONAL)
    def intervals(table: str, required: list[str]) -> pd.DataFrame | None:
        frame = reader.read_table(table, campaign, run_id=run_id)
        return numbers(conform(frame, table, required, {})) if frame is not None else None

    adverse = reader.read_table(ADVERSE, campaign, run_id=run_id)
    if adverse is not None:
        adverse = conform(adverse, ADVERSE, ADVERSE_REQUIRED, ADVERSE_OPTIONAL)
    pareto = reader.read_table(PARETO, campaign, run_id=run_id)
    series = SeriesTables(reader, campaign)
    client, events, broker = {}, {}, {}
    # each stored run's key; its run is `its_run`, never `run_id`, the run asked for, which every read below
    # (and the `intervals` closure) still needs
    keys: list[tuple[str, str, str]] = list(
        summary[["config_id", "scenario", "run_id"]].drop_duplicates().itertuples(index=False, name=None))
    for key in keys:
        scenario = key[1]
        if scenario in time_series_scenarios:
            client[key] = foreground_seconds(series.of(CLIENT_SERIES, key), everything, key)
            events[key] = series.of(RUN_EVENTS, key)
        broker[key] = series.of(BROKER_SERIES, key)
    boards = board_views(wide, target_rate)
    nodes = {}
    wanted = set(resource_configs if resource_configs is not None else top_and_bottom(boards))
    for config_id, scenario, its_run in keys:
        if config_id in wanted and scenario in (resource_scenarios or []):
            nodes[(config_id, scenario, its_run)] = series.of(NODE_SERIES, (config_id, scenario, its_run))
    capacity = reader.read_table(CAPACITY, campaign, run_id=run_id)
    if capacity is not None:
        capacity = conform(capacity, CAPACITY, CAPACITY_REQUIRED, CAPACITY_OPTIONAL)
    at_target, rates_at_target = {}, {}
    # a campaign whose capacity is all capacity searches has no top-matched board to take a top config from
    ranked = top_and_bottom(boards) if len(boards) else []
    siblings = (volume_siblings or {}).get(ranked[0], []) if ranked else []
    # Every config's capacity phase at the target (seed 000 Figs 10/18/25: throughput per second at the target); for
    # the top cluster's shape on every volume type also its latency per second (Figs 26-31).
    for config_id, (scenario, its_run, repeat, phase) in target_runs(summary, config_ids, target_rate,
                                                                     resource_scenarios or []).items():
        seconds = series.of(CLIENT_SERIES, (config_id, scenario, its_run))
        if seconds is None:
            continue
        steady = seconds[(seconds["repeat"] == repeat) & (seconds["phase"] == phase) & ~seconds["warmup"]]
        rates_at_target[config_id] = throughput_seconds(steady)
        if len(siblings) > 1 and config_id in siblings and steady["group"].nunique() == 1:
            at_target[config_id] = latency_seconds(steady)
    upgrade = reader.read_table(UPGRADE, campaign, run_id=run_id)
    if upgrade is not None:
        upgrade = conform(upgrade, UPGRADE, UPGRADE_REQUIRED, {}).astype({"value": float, "baseline_value": float,
                                                                          "change": float})
    recommendation = reader.read_table(RECOMMENDATION, campaign, run_id=run_id)
    if recommendation is not None:
        recommendation = conform(recommendation, RECOMMENDATION, RECOMMENDATION_REQUIRED, {}).sort_values("standing")
    findings = reader.read_table(FINDINGS, campaign, run_id=run_id)
    if findings is not None:
        findings = conform(findings, FINDINGS, FINDINGS_REQUIRED, {c: None for c in records.table_columns(FINDINGS)})
    return ReportData(campaign, summary, boards, adverse, pareto, client, events,
                      broker, reader.validations(campaign, run_id), node_series=nodes, group_summary=everything,
                      capacity=capacity, findings=findings, at_target=at_target, rates_at_target=rates_at_target,
                      repeat_intervals=intervals(REPEAT_INTERVALS, REPEAT_INTERVALS_REQUIRED),
                      board_intervals=intervals(BOARD_INTERVALS, BOARD_INTERVALS_REQUIRED), upgrade=upgrade,
                      recommendation=recommendation)


class SeriesTables:
    """The series tables of one campaign, each (table, config, run) partition read once for all its scenarios."""

    COLUMNS = {CLIENT_SERIES: CLIENT_SERIES_COLUMNS, BROKER_SERIES: BROKER_SERIES_COLUMNS,
               NODE_SERIES: NODE_SERIES_COLUMNS, RUN_EVENTS: EVENTS_COLUMNS}

    def __init__(self, reader: TableReader, campaign: str) -> None:
        self.reader, self.campaign = reader, campaign
        self.partitions: dict[tuple[str, str, str], pd.DataFrame | None] = {}

    def of(self, table: str, key: tuple[str, str, str]) -> pd.DataFrame | None:
        """One (config_id, scenario, run_id)'s rows of a series table, every repeat (None: no rows)."""
        config_id, scenario, run_id = key
        if (table, config_id, run_id) not in self.partitions:
            self.partitions[(table, config_id, run_id)] = self.reader.parquet(
                layout.table_prefix(table, self.campaign, config_id, run_id), self.COLUMNS[table])
        rows = self.partitions[(table, config_id, run_id)]
        if rows is None:
            return None
        rows = rows[rows["scenario"] == scenario].drop(columns="scenario").reset_index(drop=True)
        return rows if len(rows) else None


def foreground_split(summary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every group's rows, and the foreground's (what every verdict, table and chart of the report reads)."""
    summary = summary.assign(group=summary["group"].fillna(DEFAULT_GROUP),
                             foreground=summary["foreground"].astype("boolean").fillna(True).astype(bool))
    judged = summary[judged_group(summary["foreground"])].reset_index(drop=True)
    return summary, judged


def foreground_seconds(client: pd.DataFrame | None, summary: pd.DataFrame, key: tuple[str, str, str]
                       ) -> pd.DataFrame | None:
    """A run's client_series rows of its foreground groups only."""
    if client is None:
        return client
    rows = summary[(summary["config_id"] == key[0]) & (summary["scenario"] == key[1]) & (summary["run_id"] == key[2])]
    names = set(rows.loc[rows["foreground"], "group"])
    return client[client["group"].isin(names)].reset_index(drop=True)
