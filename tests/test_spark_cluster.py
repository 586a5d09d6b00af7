"""The analysis on a real Spark standalone cluster (issue 23, item 1).

A master and a 2-core worker from pyspark's own launcher (`spark-class ...Master` / `...Worker`), in a clean
environment and working directory (tests/fixtures/sparkcluster.py): the worker's Python cannot import the checkout
and has no AWS_* credentials. The analysis is submitted the way the DAG's `analysis` task submits it (its
operator, AnalysisSubmitOperator, with the DAG's Spark settings) through a Spark connection, once to local[2] and
once to `spark://127.0.0.1:24550`, on the same synthetic campaign in the same bucket.

Acceptance: every table both runs write is identical, every row and every column. Independent witnesses: the
master's own record of the application (it ran there, on the worker's 2 cores), fresh table objects from the
second run, and the secret key nowhere in the task log, the daemons' logs or the executors' output.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from adapters.objectstore import StoreSpec
from adapters.planning import write_resolved_spec
from sizing.campaign import load_campaign
from spark_jobs.tools.synthetic import campaign_models, run_objects, write_objects
from tests.fixtures.sparkcluster import MASTER_PORT

pytestmark = [pytest.mark.distributed, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "tests" / "fixtures" / "report-sample.yaml"  # local-quick with 500/1000/2000 steps
RUN_ID = "cluster-accept"
CONFIGS = ["n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"]


def table_rows(store) -> dict[str, tuple[pa.Schema, list[str], set[str]]]:
    """Every table of the campaign: (schema, its rows as exact reprs sorted, the object keys read)."""
    out: dict[str, tuple[pa.Schema, list[str], set[str]]] = {}
    keys = [k for k in store.list("tables/") if "campaign=local-quick/" in k]
    by_table: dict[str, list[str]] = {}
    for key in keys:
        by_table.setdefault(key.split("/")[1], []).append(key)
    for table, parts in sorted(by_table.items()):
        data = pa.concat_tables([store.read_parquet(k) for k in parts], promote_options="default")
        # The runs row says when the analysis wrote it: the one figure two analyses of one run must not share.
        rows = sorted(repr(tuple(v for k, v in row.items() if k != "analysed_at")) for row in data.to_pylist())
        out[table] = (data.schema, rows, set(parts))
    return out


def test_the_worker_cannot_import_the_checkout(spark_standalone):
    import sys

    executor_python = spark_standalone.python
    assert not spark_standalone.python_can_import(executor_python, "sizing")
    assert not spark_standalone.python_can_import(executor_python, "spark_jobs")
    assert spark_standalone.python_can_import(executor_python, "pyarrow")  # the analysis' dependencies are there
    assert spark_standalone.python_can_import(sys.executable, "sizing")  # the probe can tell: this one can
    env = spark_standalone.environment()
    assert not any(k.startswith("AWS_") or k == "PYTHONPATH" for k in env)


@pytest.mark.slow
def test_local_and_standalone_analyses_write_identical_tables(spark_standalone, s3, tmp_path, monkeypatch, capsys):
    from rabbit_sizing.operators.analysis import AnalysisSubmitOperator

    from dags.sizing_campaign import DAG

    secret = f"secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "cluster-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)  # moto takes any; executors without it could not sign
    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", '{"conn_type": "spark", "host": "local[2]"}')
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE",
                       f'{{"conn_type": "spark", "host": "spark://127.0.0.1", "port": {MASTER_PORT}}}')
    store = StoreSpec.from_env().open()
    for scenario in ("increasing-intensity", "broker-kill"):
        for model in campaign_models(str(SPEC), RUN_ID, scenario, 20, 2, CONFIGS):
            write_objects(store, run_objects(model))
    campaign = load_campaign(SPEC)
    spec_path = write_resolved_spec(campaign, tmp_path / "state" / "specs")
    run = {"spec_path": str(spec_path), "campaign": campaign.name, "run_label": RUN_ID}
    dag_task = DAG.get_task("analysis")  # the DAG's own Spark settings and driver environment

    def analyse(conn_id: str) -> dict[str, tuple[pa.Schema, list[str], set[str]]]:
        # The executors run the cluster's interpreter, which has the libraries but not the project.
        conf = {**dag_task.conf, "spark.pyspark.python": spark_standalone.python}
        task = AnalysisSubmitOperator(task_id=f"analysis_{conn_id}", conn_id=conn_id, run=run, configs=CONFIGS,
                                      conf=conf, env_vars=dict(dag_task.env_vars))
        task.execute({})
        return table_rows(store)

    before = len(spark_standalone.applications())
    local = analyse("spark_local")
    standalone = analyse("spark_standalone")
    task_log = capsys.readouterr().out  # Airflow's task logging (and spark-submit's output through it)

    # It ran on the cluster: the master recorded one more application, finished, given the worker's 2 cores.
    apps = spark_standalone.applications()
    assert len(apps) == before + 1
    assert apps[-1]["name"] == "analysis local-quick" and apps[-1]["state"] == "FINISHED" and apps[-1]["cores"] == 2
    assert f"spark master spark://127.0.0.1:{MASTER_PORT}" in task_log and "in a properties file" in task_log

    assert {"phase_summary", "capacity_repeats", "leaderboards", "pareto", "adverse"} <= set(local)
    assert set(local) == set(standalone)
    for table, (schema, rows, keys) in local.items():
        other_schema, other_rows, other_keys = standalone[table]
        assert rows, f"{table}: no rows"
        assert keys.isdisjoint(other_keys), f"{table}: the second run did not replace the objects"
        assert schema.equals(other_schema), table
        assert rows == other_rows, f"{table}: local[2] and the standalone cluster disagree"
    phase_rows = local["phase_summary"][1]
    assert len(phase_rows) == 2 * (3 + 1)  # 2 configs x (3 intensity phases + 1 broker-kill phase)

    # The credentials reached the executors (they read and wrote the bucket) but no log shows the secret.
    assert secret not in task_log
    for path in [*spark_standalone.log_dir.rglob("*"), *spark_standalone.worker_dir.rglob("std*")]:
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
