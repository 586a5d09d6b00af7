"""Teardown semantics of the per-config group, through dag.test() with a real cluster: a task that fails
after the cluster is up still gets the cluster destroyed, the slot released, and the run marked failed."""

from __future__ import annotations

import socket

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_failing_load_run_still_destroys_cluster(airflow_db, aws_conn, monkeypatch):
    from rabbit_sizing.operators.loadgen import LoadgenOperator
    from rabbit_sizing.sensors.cluster import lease_board

    from dags.sizing_campaign import DAG

    seen = {}

    def fail_mid_run(self, context):
        from rabbit_sizing.cluster_lifecycle import load_cluster

        cluster = load_cluster(self.cluster)
        seen["ports"] = [n.amqp_port for n in cluster.nodes]
        assert all(_listening(p) for p in seen["ports"])  # the cluster really is up
        raise RuntimeError("injected failure in the middle of the load run")

    monkeypatch.setattr(LoadgenOperator, "execute", fail_mid_run)
    dr = DAG.test(run_conf={"campaign": "campaigns/ci-tiny.yaml", "configs": ["n1-c5.2xlarge-gp2"],
                            "run_label": "teardown"})
    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert states["cluster.terraform_apply"] == "success"
    assert states["cluster.run_scenarios"] == "failed"
    assert states["cluster.upload"] == "upstream_failed"
    assert states["cluster.terraform_destroy"] == "success"
    assert str(dr.state) == "failed"
    assert seen["ports"] and not any(_listening(p) for p in seen["ports"])
    assert lease_board("local").holders() == {}
