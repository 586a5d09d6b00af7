"""One declaration per schema and per list (issue 47, item 3): each is declared in one home, and every other place
derives it or imports it. Pure: reads the source, imports Spark's modules without a session."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sizing.contract import records

ROOT = Path(__file__).resolve().parent.parent


def sources(*packages: str) -> dict[str, str]:
    """Path (relative to the repository) -> text of every Python module of these packages."""
    return {str(path.relative_to(ROOT)): path.read_text() for package in packages
            for path in sorted((ROOT / package).rglob("*.py"))}


def test_the_run_key_ddl_is_derived_from_the_run_key_columns_and_spelled_nowhere() -> None:
    from spark_jobs.lib import phase_summary

    assert records.columns_ddl(records.RUN_KEY) == phase_summary.RUN_KEY_DDL
    assert [c.name for c in records.RUN_KEY] == ["campaign", "config_id", "scenario", "run_id", "repeat"]
    # A DDL string that types a run key column by hand (`campaign STRING`, `repeat INT`) re-declares it.
    by_hand = re.compile(r"\b(campaign|config_id|scenario|run_id)`?\s+STRING\b|\brepeat`?\s+INT\b")
    spelled = {path: match.group(0) for path, text in sources("spark_jobs", "sizing", "app").items()
               for match in [by_hand.search(text)] if match}
    assert spelled == {}


SPARK_TYPE = re.compile(r"\b\w+`?\s+(STRING|INT|BIGINT|DOUBLE|BOOLEAN|BINARY)\b")


def test_phase_summarys_fold_schemas_are_declared_as_columns_and_their_ddl_derived() -> None:
    from spark_jobs.lib import phase_summary

    declared = {name.removesuffix("_COLUMNS"): value for name, value in vars(phase_summary).items()
                if name.endswith("_COLUMNS") and isinstance(value, tuple)}
    for name in ("PARTIAL", "CLIENT", "DYNAMICS", "RESOURCE_LIMITS", "NODE_PARTIAL", "PER_NODE"):
        assert all(isinstance(c, records.Column) for c in declared[name]), name
        assert records.columns_ddl(declared[name]) == getattr(phase_summary, f"{name}_DDL"), name
    assert phase_summary.SERIES_DDL.startswith(records.columns_ddl(phase_summary.SERIES_COLUMNS))
    # The folds that yield phase_summary's own columns yield them as phase_summary declares them.
    summary = {c.name: c for c in records.PHASE_SUMMARY}
    for c in [*phase_summary.CLIENT_COLUMNS, *phase_summary.DYNAMICS_COLUMNS]:
        assert c in (summary[c.name], *records.RUN_KEY)
    # No string of the package's modules types a column by hand (`name DOUBLE`): each schema has its one declaration.
    modules = sources("spark_jobs/lib/phase_summary")
    assert len(modules) > 5  # the package, one module per table and the folds, not a stale path
    spelled = [node.value for text in modules.values() for node in ast.walk(ast.parse(text))
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and SPARK_TYPE.search(node.value)]
    assert spelled == []


def test_one_metric_type_declared_in_sizing_stats() -> None:
    """The findings', the comparison's and the upgrade's metrics are one type: a figure's name, words, unit and
    better direction (the comparison's absolute threshold optional)."""
    from sizing.criteria import stats
    from sizing.judgement import comparison, findings, upgrade

    assert findings.Metric is comparison.Metric is upgrade.Metric is stats.Metric
    declared = [path for path, text in sources("sizing", "spark_jobs", "app", "loadgen", "adapters").items()
                for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef) and node.name == "Metric"]
    assert declared == ["sizing/criteria/stats.py"]


def spelled_quantile_lists(text: str) -> int:
    """How often a text spells the latency percentile list p50, p75, p95, p99, p999 (as names, `e2e_<q>_ms` columns
    or a name -> quantile mapping)."""
    bare = re.sub(r"""["'()\[\]{}]|e2e_|confirm_|_ms\b|:0\.\d+""", "", re.sub(r"\s", "", text))
    return bare.count("p50,p75,p95,p99,p999")


def test_one_latency_quantile_list_declared_in_sizing_records() -> None:
    """sizing.contract.records.LATENCY_QUANTILES is the one list; every other place imports it. Lists that mean
    something else stay: SPREAD_QUANTILES (the percentiles with a spread), a chart's panels (p50/p75 | p95/p99/p99.9)
    and a table showing a few (p50, p95, p99)."""
    from app.report import tables
    from spark_jobs.lib import histmerge, series, validation

    assert records.LATENCY_QUANTILES == {"p50": 0.50, "p75": 0.75, "p95": 0.95, "p99": 0.99, "p999": 0.999}
    assert histmerge.QUANTILES is records.LATENCY_QUANTILES and series.QUANTILES is records.LATENCY_QUANTILES
    assert validation.SERIES_QUANTILES == tables.SERIES_QUANTILES == list(records.LATENCY_QUANTILES)
    assert set(records.SPREAD_QUANTILES) < set(records.LATENCY_QUANTILES)
    spelled = {path: n for path, text in sources("sizing", "spark_jobs", "app", "loadgen", "adapters").items()
               if (n := spelled_quantile_lists(text))}
    assert spelled == {"sizing/contract/records.py": 1}
