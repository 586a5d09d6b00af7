"""The sizing_campaign DAG: parses fast and clean, has the expected structure and parameters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PARSE_SCRIPT = r"""
import json, sys, time
import airflow.sdk  # already loaded in a DAG processor
from airflow.dag_processing.dagbag import DagBag
# Not boto3: Airflow normalises the s3:// Asset URIs with the amazon provider's handler, which imports its S3Hook.
HEAVY = ("pyspark", "pandas", "pyarrow", "great_expectations", "pika")
before = {m for m in HEAVY if m in sys.modules}
t0 = time.process_time()
bag = DagBag(dag_folder=sys.argv[1])
cpu = time.process_time() - t0
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": {k: str(v) for k, v in bag.import_errors.items()},
                  "cpu_s": cpu, "heavy_imported": sorted(m for m in HEAVY if m in sys.modules and m not in before)}))
"""


def test_dag_folder_parses_without_errors_in_under_a_second():
    out = subprocess.run([sys.executable, "-c", PARSE_SCRIPT, str(REPO / "dags")], check=True,
                         capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    assert "sizing_campaign" in result["dags"]
    # Parse cost of the whole folder (CPU time, so a busy machine does not make it flaky).
    assert result["cpu_s"] < 1.0, result
    # Nothing heavy comes in with the DAG file (sys.modules before and after the parse is the witness).
    assert result["heavy_imported"] == [], result


@pytest.fixture(scope="module")
def dag():
    from dags.sizing_campaign import DAG

    return DAG


def test_task_structure(dag):
    ids = set(dag.task_ids)
    assert {"validate_spec", "plan_trials", "cluster.wait_for_slot", "cluster.terraform_apply",
            "cluster.wait_healthy", "cluster.run_scenarios", "cluster.upload", "cluster.terraform_destroy",
            "analysis_inputs", "analysis", "report"} <= ids
    apply, destroy = dag.get_task("cluster.terraform_apply"), dag.get_task("cluster.terraform_destroy")
    assert apply.is_setup and destroy.is_teardown and destroy.on_failure_fail_dagrun
    assert "cluster.terraform_apply" in destroy.upstream_task_ids
    # The work happens between setup and teardown; nothing depends on the spec being valid except via validate.
    assert dag.get_task("cluster.run_scenarios").upstream_task_ids >= {"cluster.wait_healthy"}
    assert dag.get_task("cluster.upload").downstream_task_ids == {"cluster.terraform_destroy", "analysis_inputs"}
    assert dag.get_task("plan_trials").upstream_task_ids == {"validate_spec"}
    # The cluster group is mapped over the planned trials (config x repeat), each instance labelled by its cluster.
    group = dag.task_group_dict["cluster"]
    assert type(group).__name__ == "MappedTaskGroup"
    for task_id in ("wait_for_slot", "terraform_apply", "wait_healthy", "run_scenarios", "upload", "terraform_destroy"):
        task = dag.get_task(f"cluster.{task_id}")
        template = getattr(task, "map_index_template", None) or task.partial_kwargs.get("map_index_template")
        assert template in ("{{ task.trial.cluster_key }}", "{{ trial_label }}"), task_id  # rendered: e2e test
    # Spark work is one SparkSubmitOperator (the provider's, which the task's own subclass prepares on its worker:
    # py-files zip, executors' interpreter, credentials): every config's phase_summary, then the leaderboards.
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    analysis = dag.get_task("analysis")
    assert type(analysis).__name__ == "AnalysisSubmitOperator" and isinstance(analysis, SparkSubmitOperator)
    assert {"run", "configs", "py_files", "properties_file"} <= set(analysis.template_fields)
    assert analysis.application.endswith("/spark_jobs/jobs/analysis.py")
    assert dag.get_task("analysis_inputs").trigger_rule == "all_done"  # a failed config does not abandon the rest
    assert analysis.upstream_task_ids == {"analysis_inputs", "validate_spec"}  # configs, and the run (its spec)
    assert {a.name for a in analysis.outlets} == {"sizing_phase_summary", "sizing_leaderboards", "sizing_validation"}
    assert dag.get_task("report").upstream_task_ids >= {"analysis", "validate_spec"}
    # Airflow judges a run by its leaves (teardowns aside): the last one fails the run for any failed trial.
    leaves = {t.task_id for t in dag.tasks if not t.downstream_task_ids and not t.is_teardown}
    assert leaves == {"trials_succeeded"}
    assert dag.get_task("trials_succeeded").upstream_task_ids == {"report"}


def test_analysis_inputs_after_a_refused_spec_says_nothing_was_planned(dag):
    """It runs all_done, so also when validate_spec refused the campaign and plan_trials never ran (its trials are
    None): the demo's summary showed a TypeError as its reason."""
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match="no trials were planned"):
        dag.get_task("analysis_inputs").python_callable(run={}, trials=None)


def test_outlets_are_assets(dag):
    names = {a.name for t in dag.tasks for a in (t.outlets or [])}
    assert {"sizing_raw_runs", "sizing_phase_summary", "sizing_leaderboards", "sizing_validation",
            "sizing_report"} <= names


def test_the_report_task_links_to_its_report(dag):
    """The UI reads a task's links from the serialized DAG ({name: XCom key}); the URL is test_report_link's."""
    from airflow.serialization.serialized_objects import DagSerialization
    from rabbit_sizing.links import ReportLink

    report = dag.get_task("report")
    assert type(report).__name__ == "ReportOperator" and report.template_fields == ("run",)
    assert {a.name for a in report.outlets} == {"sizing_report"}
    encoded = DagSerialization.serialize_dag(dag)
    (task,) = [t["__var"] for t in encoded["tasks"] if t["__var"]["task_id"] == "report"]
    assert task["_operator_extra_links"] == {ReportLink.name: "_link_ReportLink"}


def test_params_are_typed(dag):
    """The DAG takes exactly the params of the one contract (sizing.planning.runparams: the CLI's options and the core's
    checks come from it; tests/test_run_params.py holds those to it), with its defaults, schemas and descriptions."""
    from sizing.planning.runparams import RUN_PARAMS

    params = dag.params
    assert {name: (params.get_param(name).value, params.get_param(name).schema, params.get_param(name).description)
            for name in params} == {p.name: (p.default, p.schema(), p.description) for p in RUN_PARAMS}
    assert params["campaign"] == "campaigns/local-quick.yaml"
    assert params["configs"] == [] and params["scenarios"] == []
    assert params["max_parallel_configs"] is None
    from airflow.sdk.definitions.param import ParamValidationError

    with pytest.raises(ParamValidationError):
        params.get_param("run_label").resolve("bad/label")
    with pytest.raises(ParamValidationError):
        params.get_param("max_parallel_configs").resolve(0)
    with pytest.raises(ParamValidationError):
        params.get_param("configs").resolve("n1-c5.2xlarge-gp2")  # must be a list
    # issue 24: an optional baseline run label; the report then opens with the comparison
    assert params["baseline_run"] is None and params.get_param("baseline_run").resolve("r0") == "r0"
    with pytest.raises(ParamValidationError):
        params.get_param("baseline_run").resolve("bad/label")


def test_the_analysis_job_summarises_every_complete_config_and_runs_the_gx_suites(tmp_path, monkeypatch):
    from rabbit_sizing.spark import analysis_args

    from adapters.statepaths import state_paths
    from spark_jobs.jobs.analysis import parse_args

    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path))
    # The run names validate_spec's copy (on whichever worker ran it); the job reads this worker's.
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "local-quick.yaml").write_text((REPO / "campaigns" / "local-quick.yaml").read_text())
    run = {"spec_path": "/elsewhere/specs/local-quick.yaml", "campaign": "local-quick", "run_label": "r1"}
    args = analysis_args(run, ["n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"])
    assert args[:10] == ["--spec", str(state_paths().specs / "local-quick.yaml"), "--campaign", "local-quick",
                         "--config", "n1-c5.2xlarge-gp2", "--config", "n3-c5.2xlarge-gp2", "--run-id", "r1"]
    parsed = parse_args(args)  # the job's own parser reads them as meant
    assert parsed.configs == ["n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"] and parsed.run_ids == ["r1"]
    assert parsed.validate and parsed.docs_dir and parsed.baseline_run is None
    # a run with a baseline records it in its runs row (the analysis' --baseline-run)
    compared = parse_args(analysis_args({**run, "baseline_run": "r0"}, ["n1-c5.2xlarge-gp2"]))
    assert compared.baseline_run == "r0" and compared.run_ids == ["r1"]


def test_airflows_plugin_scan_executes_none_of_our_modules_so_loadgen_stays_a_package():
    """Airflow executes every .py file in its plugins folder as a top-level module named by its stem, so without
    plugins/.airflowignore `operators/loadgen.py` became sys.modules['loadgen']. Independent counter: Airflow's own
    scan over the folder, then what `loadgen` is after Airflow's plugin manager loaded the folder."""
    from airflow._shared.module_loading import find_path_from_directory
    from airflow._shared.plugins_manager.plugins_manager import _load_plugins_from_plugin_directory

    import loadgen

    plugins = Path(__file__).resolve().parents[1] / "plugins"
    scanned = [p for p in find_path_from_directory(str(plugins), ".airflowignore", "glob") if p.endswith(".py")]
    assert scanned == []
    assert sorted(p.name for p in plugins.rglob("loadgen.py"))  # the file that clobbered the package still exists
    _load_plugins_from_plugin_directory(str(plugins))
    assert sys.modules["loadgen"] is loadgen and hasattr(loadgen, "__path__")
