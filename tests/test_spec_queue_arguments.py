"""Queue arguments are checked when the spec is parsed, with their field path (sizing.campaign.queueargs; the real
broker's verdict on each refused value is in tests/test_refused_inputs_broker.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from sizing.campaign import parse_campaign
from sizing.documents.fields import SpecError

BASE = yaml.safe_load((Path(__file__).resolve().parent.parent / "campaigns" / "local-quick.yaml").read_text())


def problems_with(arguments: dict, qtype: str = "classic") -> dict[str, str]:
    spec = copy.deepcopy(BASE)
    spec["workload"]["queues"].update({"type": qtype, "arguments": arguments})
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    return {p.path: p.reason for p in err.value.problems}


def test_every_bad_argument_is_reported_at_its_path_at_once():
    found = problems_with({"x-max-length": "1000", "x-queue-mode": "eager", "x-message-ttl": 0.5,
                           "x-unknown-but-x": "kept", "max-length": 3})
    assert sorted(found) == [f"workload.queues.arguments.{k}" for k in
                             ("max-length", "x-max-length", "x-message-ttl", "x-queue-mode")]
    assert "must be an integer, got str '1000'" in found["workload.queues.arguments.x-max-length"]
    assert "must be one of default, lazy" in found["workload.queues.arguments.x-queue-mode"]
    assert all("other x- names are passed through unchecked" in reason for reason in found.values())


def test_an_argument_of_another_queue_type_names_the_types_that_take_it():
    found = problems_with({"x-max-priority": 10}, "quorum")
    assert found == {"workload.queues.arguments.x-max-priority": found["workload.queues.arguments.x-max-priority"]}
    assert found["workload.queues.arguments.x-max-priority"].startswith("applies to classic queues only, not quorum")


def test_a_scenarios_own_workload_is_checked_under_its_path():
    spec = copy.deepcopy(BASE)
    spec["scenarios"][0]["workload"] = {"queues": {"arguments": {"x-quorum-initial-group-size": 0}}}
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    assert err.value.paths() == ["scenarios[0].workload.queues.arguments.x-quorum-initial-group-size"]
