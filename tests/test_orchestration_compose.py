"""docker-compose.yaml, checked statically (no Docker engine here): services, pinned images, and the
env/connection wiring the DAG and its tasks read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def test_services_present(compose):
    assert {"postgres", "minio", "airflow-api-server", "airflow-scheduler", "airflow-dag-processor",
            "airflow-triggerer", "spark-master", "spark-worker", "rabbitmq-1", "rabbitmq-2", "rabbitmq-3",
            "loadgen"} <= set(compose["services"])


def test_images_pinned_to_explicit_tags(compose):
    for name, service in compose["services"].items():
        image = service.get("image")
        assert image, f"{name} has no image"
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned"
    assert (REPO / compose["services"]["airflow-api-server"]["build"]["dockerfile"]).exists()
    assert compose["services"]["loadgen"]["build"]["dockerfile"] == "loadgen/Dockerfile"


def test_airflow_wiring_matches_what_the_dag_reads(compose):
    from rabbit_sizing.operators.loadgen import AWS_CONN_ID

    from dags.sizing_campaign import SPARK_CONN_ID

    services = compose["services"]
    airflow = [s for n, s in services.items() if n.startswith("airflow-")]
    assert {s["command"] if isinstance(s["command"], str) else "init" for s in airflow} == {
        "api-server", "scheduler", "dag-processor", "triggerer", "init"}
    for service in airflow:
        env = service["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
        assert "@postgres:" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert "./dags:/opt/airflow/dags" in service["volumes"]
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/airflow/dags"
        spark = json.loads(env[f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}"])
        assert spark["conn_type"] == "spark" and spark["host"] == "spark://spark-master" and spark["port"] == 7077
        aws = json.loads(env[f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}"])
        assert aws["extra"]["endpoint_url"] == env["SIZING_S3_ENDPOINT"] == "http://minio:9000"
        assert (aws["login"], aws["password"]) == (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"])
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://airflow-api-server:8080")
    minio = services["minio"]["environment"]
    first = airflow[0]["environment"]
    assert (minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"]) == (first["AWS_ACCESS_KEY_ID"],
                                                                         first["AWS_SECRET_ACCESS_KEY"])
    assert first["SIZING_S3_BUCKET"] in " ".join(services["minio-init"]["entrypoint"])
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]


def test_rabbitmq_nodes_cluster(compose):
    nodes = [compose["services"][f"rabbitmq-{i}"] for i in (1, 2, 3)]
    assert len({n["environment"]["RABBITMQ_ERLANG_COOKIE"] for n in nodes}) == 1
    assert [n["hostname"] for n in nodes] == ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]
    conf = (REPO / "docker/rabbitmq/rabbitmq.conf").read_text()
    for i in (1, 2, 3):
        assert f"rabbit@rabbitmq-{i}" in conf
    from sizing.cluster import ClusterInfo

    cluster = ClusterInfo.from_json((REPO / "docker/cluster-compose.json").read_text())
    assert [n.host for n in cluster.nodes] == ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]
