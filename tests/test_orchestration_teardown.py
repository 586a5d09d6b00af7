"""Teardown semantics of the per-trial cluster group, through dag.test() with a real cluster: a task that fails
after the cluster is up still gets the cluster destroyed, the slot released, and the run marked failed."""

from __future__ import annotations

import pytest

from tests.fixtures.cluster import busy_ports

pytestmark = [pytest.mark.airflow, pytest.mark.cluster]


def test_failing_load_run_still_destroys_every_trials_cluster(airflow_db, aws_conn, monkeypatch):
    from rabbit_sizing.operators.loadgen import LoadgenOperator
    from rabbit_sizing.sensors.cluster import lease_board

    from dags.sizing_campaign import DAG

    seen: dict[str, list[int]] = {}  # cluster key -> its AMQP ports
    listening: dict[str, list[int]] = {}  # cluster key -> the ports of its block in use mid-run
    bases: dict[str, int] = {}

    def fail_mid_run(self, context):
        from rabbit_sizing.cluster_lifecycle import load_cluster

        key = self.trial["cluster_key"]
        seen[key] = [n.amqp_port for n in load_cluster(self.cluster).nodes]
        bases[key] = self.trial["local_port_base"]
        listening[key] = busy_ports(bases[key])  # asserted below: a failure in here would just fail the task
        raise RuntimeError("injected failure in the middle of the load run")

    monkeypatch.setattr(LoadgenOperator, "execute", fail_mid_run)
    monkeypatch.setenv("SIZING_SLOT_OFFSET", "110")  # clear of the end-to-end tests' 30-39, which may run beside it
    # Two repeats of one config: two trials, each on a fresh cluster of its own. dag.test() runs one task at a
    # time, breadth-first over map indexes, so both trials must hold a slot at once (two 1-node clusters).
    spec = "extends: ci-tiny.yaml\nrepeats: 2\n"
    dr = DAG.test(run_conf={"campaign": spec, "configs": ["n1-c5.2xlarge-gp2"], "run_label": "teardown",
                            "max_parallel_configs": 2})
    states: dict[str, list[str]] = {}
    for ti in dr.get_task_instances():
        states.setdefault(ti.task_id, []).append(str(ti.state))
    assert states["cluster.terraform_apply"] == ["success"] * 2
    assert states["cluster.run_scenarios"] == ["failed"] * 2
    assert states["cluster.upload"] == ["upstream_failed"] * 2
    assert states["cluster.terraform_destroy"] == ["success"] * 2
    assert str(dr.state) == "failed"
    # Nothing landed, so there is nothing to analyse; analysis_inputs recorded which cluster tasks failed.
    assert states["analysis_inputs"] == ["failed"] and states["trials_succeeded"] == ["upstream_failed"]
    assert _xcom(dr.run_id, "analysis_inputs", "failed_cluster_tasks") == [
        f"cluster.{task}_{i}" for task in ("run_scenarios", "upload") for i in (0, 1)]
    assert sorted(seen) == ["n1-c5.2xlarge-gp2-r1", "n1-c5.2xlarge-gp2-r2"]
    for key, ports in seen.items():
        assert ports and set(ports) <= set(listening[key]), key  # the cluster really was up mid-run
    ports = [p for trial_ports in seen.values() for p in trial_ports]
    assert len(set(ports)) == len(ports)  # not the same cluster twice
    assert all(busy_ports(base) == [] for base in bases.values()) and len(bases) == 2
    assert lease_board("local").holders() == {}


def _xcom(run_id: str, task_id: str, key: str):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        (row,) = session.scalars(XComModel.get_many(run_id=run_id, task_ids=task_id, key=key)).all()
        return XComModel.deserialize_value(row)
