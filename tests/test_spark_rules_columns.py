"""The judgement rules evaluate the same on plain values (sizing.criteria.rules) and as Spark Columns (rules_columns).

One definition of each predicate serves both; this checks the Spark side adds only null handling, against
the plain-value evaluation of the very same function on every row of a grid of cases (and known answers).
"""

from __future__ import annotations

import itertools

import pytest

from sizing.criteria import rules
from spark_jobs.lib import rules_columns

pytestmark = pytest.mark.spark

SLO = 1000.0
DDL = ("target_rate DOUBLE, confirm_rate DOUBLE, consume_rate DOUBLE, e2e_p99_ms DOUBLE, slo_p99_ms DOUBLE, "
       "valid BOOLEAN, matched_target BOOLEAN, lost BIGINT, workers INT, worker_cpu_max DOUBLE, "
       "worker_behind_events BIGINT")


def test_column_rules_agree_with_the_plain_value_rules(spark):
    rows = []
    for confirm, consume, p99, valid, lost, cpu in itertools.product(
            (950.0, 980.0, 1000.0), (979.0, 990.0), (500.0, 1000.0, 1000.5), (True, False), (0, 2), (0.5, 0.95)):
        matched = bool(rules.matched_target(confirm, consume, 1000.0, p99, SLO))
        rows.append({"target_rate": 1000.0, "confirm_rate": confirm, "consume_rate": consume, "e2e_p99_ms": p99,
                     "slo_p99_ms": SLO, "valid": valid, "matched_target": matched, "lost": lost, "workers": 2,
                     "worker_cpu_max": cpu, "worker_behind_events": 0})
    frame = spark.createDataFrame(rows, DDL).select(
        "*", rules_columns.matched_target(rules_columns.F.col("slo_p99_ms")).alias("m"),
        rules_columns.counts_toward_capacity().alias("counts"),
        rules_columns.carried().alias("carried"), rules_columns.invalid_reason().alias("reason"))
    got = frame.collect()
    assert len(got) == len(rows) == 144
    for r in got:
        assert r["m"] == r["matched_target"]
        assert r["counts"] == bool(rules.counts_toward_capacity(r["valid"], r["e2e_p99_ms"], SLO))
        assert r["carried"] == rules.carried_rate(r["confirm_rate"], r["consume_rate"])
        assert r["reason"] == ("loadgen_cpu_saturated" if rules.cpu_saturated(r["worker_cpu_max"]) else None)
    # Known answers: 98 % of 1000 is the bar, the SLO bound is inclusive, an invalid phase never counts.
    assert rules.matched_target(980.0, 980.0, 1000.0, 1000.0, SLO) and not rules.matched_target(
        979.0, 990.0, 1000.0, 500.0, SLO)
    assert rules.counts_toward_capacity(True, 1000.0, SLO) and not rules.counts_toward_capacity(True, 1000.5, SLO)
    assert not rules.counts_toward_capacity(False, 900.0, SLO)
    assert sum(r["counts"] for r in got) == 48  # valid (72 rows) x p99 within the SLO (2 of 3)


def test_missing_figures_never_pass(spark):
    row = {"target_rate": 1000.0, "confirm_rate": 1000.0, "consume_rate": 1000.0, "e2e_p99_ms": None,
           "slo_p99_ms": SLO, "valid": None, "matched_target": None, "lost": None, "workers": None,
           "worker_cpu_max": None, "worker_behind_events": 3}
    r = spark.createDataFrame([row], DDL).select(
        rules_columns.matched_target(rules_columns.F.col("slo_p99_ms")).alias("m"),
        rules_columns.counts_toward_capacity().alias("counts"),
        rules_columns.invalid_reason().alias("reason")).collect()[0]
    assert (r["m"], r["counts"]) == (False, False)
    assert r["reason"] == "no_client_records,loadgen_behind"


def test_the_analysis_and_the_online_search_share_one_validity_rule(spark):
    """invalid_reason (Spark) and sizing.criteria.rules.phase_valid (the capacity search, on plain values) decide alike
    on every combination of missing records, a saturated worker and worker_behind events."""
    rows = [{"workers": workers, "worker_cpu_max": cpu, "worker_behind_events": behind}
            for workers in (None, 2) for cpu in (0.5, 0.95, None) for behind in (0, 1, None)]
    ddl = "workers INT, worker_cpu_max DOUBLE, worker_behind_events BIGINT"
    got = spark.createDataFrame(rows, ddl).select("*", rules_columns.invalid_reason().alias("reason")).collect()
    for r in got:
        plain = rules.phase_valid(r["workers"] is None, r["worker_cpu_max"] or 0.0, r["worker_behind_events"] or 0)
        assert (r["reason"] is None) == plain, r
