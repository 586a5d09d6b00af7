"""Workload groups (issue 14): concurrent named groups per scenario, the foreground, and bad input with field paths.

Known answers: the groups' totals follow from the YAML (publishers x per-publisher rate), the phase boundaries of
every group equal the scenario's, and each refused input names its field path.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sizing.campaign import DEFAULT_GROUP, RATE_MAX, load_campaign, parse_campaign
from sizing.documents.fields import SpecError

BASE: dict[str, Any] = {
    "name": "groups", "deployment": "local", "catalog": "aws-us-east-1-2020",
    "target": {"rate": 400, "p99_latency_ms": 500},
    "workload": {
        "queues": {"count": 4, "name_pattern": "qq-{n}", "type": "quorum", "durable": True,
                   "arguments": {"x-quorum-initial-group-size": 3}},
        "message": {"size_bytes": 1024, "persistent": True},
        "publishers": {"count": 4, "confirms_in_flight": 50},
        "consumers": {"count": 4, "prefetch": 50},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [{
        "name": "mixed", "warmup_s": 2, "steps": {"rates": [100, 200], "duration_s": 10},
        "groups": [
            {"name": "quorum"},
            {"name": "lazy", "rate": 10, "per_publisher": True,
             "workload": {"queues": {"count": 6, "name_pattern": "lazy-{n}", "type": "classic",
                                     "arguments": {"x-queue-mode": "lazy"}},
                          "message": {"size_bytes": 64}, "publishers": {"count": 6, "confirms_in_flight": 0},
                          "consumers": {"count": 6}}},
        ],
    }],
}


def parse(edit=None):
    data = copy.deepcopy(BASE)
    if edit:
        edit(data)
    return parse_campaign(data)


def problems_of(edit) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse(edit)
    return [str(p) for p in err.value.problems]


def test_a_scenario_without_groups_is_one_implicit_main_group() -> None:
    campaign = load_campaign("campaigns/local-quick.yaml")
    scenario = campaign.scenarios[0]
    (group,) = scenario.workload_groups
    assert group.name == DEFAULT_GROUP == scenario.foreground
    assert group.workload == scenario.workload and scenario.background_groups == ()


def test_groups_have_their_own_workload_and_the_scenarios_phases() -> None:
    scenario = parse().scenarios[0]
    quorum, lazy = scenario.workload_groups
    assert scenario.foreground == "quorum" and scenario.background_groups == (lazy,)
    # The foreground inherits the scenario's workload and steps; the background holds 6 x 10 msg/s in both phases.
    assert quorum.schedule.step_rates == (100.0, 200.0) and scenario.step_rates == (100.0, 200.0)
    assert lazy.schedule.step_rates == (60.0, 60.0) and lazy.schedule.step_duration_s == 10
    assert lazy.hold == "10/publisher"
    assert lazy.workload.queues.type == "classic" and lazy.workload.queues.arguments == {"x-queue-mode": "lazy"}
    assert lazy.workload.queues.names()[0] == "lazy-1" and lazy.workload.message.size_bytes == 64
    assert quorum.workload.queues.type == "quorum" and scenario.workload == quorum.workload
    # a group's own queue arguments replace the inherited ones (no quorum argument on a lazy classic queue)
    assert quorum.workload.queues.arguments == {"x-quorum-initial-group-size": 3}


def test_foreground_may_name_a_later_group_and_a_group_may_run_max() -> None:
    def edit(data):
        scenario = data["scenarios"][0]
        scenario["foreground"] = "lazy"
        scenario["groups"][0] = {"name": "quorum", "rate": "max"}
    scenario = parse(edit).scenarios[0]
    assert scenario.foreground == "lazy" and scenario.workload.queues.type == "classic"
    quorum = scenario.workload_groups[0].schedule
    assert [s.rate_mode for s in quorum.step_settings] == [RATE_MAX, RATE_MAX]
    assert scenario.step_settings is None  # the foreground (lazy) is scheduled
    assert scenario.workload_groups[1].schedule.step_settings is None
    assert scenario.workload_groups[1].schedule.step_rates == (60.0, 60.0)


@pytest.mark.parametrize("edit,path,reason", [
    (lambda d: d["scenarios"][0]["groups"].append({"name": "quorum",
                                                   "workload": {"queues": {"name_pattern": "x-{n}"}}}),
     "scenarios[0].groups[2].name", "used twice"),
    (lambda d: d["scenarios"][0].update(foreground="nope"), "scenarios[0].foreground", "names no group"),
    (lambda d: d["scenarios"][0]["groups"][1]["workload"]["queues"].update(name_pattern="qq-{n}"),
     "scenarios[0].groups[1].workload.queues.name_pattern", "also a queue of group 'quorum'"),
    (lambda d: d["scenarios"][0]["groups"][1].update(rate=-3), "scenarios[0].groups[1].rate", "positive"),
    (lambda d: d["scenarios"][0]["groups"][1].update(steps={"rates": [5], "duration_s": 10}),
     "scenarios[0].groups[1]", "not both"),
    (lambda d: (d["scenarios"][0]["groups"][1].pop("rate"), d["scenarios"][0]["groups"][1].pop("per_publisher"),
                d["scenarios"][0]["groups"][1].update(steps={"rates": [5], "duration_s": 10})),
     "scenarios[0].groups[1].steps", "every group follows the scenario's phases"),
    (lambda d: d["scenarios"][0]["groups"][1]["workload"]["queues"].update(type="fifo"),
     "scenarios[0].groups[1].workload.queues.type", "must be one of"),
    (lambda d: d["scenarios"][0]["groups"][1].update(colour="red"), "scenarios[0].groups[1].colour", "not a known"),
    (lambda d: d["scenarios"][0].update(steps=None, publish_rate=[{"hold": 10, "for_s": 10}]),
     "scenarios[0].groups", "need a `steps` scenario"),
    (lambda d: d["scenarios"][0].update(groups=[]), "scenarios[0].groups", "must not be empty"),
])
def test_bad_groups_name_the_field(edit, path: str, reason: str) -> None:
    def apply(data):
        edit(data)
        if data["scenarios"][0].get("steps") is None:
            data["scenarios"][0].pop("steps", None)
    found = problems_of(apply)
    assert any(p.startswith(path + ":") and reason in p for p in found), found
