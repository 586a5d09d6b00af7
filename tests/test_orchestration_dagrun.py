"""sizing_campaign runs through dag.test() on a real (SQLite) Airflow metadata DB."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.airflow


def _states(dr) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for ti in dr.get_task_instances():
        out.setdefault(ti.task_id, []).append(None if ti.state is None else str(ti.state))
    return out


def test_invalid_spec_fails_fast_and_provisions_nothing(airflow_db, tmp_path):
    from dags.sizing_campaign import DAG

    dr = DAG.test(run_conf={"campaign": "name: broken\ndeployment: local\nclusters: {}\n"})
    states = _states(dr)
    assert str(dr.state) == "failed"
    assert states["validate_spec"] == ["failed"]
    assert states["plan_trials"] == ["upstream_failed"]
    # The mapped group never expanded: no apply ran, nothing to tear down.
    assert "success" not in states.get("cluster.terraform_apply", [])
    assert "success" not in states.get("cluster.terraform_destroy", [])
