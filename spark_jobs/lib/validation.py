"""Great Expectations (1.24) suites for the raw batch and every derived table, and the code that runs them.

The suites are data (`SUITES`: expectation class name + arguments), version-controlled here and exported
to gx/suites/<name>.json (`python -m spark_jobs.lib.validation --export gx/suites`; a test keeps the two in sync).
Validation runs on pandas frames that the jobs prepare (the raw client rows as one check row per worker phase,
folded where they are read; node rows as read; per-run/phase frames for the cross-record rules; the tables), in an
ephemeral GX context whose checkpoint also updates a local Data Docs site (SITE_NAME, not the default `local_site`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sizing.campaign import DEPLOYMENTS  # where node figures come from: one reader per target (adapters/nodestats.py)
from sizing.contract import records
from sizing.criteria import rules
from sizing.criteria.stats import VERDICTS
from sizing.judgement import findings, repeats, upgrade
from sizing.judgement.history import RUN_STATUSES

SITE_NAME = "sizing_docs"
RUN_COLS = [c.name for c in records.RUN_KEY]
PHASE_KEY = [*RUN_COLS, "phase"]
COUNT_COLS = ["scheduled", "published", "confirmed", "nacked", "returned", "consumed", "redelivered", "acked",
              "in_flight"]
LAT_ORDER = [*records.LATENCY_QUANTILES, "max"]  # phase_summary's latency columns, in the order they must hold

Expectation = tuple[str, dict[str, Any]]
VALID_ROWS = {"row_condition": "valid==True", "condition_parser": "pandas"}  # GX 1.24: pandas-query row filter


def _not_null(columns: list[str]) -> list[Expectation]:
    return [("ExpectColumnValuesToNotBeNull", {"column": c}) for c in columns]


def _non_negative(columns: list[str]) -> list[Expectation]:
    return [("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0}) for c in columns]


def _monotonic(prefix: str) -> list[Expectation]:
    return _ordered(prefix, LAT_ORDER)


# What every raw client_seconds row must hold. The rows are checked where they are read and folded, one check row
# per worker phase (gate.client_checks): per rule, the rows that break it (`<column>_nulls`) or the least value
# (`<column>_min`: every row is >= 0 exactly when the least is), so the gate needs no second read of them.
CLIENT_NOT_NULL = [*RUN_COLS, "worker", "second", "phase", "warmup", "target_rate"]
CLIENT_NON_NEGATIVE = [*COUNT_COLS, "publish_delay_max_us", "blocked_ms", "cpu_s", "second"]
CLIENT_CHECK_KEY = [*RUN_COLS, "phase", "group", "worker"]


# The same for node_seconds, one check row per node phase (and target: the rows' targets are the key's).
NODE_NOT_NULL = [*RUN_COLS, "node", "second", "phase", "missing", "target", "shared_cores"]
NODE_NON_NEGATIVE = ["second", "cpu_busy", "cpu_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s",
                     "net_in_bytes_per_s", "net_out_bytes_per_s", "span_s"]
NODE_CHECK_KEY = [*RUN_COLS, "phase", "node", "target"]


def check_columns(key: list[str], not_null: list[str], non_negative: list[str]) -> list[str]:
    """A check frame's columns (gate.row_checks): the key, its rows, nulls and least values, seconds held twice."""
    return [*key, "rows", *(f"{c}_nulls" for c in not_null), *(f"{c}_min" for c in non_negative),
            "duplicate_seconds"]


def client_check_columns() -> list[str]:
    """The raw_client_seconds frame: one row per worker phase, what its rows break (gate.client_checks)."""
    return [*check_columns(CLIENT_CHECK_KEY, CLIENT_NOT_NULL, CLIENT_NON_NEGATIVE), "bad_histogram_rows"]


def node_check_columns() -> list[str]:
    """The raw_node_seconds frame: one row per node phase, what its rows break (gate.node_checks)."""
    return [*check_columns(NODE_CHECK_KEY, NODE_NOT_NULL, NODE_NON_NEGATIVE), "missing_with_figures"]


SERIES_QUANTILES = list(records.LATENCY_QUANTILES)

# node_series is node_seconds' own values, which the raw gate has checked row by row (NODE_NOT_NULL,
# NODE_NON_NEGATIVE): what the projection could break is the row key across phases (a boundary second written twice)
# and the target. It is validated as one check row per run, node and target (gate.node_series_checks), not row by
# row: at 10x seed scale its 10.5M rows took 26 s to read, convert and validate on pandas, most of the batch's GX.
NODE_SERIES_CHECK_KEY = [*RUN_COLS, "node", "target"]


def node_series_check_columns() -> list[str]:
    """The node_series frame: per run, node and target its rows, null seconds and the seconds its node holds twice
    in the run (under any target)."""
    return [*NODE_SERIES_CHECK_KEY, "rows", "second_nulls", "duplicate_seconds"]


def _ordered(prefix: str, names: list[str]) -> list[Expectation]:
    """`prefix`_<name>_ms never decreasing along `names` (nulls: no sample, not compared)."""
    return [("ExpectColumnPairValuesAToBeGreaterThanB",
             {"column_A": f"{prefix}_{hi}_ms", "column_B": f"{prefix}_{lo}_ms", "or_equal": True,
              "ignore_row_if": "either_value_is_missing"})
            for lo, hi in itertools.pairwise(names)]


def _held_by_every_row(columns: list[str]) -> list[Expectation]:
    """Counts of rows that break a rule (a check frame's): zero on every check row."""
    return [("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0, "max_value": 0}) for c in columns]


def _interval_holds_its_median() -> list[Expectation]:
    """An interval table's value_low <= value <= value_high, of a coverage within [0, 1]."""
    return [("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": a, "column_B": b, "or_equal": True,
                                                          "ignore_row_if": "either_value_is_missing"})
            for a, b in (("value_high", "value"), ("value", "value_low"))] + [
        ("ExpectColumnValuesToBeBetween", {"column": "value_level", "min_value": 0, "max_value": 1})]


def _suites() -> dict[str, list[Expectation]]:
    return {
        # Every worker-second row, as one check row per worker phase (CLIENT_NOT_NULL, CLIENT_NON_NEGATIVE): no
        # nulls, nothing negative, histograms of whole 6-byte buckets, no second of a worker twice in a run.
        "raw_client_seconds": [
            ("ExpectTableColumnsToMatchSet", {"column_set": client_check_columns(), "exact_match": True}),
            ("ExpectTableRowCountToBeBetween", {"min_value": 1}),
            *_held_by_every_row([f"{c}_nulls" for c in CLIENT_NOT_NULL]),
            *_non_negative([f"{c}_min" for c in CLIENT_NON_NEGATIVE]),
            # phase 0 holds the drain seconds after the timeline (consumption catching up), never a summary
            ("ExpectColumnValuesToBeBetween", {"column": "phase", "min_value": 0}),
            *_held_by_every_row(["bad_histogram_rows", "duplicate_seconds"]),
        ],
        # Every node-second row (loadgen.nodes), as one check row per node phase (NODE_NOT_NULL, NODE_NON_NEGATIVE):
        # no second of a node twice in a run, a known target, and a missing second has no figures.
        "raw_node_seconds": [
            ("ExpectTableColumnsToMatchSet", {"column_set": node_check_columns(), "exact_match": True}),
            *_held_by_every_row([f"{c}_nulls" for c in NODE_NOT_NULL]),
            *_non_negative([f"{c}_min" for c in NODE_NON_NEGATIVE]),
            ("ExpectColumnValuesToBeInSet", {"column": "target", "value_set": list(DEPLOYMENTS)}),
            *_held_by_every_row(["duplicate_seconds", "missing_with_figures"]),
        ],
        # One row per (run, expected phase): cross-record rules of the raw batch.
        "raw_run_phase": [
            ("ExpectColumnValuesToBeInSet", {"column": "in_phases_table", "value_set": [True]}),
            ("ExpectColumnValuesToBeInSet", {"column": "in_client_seconds", "value_set": [True]}),
            ("ExpectColumnValuesToBeInSet", {"column": "in_accounting", "value_set": [True]}),
            ("ExpectColumnValuesToBeBetween", {"column": "warmup_flag_errors", "min_value": 0, "max_value": 0}),
            # consumed <= published + redelivered + foreign, summed per run (repeated on each of the run's rows)
            ("ExpectColumnPairValuesAToBeGreaterThanB",
             {"column_A": "run_published_redelivered_foreign", "column_B": "run_consumed", "or_equal": True}),
            *_non_negative(["lost", "duplicates", "reordered"]),
        ],
        "phase_summary": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("phase_summary"),
                                              "exact_match": True}),
            *_not_null([*PHASE_KEY, "group", "foreground", "target_rate", "valid", "matched_target"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": [*PHASE_KEY, "group"]}),  # a row per group
            *_monotonic("e2e"), *_monotonic("confirm"),
            # every valid phase has node figures for every node of its cluster (node_seconds, issue 15)
            ("ExpectColumnValuesToNotBeNull", {"column": "cluster_nodes", **VALID_ROWS}),
            ("ExpectColumnPairValuesToBeEqual", {"column_A": "resource_nodes", "column_B": "cluster_nodes",
                                                 **VALID_ROWS}),
            ("ExpectColumnValuesToBeInSet", {"column": "bottleneck",
                                             "value_set": [*rules.BOTTLENECKS, rules.NO_BOTTLENECK]}),
            # a capacity-search probe: the generator's online verdict equals the one recomputed from this row
            ("ExpectColumnPairValuesToBeEqual", {"column_A": "probe_online_passed", "column_B": "probe_passed",
                                                 "ignore_row_if": "either_value_is_missing"}),
            # an attempt the generator called inconclusive (and re-ran) really was not valid
            ("ExpectColumnValuesToBeInSet", {"column": "valid", "value_set": [False],
                                             "row_condition": "probe_inconclusive==True",
                                             "condition_parser": "pandas"}),
            *_non_negative(["target_rate", "publish_rate", "confirm_rate", "consume_rate", "e2e_p50_ms",
                            "confirm_p50_ms", "lost", "duplicates", "reordered", "backlog_max",
                            "time_to_recover_s", "unavailable_s", "confirm_mean_ms", "publisher_window_ceiling",
                            "consumer_ceiling", "consumer_hold_mean_ms", "consumer_refill_mean_ms",
                            "prefetch_ceiling"]),
        ],
        "leaderboards": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("leaderboards"),
                                              "exact_match": True}),
            *_not_null(["campaign", "run_id", "config_id", "monthly_cost"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "config_id"]}),
            *[("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0, "strict_min": True})
              for c in ("monthly_cost", "cost_per_1k_at_top", "cost_per_1k_at_target", "top_matched_throughput")],
            *[("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 1})
              for c in ("rank_at_top", "rank_at_target", "capacity_rank")],
        ],
        "capacity_repeats": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("capacity_repeats"),
                                              "exact_match": True}),
            *_not_null(["campaign", "config_id", "run_id", "repeat", "top_throughput_any_latency"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "config_id", "run_id", "repeat"]}),
            ("ExpectColumnValuesToBeBetween", {"column": "top_matched_throughput", "min_value": 0,
                                               "strict_min": True}),
            ("ExpectColumnValuesToBeBetween", {"column": "capacity_phases", "min_value": 0}),
            # within the SLO is a subset of any latency
            ("ExpectColumnPairValuesAToBeGreaterThanB",
             {"column_A": "top_throughput_any_latency", "column_B": "top_matched_throughput", "or_equal": True,
              "ignore_row_if": "either_value_is_missing"}),
        ],
        # Capacity searches replayed from recomputed verdicts (issue 16): an online decision that disagrees
        # with the one recomputed from the raw records fails the batch.
        "capacity": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("capacity"), "exact_match": True}),
            *_not_null(["campaign", "config_id", "scenario", "run_id", "repeat", "status", "probes_used"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "config_id", "scenario", "run_id",
                                                                "repeat"]}),
            ("ExpectColumnValuesToBeInSet", {"column": "verdicts_agree", "value_set": [True]}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "worst_case_probes", "column_B": "probes_used",
                                                         "or_equal": True}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "first_fail", "column_B": "last_pass",
                                                         "ignore_row_if": "either_value_is_missing"}),
        ],
        "adverse": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("adverse"), "exact_match": True}),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "config_id", "scenario"]}),
            *_not_null(["run_id", "criterion"]),  # held: null when not judged (too few conclusive phases)
            ("ExpectColumnValuesToBeInSet", {"column": "criterion", "value_set": list(rules.ADVERSE_KINDS)}),
            *_non_negative(["lost", "duplicates", "unavailable_s", "max_time_to_recover_s", "reduced_publish_s",
                            "publishers_blocked_s", "peak_backlog_msgs", "drain_s"]),
            # a scenario that did not hold, or was not judged, says why
            ("ExpectColumnValuesToNotBeNull", {"column": "reason", "row_condition": "held!=True",
                                               "condition_parser": "pandas"}),
        ],
        # Issue 35: the per-second series (sizing.contract.records.SERIES_TABLES), one row per run and second of each
        # group, broker node or node; a second's percentiles are in order (the exact max is no bucket: not compared).
        "client_series": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("client_series"),
                                              "exact_match": True}),
            *_not_null([*RUN_COLS, "group", "second", "phase", "warmup", "workers", "offered_rate", "published",
                        "confirmed", "consumed", "e2e_samples"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": [*RUN_COLS, "group", "second"]}),
            *_non_negative(["second", "phase", "scheduled", "published", "confirmed", "consumed", "acked",
                            "e2e_samples", "blocked_ms", "publish_delay_max_ms"]),
            ("ExpectColumnValuesToBeBetween", {"column": "workers", "min_value": 1}),
            *_ordered("e2e", SERIES_QUANTILES), *_ordered("confirm", SERIES_QUANTILES),
            # a second with latency samples has its percentiles
            ("ExpectColumnValuesToNotBeNull", {"column": "e2e_p50_ms", "row_condition": "e2e_samples>0",
                                               "condition_parser": "pandas"}),
        ],
        "broker_series": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("broker_series"),
                                              "exact_match": True}),
            *_not_null([*RUN_COLS, "node", "second", "phase", "samples", "running", "mem_alarm", "disk_alarm",
                        "queue_messages"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": [*RUN_COLS, "node", "second"]}),
            *_non_negative(["queue_messages", "queue_messages_ready", "queue_messages_unacked", "mem_used_bytes",
                            "mem_share", "disk_free_bytes"]),
            ("ExpectColumnValuesToBeBetween", {"column": "samples", "min_value": 1}),
        ],
        # As check rows (NODE_SERIES_CHECK_KEY): a row per run, node and second, and a known target.
        "node_series": [
            ("ExpectTableColumnsToMatchSet", {"column_set": node_series_check_columns(), "exact_match": True}),
            *_not_null(["node", "target"]),
            *_held_by_every_row(["second_nulls", "duplicate_seconds"]),
            ("ExpectColumnValuesToBeInSet", {"column": "target", "value_set": list(DEPLOYMENTS)}),
        ],
        # The run's events as recorded; a fault's marks name the fault.
        "run_events": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("run_events"),
                                              "exact_match": True}),
            *_not_null([*RUN_COLS, "ts", "second", "phase", "kind"]),
            *_non_negative(["phase"]),
            ("ExpectColumnValuesToNotBeNull", {"column": "fault_kind", "row_condition": "kind=='fault_start'",
                                               "condition_parser": "pandas"}),
        ],
        # A sizing campaign's answer (sizing.judgement.recommendation): one row per config, at most one recommended per
        # run and RabbitMQ version, and that one meets the target and holds every required scenario.
        "recommendation": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("recommendation"),
                                              "exact_match": True}),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "config_id"]}),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "standing"]}),
            *_not_null(["run_id", "config_id", "standing", "monthly_cost", "meets_target", "invalid_phases",
                        "passes_all", "recommended"]),
            *_non_negative(["invalid_phases", "monthly_cost"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "rabbitmq_version"],
                                                 "ignore_row_if": "never", "row_condition": "recommended==True",
                                                 "condition_parser": "pandas"}),
            *_not_null(["shape_id"]),
            ("ExpectColumnValuesToBeInSet", {"column": "passes_all", "value_set": [True],
                                             "row_condition": "recommended==True", "condition_parser": "pandas"}),
            # a config that met the target has its cost there; one that did not, none
            ("ExpectColumnValuesToNotBeNull", {"column": "cost_per_1k_at_target", "row_condition": "meets_target==True",
                                               "condition_parser": "pandas"}),
        ],
        # A compare / characterise campaign's answer (sizing.judgement.findings): one row per arm, metric and baseline.
        "findings": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("findings"), "exact_match": True}),
            *_not_null(["campaign", "run_id", "kind", "config_id", "family", "phase_name", "metric", "value", "n"]),
            ("ExpectColumnValuesToBeInSet", {"column": "kind", "value_set": list(findings.KINDS)}),
            ("ExpectColumnValuesToBeInSet", {"column": "interval_basis", "value_set": list(findings.BASES)}),
            # a step row is a comparison with the previous step and always says whether its step is the knee
            *[("ExpectColumnValuesToNotBeNull", {"column": column, "row_condition": 'kind=="step"',
                                                "condition_parser": "pandas"})
              for column in ("baseline_phase_name", "effect", "knee")],
            ("ExpectColumnValuesToBeInSet", {"column": "verdict", "value_set": list(VERDICTS)}),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": [
                "campaign", "run_id", "kind", "config_id", "family", "phase_name", "metric", "baseline_config_id",
                "baseline_family", "baseline_phase_name"], "ignore_row_if": "never"}),
            ("ExpectColumnValuesToBeBetween", {"column": "value_level", "min_value": 0, "max_value": 1}),
            ("ExpectColumnValuesToBeBetween", {"column": "effect_level", "min_value": 0, "max_value": 1}),
            ("ExpectColumnValuesToBeBetween", {"column": "n", "min_value": 1}),
        ],
        # Per phase and metric, the median over repeats with its interval (sizing.judgement.repeats.phase_intervals).
        "repeat_intervals": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("repeat_intervals"),
                                              "exact_match": True}),
            *_not_null(["campaign", "run_id", "config_id", "scenario", "phase", "metric", "repeats", "valid", "n",
                        "value_level"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "config_id", "scenario",
                                                                "phase", "metric"]}),
            ("ExpectColumnValuesToBeInSet", {"column": "metric", "value_set": list(repeats.REPEAT_METRICS)}),
            ("ExpectColumnValuesToBeBetween", {"column": "repeats", "min_value": 1}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "repeats", "column_B": "n", "or_equal": True}),
            *_interval_holds_its_median(),
        ],
        # Per board and config, its figure over repeats and the comparison with the next one (sizing.judgement.repeats).
        "board_intervals": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("board_intervals"),
                                              "exact_match": True}),
            *_not_null(["campaign", "run_id", "board", "rank", "config_id", "n", "value", "value_level"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "board", "config_id"]}),
            ("ExpectColumnValuesToBeInSet", {"column": "board",
                                             "value_set": [b.name for b in repeats.BOARDS if b.per_repeat]}),
            ("ExpectColumnValuesToBeInSet", {"column": "verdict", "value_set": list(VERDICTS)}),
            *[("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 1}) for c in ("rank", "n", "n_next")],
            ("ExpectColumnValuesToBeBetween", {"column": "value", "min_value": 0, "strict_min": True}),
            ("ExpectColumnValuesToBeBetween", {"column": "effect_level", "min_value": 0, "max_value": 1}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "effect_high", "column_B": "effect_low",
                                                         "or_equal": True, "ignore_row_if": "either_value_is_missing"}),
            *_interval_holds_its_median(),
        ],
        # A version comparison's six figures per config (issue 33, sizing.judgement.upgrade): one row per config, metric
        # and scenario; a row compared with the baseline says in which direction it moved and whether that agrees with
        # the published expectation.
        "upgrade": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("upgrade"), "exact_match": True}),
            *_not_null(["campaign", "run_id", "config_id", "metric", "scenario", "unit", "value", "n", "lower_bound"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id", "config_id", "metric",
                                                                "scenario"]}),
            ("ExpectColumnValuesToBeInSet", {"column": "metric", "value_set": [m.name for m in upgrade.METRICS]}),
            ("ExpectColumnValuesToBeInSet", {"column": "direction", "value_set": list(upgrade.DIRECTIONS)}),
            ("ExpectColumnValuesToBeInSet", {"column": "expected", "value_set": [upgrade.HIGHER, upgrade.LOWER]}),
            ("ExpectColumnValuesToBeInSet", {"column": "verdict", "value_set": list(VERDICTS)}),
            ("ExpectColumnValuesToBeBetween", {"column": "n", "min_value": 1}),
            # a change is against a baseline figure; an expectation names its source (x == x: not null, NaN or None)
            *[("ExpectColumnValuesToNotBeNull", {"column": column, "row_condition": "change == change",
                                                "condition_parser": "pandas"})
              for column in ("baseline_config_id", "baseline_value", "direction")],
            ("ExpectColumnValuesToNotBeNull", {"column": "expected_source", "row_condition": "expected == expected",
                                               "condition_parser": "pandas"}),
            ("ExpectColumnValuesToBeBetween", {"column": "n_baseline", "min_value": 1}),
        ],
        # One row per run (issue 24): what ran, on what, how it ended (sizing.judgement.history).
        "runs": [
            ("ExpectTableColumnsToMatchSet", {"column_set": records.table_columns("runs"), "exact_match": True}),
            ("ExpectTableRowCountToBeBetween", {"min_value": 1}),
            *_not_null(["campaign", "run_id", "status", "spec_hash", "spec", "spark_version", "deployment",
                        "target_rate", "slo_p99_ms", "analysed_at"]),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["campaign", "run_id"]}),
            ("ExpectColumnValuesToBeInSet", {"column": "status", "value_set": list(RUN_STATUSES)}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "load_runs", "column_B": "load_runs_complete",
                                                         "or_equal": True}),
            ("ExpectColumnPairValuesAToBeGreaterThanB", {"column_A": "ended_at", "column_B": "started_at",
                                                         "or_equal": True, "ignore_row_if": "either_value_is_missing"}),
        ],
    }


SUITES: dict[str, list[Expectation]] = _suites()


def suites() -> dict[str, list[Expectation]]:
    return SUITES


def suite_json(name: str) -> dict[str, Any]:
    return {"name": f"sizing.{name}", "expectations": [{"type": t, "kwargs": k} for t, k in suites()[name]]}


@dataclass
class Outcome:
    success: bool
    results: dict[str, Any]  # suite name -> GX validation result (JSON dict)
    failures: list[str]  # "suite: ExpectX(column=...)" for every failed expectation

    def message(self) -> str:
        return "all expectations met" if self.success else "failed expectations:\n  " + "\n  ".join(self.failures)

    def document(self, batch: str, campaign: str, config_id: str, run_id: str) -> dict[str, Any]:
        """The result as stored at sizing.contract.layout.validation_key (the report reads this shape)."""
        return {"batch": batch, "campaign": campaign, "config_id": config_id, "run_id": run_id,
                "success": self.success, "failures": self.failures, "results": self.results}


def validate_frames(frames: dict[str, pd.DataFrame], docs_dir: str | Path | None = None,
                    result_format: str = "SUMMARY") -> Outcome:
    """Validate each frame against the suite of the same name in one ephemeral GX context. `result_format`: GX's
    (the checkpoint's default, SUMMARY, counts and lists unexpected values; BOOLEAN_ONLY only decides, in about
    half the time on a million rows: for a verdict that is re-run in full when it fails)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)  # job logs, not a terminal
    if docs_dir is not None:
        ctx.add_data_docs_site(SITE_NAME, {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
    source = ctx.data_sources.add_pandas("sizing")
    results: dict[str, Any] = {}
    failures: list[str] = []
    stored = []  # the results' keys in the context's store, for the Data Docs built once below
    for name, frame in frames.items():
        suite = ctx.suites.add(gx.ExpectationSuite(name=f"sizing.{name}"))
        for kind, kwargs in suites()[name]:
            suite.add_expectation(getattr(gx.expectations, kind)(**kwargs))
        batch_def = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe("whole")
        definition = ctx.validation_definitions.add(gx.ValidationDefinition(name=f"v.{name}", data=batch_def,
                                                                            suite=suite))
        checkpoint = ctx.checkpoints.add(gx.Checkpoint(name=f"c.{name}", validation_definitions=[definition],
                                                       result_format=result_format))
        run = checkpoint.run(batch_parameters={"dataframe": frame})
        stored += run.run_results.keys()
        for result in run.run_results.values():
            results[name] = result.to_json_dict()
            for r in result.results:
                if not r.success:
                    cfg = r.expectation_config
                    args = ", ".join(f"{k}={v!r}" for k, v in cfg.kwargs.items()
                                     if k in ("column", "column_A", "column_B", "column_list", "value_set"))
                    failures.append(f"{name}: {cfg.type}({args})")
    if docs_dir is not None:
        # Once for every frame: a checkpoint's UpdateDataDocsAction renders the site (and compiles its templates)
        # per result, ~0.5 s each.
        ctx.build_data_docs(site_names=[SITE_NAME], resource_identifiers=stored, dry_run=False, build_index=True)
    return Outcome(not failures, results, failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="validation", description="export the GX suites as JSON")
    parser.add_argument("--export", required=True, help="directory for <suite>.json")
    args = parser.parse_args(argv)
    out = Path(args.export)
    out.mkdir(parents=True, exist_ok=True)
    for name in suites():
        (out / f"{name}.json").write_text(json.dumps(suite_json(name), indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(suites())} suites to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
