"""broker_config and message size: a spec cannot inject rabbitmq.conf lines, widen the local target's exposure
or ask for messages the broker refuses. Each case checks the field path and the reason in the SpecError.

Known answers: RabbitMQ 3.10's schema (rabbit.schema, validator "max_message_size": 1..536870912) and its
default max_message_size (rabbit.app: 134217728).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sizing.campaign import parse_campaign
from sizing.campaign.brokerconf import DEFAULT_MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE_LIMIT
from sizing.documents.fields import SpecError

ROOT = Path(__file__).resolve().parent.parent
BASE = yaml.safe_load((ROOT / "campaigns" / "local-quick.yaml").read_text())


def spec_with(broker_config: dict[str, Any] | None = None, size: int | None = None, deployment: str | None = None,
              scenario_size: int | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    if broker_config is not None:
        spec["broker_config"] = broker_config
    if size is not None:
        spec["workload"]["message"]["size_bytes"] = size
    if scenario_size is not None:
        spec["scenarios"][0]["workload"] = {"message": {"size_bytes": scenario_size}}
    if deployment is not None:
        spec["deployment"] = deployment
    return spec


def problems_of(spec: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    return {p.path: p.reason for p in err.value.problems}


def test_a_newline_in_a_value_cannot_add_a_rabbitmq_conf_line():
    found = problems_of(spec_with({"loopback_users.guest": "false\nlisteners.tcp.default = 0.0.0.0:5672"},
                                  deployment="aws"))
    assert list(found) == ["broker_config.loopback_users.guest"]
    assert "one line without control characters" in found["broker_config.loopback_users.guest"]
    assert "'\\n'" in found["broker_config.loopback_users.guest"]


@pytest.mark.parametrize("value", ["a\rb", "tab\there", "nul\x00", "del\x7f"])
def test_control_characters_are_refused(value):
    found = problems_of(spec_with({"vm_memory_high_watermark.relative": value}))
    assert "control characters" in found["broker_config.vm_memory_high_watermark.relative"]


@pytest.mark.parametrize("key", ["listeners.tcp.default = 1", "a..b", ".x", "x y", "x=1", "9lives", "tcp#x"])
def test_malformed_keys_are_refused(key):
    found = problems_of(spec_with({key: "1"}))
    assert "is not a rabbitmq.conf key" in found[f"broker_config.{key}"]


def test_non_scalar_values_are_refused():
    found = problems_of(spec_with({"vm_memory_high_watermark": {"relative": 0.4}}))
    assert "scalar" in found["broker_config.vm_memory_high_watermark"]


@pytest.mark.parametrize("key, words", [
    ("listeners.tcp.default", "127.0.0.1 only"),
    ("listeners.ssl.1", "127.0.0.1 only"),
    ("loopback_users.guest", "log in from other hosts"),
    ("loopback_users", "log in from other hosts"),
    ("management.tcp.ip", "management listener"),
    ("management.tcp.port", "management listener"),
    ("management.ssl.port", "management listener"),
    ("prometheus.tcp.ip", "Prometheus listener"),
])
def test_exposure_widening_settings_are_refused_on_the_local_target(key, words):
    found = problems_of(spec_with({key: "0.0.0.0" if key.endswith(".ip") else "false"}))
    reason = found[f"broker_config.{key}"]
    assert "refused on the local target" in reason and words in reason


def test_the_same_settings_are_allowed_on_aws_and_harmless_ones_locally():
    spec = spec_with({"listeners.tcp.default": 5672, "loopback_users.guest": False}, deployment="aws")
    spec["catalog"] = BASE["catalog"]
    try:
        campaign = parse_campaign(spec)
    except SpecError as err:  # the aws target may have problems of its own; none may be about broker_config
        assert not [p for p in err.problems if p.path.startswith("broker_config")], err
    else:
        assert campaign.broker_config["listeners.tcp.default"] == 5672
    local = parse_campaign(spec_with({"vm_memory_high_watermark.relative": 0.5, "collect_statistics_interval": 5000,
                                      "queue_master_locator": "min-masters"}))
    assert local.broker_config["vm_memory_high_watermark.relative"] == 0.5


def test_message_size_above_the_brokers_default_maximum_is_refused():
    found = problems_of(spec_with(size=2_147_483_648))
    reason = found["workload.message.size_bytes"]
    assert str(DEFAULT_MAX_MESSAGE_SIZE) in reason and "default max_message_size" in reason
    # exactly the default is accepted
    assert parse_campaign(spec_with(size=DEFAULT_MAX_MESSAGE_SIZE)).workload.message.size_bytes == 134_217_728


def test_message_size_is_bounded_by_the_specs_own_max_message_size():
    found = problems_of(spec_with({"max_message_size": 1_048_576}, size=2_000_000))
    assert "broker_config.max_message_size" in found["workload.message.size_bytes"]
    assert "1048576" in found["workload.message.size_bytes"]
    raised = parse_campaign(spec_with({"max_message_size": MAX_MESSAGE_SIZE_LIMIT}, size=200_000_000))
    assert raised.workload.message.size_bytes == 200_000_000


def test_a_scenario_override_is_bounded_too():
    found = problems_of(spec_with(scenario_size=300_000_000))
    assert "scenarios[0].workload.message.size_bytes" in found


@pytest.mark.parametrize("value", [MAX_MESSAGE_SIZE_LIMIT + 1, 0, "lots", 1.5])
def test_max_message_size_itself_is_bounded_by_rabbitmq_3_10(value):
    found = problems_of(spec_with({"max_message_size": value}))
    assert "1..536870912" in found["broker_config.max_message_size"]
