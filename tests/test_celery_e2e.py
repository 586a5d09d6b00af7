"""sizing_campaign on CeleryExecutor with two workers (issue 23, items 2 and 3), end to end.

The stack (tests/fixtures/celery_stack.py): PostgreSQL as the metadata DB, a RabbitMQ vhost as Celery's broker,
api-server + scheduler + dag-processor, and two Celery workers with state directories, log folders and names of
their own. The campaign runs on the `existing` target: a RabbitMQ node this test started (Terraform local stack,
slot 70) stands in for a cluster someone else runs; its credentials are an Airflow connection's (a user made for
the campaign, allowed on its vhost only). The analysis goes to the Spark standalone cluster
(tests/fixtures/sparkcluster.py) through the `spark_default` connection.

Witnesses: the task instances' hostnames (Airflow's own record of which worker ran each task), the broker's vhost
before and after, the lease objects in the bucket, the Spark master's application list, the tables and report.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from adapters.airflowapi import AirflowClient, AirflowLogin
from adapters.management import ManagementClient
from adapters.objectstore import StoreSpec
from tests.fixtures.celery_stack import WORKERS, CeleryStack, Postgres
from tests.fixtures.cluster import busy_ports

pytestmark = [pytest.mark.distributed, pytest.mark.airflow, pytest.mark.cluster, pytest.mark.spark,
              pytest.mark.slow]

DAG_ID = "sizing_campaign"
SLOT_OFFSET = 100  # ci-tiny's trial slots, clear of the other end-to-end tests' 30-39 (they may run beside it)
BROKER_SLOT = 70  # the RabbitMQ node: Celery's broker (vhost celery) and the campaign's existing cluster
CONFIG = "n1-c5.2xlarge-gp2"
QUEUES = ("celery-e2e-1", "celery-e2e-2")


def campaign_yaml(amqp_port: int, management_port: int, prometheus_port: int) -> str:
    return f"""
name: celery-existing
description: the Celery end-to-end test's campaign, on an existing cluster
deployment: existing
catalog: aws-us-east-1-2020
target: {{rate: 300, p99_latency_ms: 1000}}
existing:
  connection: rabbitmq_existing
  vhost: sizing
  monthly_cost: 99.0
  nodes: [{{amqp: "127.0.0.1:{amqp_port}", management: "127.0.0.1:{management_port}",
           prometheus_port: {prometheus_port}}}]
workload:
  queues: {{count: 2, name_pattern: "celery-e2e-{{n}}", type: classic, durable: true}}
  message: {{size_bytes: 256, persistent: true}}
  publishers: {{count: 2, confirms_in_flight: 100, random_start_delay_s: 0.5}}
  consumers: {{count: 2, prefetch: 100, multi_ack_every: 10, processing_ms: 0}}
clusters:
  list: [{{nodes: 1, instance_type: c5.2xlarge, volume: gp2}}]
scenarios:
  - name: steps
    warmup_s: 1
    steps: {{rates: [200, 400], duration_s: 6}}
"""


def _put(client: ManagementClient, path: str, body: dict) -> None:
    client.request("PUT", path, body)


@pytest.fixture(scope="module")
def broker(local_cluster_factory):
    """One node: vhost `celery` for Celery, vhost `sizing` for the campaign, and the campaign's own user."""
    cluster = local_cluster_factory(slot=BROKER_SLOT, nodes=1).cluster
    admin = ManagementClient(cluster, timeout_s=10)
    password = secrets.token_hex(12)
    for vhost in ("celery", "sizing"):
        _put(admin, f"/api/vhosts/{vhost}", {})
    _put(admin, "/api/users/sizing", {"password": password, "tags": "monitoring"})  # health: /api/nodes
    _put(admin, "/api/permissions/celery/guest", {"configure": ".*", "write": ".*", "read": ".*"})
    _put(admin, "/api/permissions/sizing/sizing", {"configure": ".*", "write": ".*", "read": ".*"})
    return cluster, password


@pytest.fixture(scope="module")
def stack(tmp_path_factory, broker, s3_endpoint, spark_standalone):
    cluster, password = broker
    node = cluster.node(1)
    root = tmp_path_factory.mktemp("celery-stack")
    postgres = Postgres().start()
    bucket = "celery-e2e"
    store_spec = StoreSpec("s3", bucket, s3_endpoint, "us-east-1")
    from adapters.objectstore import S3Settings

    S3Settings(bucket=bucket, endpoint_url=s3_endpoint).ensure_bucket()
    extra = {
        "SIZING_S3_ENDPOINT": s3_endpoint, "SIZING_S3_BUCKET": bucket, "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "SIZING_SLOT_OFFSET": str(SLOT_OFFSET),
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({"conn_type": "aws", "login": "testing", "password": "testing",
                                                "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "spark://127.0.0.1",
                                                  "port": spark_standalone.master_port}),
        "SIZING_SPARK_PYTHON": spark_standalone.python,  # the cluster's interpreter: libraries, not the project
        "AIRFLOW_CONN_RABBITMQ_EXISTING": json.dumps({"conn_type": "generic", "login": "sizing",
                                                      "password": password}),
    }
    celery = CeleryStack(root / "airflow-stack", postgres.url,
                         f"amqp://guest:guest@127.0.0.1:{node.amqp_port}/celery", extra)
    try:
        celery.start()
        client = AirflowClient(AirflowLogin(celery.api_url, celery.user, celery.password))
        deadline = time.monotonic() + 180
        while not client.dag_exists(DAG_ID):
            assert time.monotonic() < deadline, f"DAG not parsed: {client.get('/importErrors')}"
            time.sleep(2)
        client.unpause(DAG_ID)
        yield celery, client, cluster, store_spec.open()
    finally:
        celery.stop()
        postgres.stop()


def failed_logs(celery: CeleryStack, run_id: str, tis: list[dict], lines: int = 12) -> str:
    """Every failed task's last log events and its exception, from the worker that ran it (assertion messages)."""
    failed = {t["task_id"] for t in tis if t["state"] == "failed"}
    out = []
    for worker in WORKERS:
        for path, text in celery.task_logs(worker).items():
            if f"run_id={run_id}" not in path or not any(f"task_id={task}/" in path for task in failed):
                continue
            events = []
            for line in text.splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    events.append(line)
                    continue
                events.append(str(entry.get("event", "")))
                events += [f"{d.get('exc_type')}: {d.get('exc_value')}" for d in entry.get("error_detail") or []]
            out.append(f"--- {worker}: {path}\n" + "\n".join(events[-lines:]))
    return "\n".join(out)


def wait(client: AirflowClient, run_id: str, timeout_s: float) -> tuple[dict, list[dict]]:
    deadline = time.monotonic() + timeout_s
    while True:
        run = client.run(DAG_ID, run_id)
        if run["state"] in ("success", "failed"):
            return run, client.task_instances(DAG_ID, run_id)
        assert time.monotonic() < deadline, f"run {run_id} still {run['state']} after {timeout_s:.0f}s"
        time.sleep(3)


def test_the_local_target_is_refused_on_celery_before_anything_starts(stack):
    celery, client, _, _ = stack
    run_id = client.trigger(DAG_ID, {"campaign": "campaigns/ci-tiny.yaml", "run_label": "refused"})
    run, tis = wait(client, run_id, 180)
    states = {t["task_id"]: t["state"] for t in tis}
    assert run["state"] == "failed" and states["validate_spec"] == "failed"
    assert states.get("plan_trials") in ("upstream_failed", None)
    logs = "".join(text for w in WORKERS for path, text in celery.task_logs(w).items()
                   if f"run_id={run_id}" in path and "validate_spec" in path)
    assert "runs its clusters as processes of one host" in logs and "CeleryExecutor" in logs
    assert busy_ports(21000 + 50 * SLOT_OFFSET) == []  # ci-tiny's first cluster was never started


def test_a_campaign_on_an_existing_cluster_runs_across_both_workers(stack, spark_standalone):
    celery, client, cluster, store = stack
    node = cluster.node(1)
    apps_before = len(spark_standalone.applications())
    conf = {"campaign": campaign_yaml(node.amqp_port, node.management_port, node.prometheus_port),
            "run_label": "celery"}
    run_id = client.trigger(DAG_ID, conf)
    run, tis = wait(client, run_id, 900)
    summary = {f"{t['task_id']}[{t.get('map_index', -1)}]": (t["state"], t.get("hostname")) for t in tis}
    assert run["state"] == "success", f"{summary}\n{failed_logs(celery, run_id, tis)}"

    # Tasks of one trial ran on both workers (Airflow's record), and the run's tasks on nothing else.
    trial = {t["task_id"]: t["hostname"] for t in tis if t["task_id"].startswith("cluster.")}
    assert len(trial) == 6, summary
    assert set(trial.values()) == set(WORKERS), summary
    assert {t["hostname"] for t in tis} <= set(WORKERS)

    # The analysis ran on the Spark standalone cluster, submitted from a Celery worker.
    apps = spark_standalone.applications()
    assert len(apps) == apps_before + 1 and apps[-1]["state"] == "FINISHED"

    # The existing cluster is up and as it was: the campaign's queues are gone from its vhost, Celery's remain.
    admin = ManagementClient(cluster, timeout_s=10)
    assert admin.health().healthy
    sizing_queues = {q["name"] for q in admin.get("/api/queues/sizing?columns=name")}
    assert sizing_queues.isdisjoint(QUEUES)
    assert admin.get("/api/queues/celery?columns=name")  # Celery's own queues
    # The generator really used those queues (then teardown deleted them): the vhost's message counters moved.
    stats = admin.get(f"/api/vhosts/{quote('sizing', safe='')}").get("message_stats", {})
    assert stats.get("publish", 0) > 0

    # Nothing left in the bucket's lease board; the results and the report are there.
    assert store.list("leases/") == []
    board = store.read_parquet(next(k for k in store.list("tables/leaderboards/campaign=celery-existing/")))
    assert board.column("config_id").to_pylist() == [CONFIG] and board.column("monthly_cost").to_pylist() == [99.0]
    phases = [k for k in store.list("tables/phase_summary/campaign=celery-existing/")]
    assert sum(store.read_parquet(k).num_rows for k in phases) == 2
    assert store.list("reports/campaign=celery-existing/run=celery/")
    # The load generator's console log reached the bucket from the worker that ran it.
    assert store.list("logs/campaign=celery-existing/")

    # Each worker kept its own disk: the resolved spec is on a worker's disk only if a task there read it, and the
    # trial's cluster description only where run_scenarios ran.
    ran_load = trial["cluster.run_scenarios"]
    other = next(w for w in WORKERS if w != ran_load)
    assert list((celery.state_dir(ran_load) / "runs").rglob("steps-r1.log"))
    assert not (celery.state_dir(other) / "runs").exists()


def test_the_stack_used_postgres_and_the_rabbitmq_vhost(stack):
    celery, _, cluster, _ = stack
    env = celery.environment()
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
    admin = ManagementClient(cluster, timeout_s=10)
    connections = admin.get("/api/connections?columns=vhost,user")
    assert sum(1 for c in connections if c["vhost"] == "celery") >= len(WORKERS)  # the workers consume there
    assert Path(celery.root / "logs" / "worker-a.log").read_text().count(" ready.") >= 1
