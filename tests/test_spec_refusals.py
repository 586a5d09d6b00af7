"""Issue 47, item 5: inputs `sizing validate` once accepted that can only mislead, each refused with its field path,
and the nearest valid input beside it accepted (so a refusal cannot grow past its rule).

Every case is a shipped campaign with one edit, parsed as `sizing validate` parses it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sizing.campaign import parse_campaign
from sizing.documents.fields import SpecError
from sizing.resources.scalemodel import MIN_GENERATOR_CORES, MIN_GENERATOR_MEMORY_MIB, ScaleFactors

ROOT = Path(__file__).resolve().parent.parent


def shipped(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "campaigns" / f"{name}.yaml").read_text())


def problems_of(spec: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    return {p.path: p.reason for p in err.value.problems}


def versus(*pairs: tuple[str, str]) -> dict[str, Any]:
    spec = shipped("flow-control-local")
    spec["compare"]["versus"] = [{"baseline": base, "other": other} for base, other in pairs]
    return spec


# ------------------------------------------------------------------------------------------ compare.versus


@pytest.mark.parametrize(("base", "other"), [
    ("qq-inflight", "qq-inflight"),  # every step against itself
    ("qq-inflight/confirms_in_flight=1000", "qq-inflight/confirms_in_flight=1000"),
    ("qq-inflight", "qq-inflight/confirms_in_flight=1000"),  # the step against the baseline's step of its name
])
def test_a_versus_pair_comparing_an_arm_with_itself_is_refused(base: str, other: str) -> None:
    found = problems_of(versus((base, other)))
    assert "is the baseline itself" in found["compare.versus[0].other"], found


def test_a_versus_pair_of_two_steps_of_one_family_is_accepted() -> None:
    campaign = parse_campaign(versus(("qq-inflight/confirms_in_flight=1000", "qq-inflight/confirms_in_flight=200")))
    assert campaign.comparison is not None and len(campaign.comparison.versus) == 1


# ------------------------------------------------------------------------------------------ existing.nodes


@pytest.mark.parametrize("endpoint", ["amqp", "management"])
def test_two_existing_nodes_at_one_endpoint_are_refused(endpoint: str) -> None:
    spec = copy.deepcopy(shipped("existing-example"))
    nodes = spec["existing"]["nodes"]
    nodes[2][endpoint] = nodes[0][endpoint]
    found = problems_of(spec)
    reason = found[f"existing.nodes[2].{endpoint}"]
    assert "existing.nodes[0]" in reason and "its own" in reason, found


def test_the_same_endpoint_spelled_with_another_case_or_scheme_is_the_same_node() -> None:
    spec = copy.deepcopy(shipped("existing-example"))
    spec["existing"]["nodes"][1]["management"] = "https://10.0.1.11:15672"
    assert "existing.nodes[1].management" in problems_of(spec)


def test_existing_nodes_on_one_host_at_other_ports_are_accepted() -> None:
    spec = copy.deepcopy(shipped("existing-example"))
    spec["existing"]["nodes"][1] = {"amqp": "10.0.1.11:5673", "management": "10.0.1.11:15673"}
    assert len(parse_campaign(spec).existing.nodes) == 3


# ------------------------------------------------------------------------------------------ scale_model


def scaled(**factors: float) -> dict[str, Any]:
    return {**shipped("local-quick"), "scale_model": factors}


@pytest.mark.parametrize(("field", "value", "words"), [
    ("generator_memory_mib", 0.001, f">= {MIN_GENERATOR_MEMORY_MIB}"),
    ("generator_memory_mib", MIN_GENERATOR_MEMORY_MIB - 1, "pika worker"),
    ("generator_cores", MIN_GENERATOR_CORES / 2, "quota"),
])
def test_a_generator_envelope_below_its_floor_is_refused(field: str, value: float, words: str) -> None:
    found = problems_of(scaled(**{field: value}))
    assert words in found[f"scale_model.{field}"], found


def test_the_generator_envelope_at_its_floors_is_accepted() -> None:
    campaign = parse_campaign(scaled(generator_memory_mib=MIN_GENERATOR_MEMORY_MIB,
                                     generator_cores=MIN_GENERATOR_CORES))
    assert campaign.scale_model is not None
    assert campaign.scale_model.generator_memory_mib == MIN_GENERATOR_MEMORY_MIB
    assert campaign.scale_model.generator_cores == MIN_GENERATOR_CORES


@pytest.mark.parametrize("field", ScaleFactors.field_names())
@pytest.mark.parametrize("value", [0, -1])
def test_no_scale_factor_is_zero_or_negative(field: str, value: float) -> None:
    assert f"scale_model.{field}" in problems_of(scaled(**{field: value}))
