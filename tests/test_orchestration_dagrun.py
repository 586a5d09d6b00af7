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


def test_a_campaign_over_its_budget_fails_validate_spec_and_provisions_nothing(airflow_db, tmp_path):
    """Known answer: ci-tiny's planned wall time (sizing.planning.plan.campaign_cost: 6 trials of a few minutes each) is
    far above 36 s. (A local campaign costs nothing, so the hours are what a local budget can refuse.)"""
    from airflow.models.taskinstance import TaskInstance

    from dags.sizing_campaign import DAG
    from sizing.campaign import parse_campaign, read_campaign_yaml
    from sizing.planning.plan import campaign_cost, check_budget

    spec = "extends: ci-tiny.yaml\nname: ci-tiny-broke\nbudget: {max_hours: 0.01}\n"
    dr = DAG.test(run_conf={"campaign": spec, "run_label": "budget"})
    states = _states(dr)
    assert str(dr.state) == "failed"
    assert states["validate_spec"] == ["failed"] and states["plan_trials"] == ["upstream_failed"]
    assert "success" not in states.get("cluster.terraform_apply", [])
    # The refusal names the field and the figures, and the core agrees on them.
    data = {**read_campaign_yaml("campaigns/ci-tiny.yaml"), "name": "ci-tiny-broke",
            "budget": {"max_hours": 0.01}}
    campaign = parse_campaign(data)
    assert campaign_cost(campaign, 1).wall_hours > 0.01
    with pytest.raises(Exception, match=r"budget\.max_hours"):
        check_budget(campaign)
    ti: TaskInstance = next(t for t in dr.get_task_instances() if t.task_id == "validate_spec")
    assert ti.state == "failed"
