"""Client-setting steps (issue 13, seed 003): the spec and the timeline they expand into, and every bad input
failing with its field path before anything is provisioned. Known answers are the values written in the specs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sizing.campaign import DEFAULT_MAX_RATE_PER_PUBLISHER, parse_campaign
from sizing.criteria.rules import CLIENT_SETTINGS, scenario_kind
from sizing.documents.fields import SpecError
from sizing.planning.timeline import expand

ROOT = Path(__file__).resolve().parent.parent
BASE = yaml.safe_load((ROOT / "campaigns" / "local-quick.yaml").read_text())


def with_scenario(scenario: dict[str, Any], **workload: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec["scenarios"] = [scenario]
    for section, values in workload.items():
        spec["workload"][section].update(values)
    return spec


def test_inflight_steps_at_max_expand_to_named_max_phases() -> None:
    spec = with_scenario({"name": "inflight", "steps": {"vary": "confirms_in_flight", "values": [1, 5, 20, 200],
                                                        "duration_s": 5, "rate": "max"}})
    scenario = parse_campaign(spec).scenarios[0]
    phases = expand(scenario, 1).phases
    assert [p.name for p in phases] == ["confirms_in_flight=1", "confirms_in_flight=5", "confirms_in_flight=20",
                                        "confirms_in_flight=200"]
    assert {p.rate_mode for p in phases} == {"max"} and {p.latency_basis for p in phases} == {"sent"}
    assert [p.settings.confirms_in_flight for p in phases] == [1, 5, 20, 200]
    # No stated cap: the ceiling only sizes the sequence space, per publisher (local-quick has 4 publishers).
    assert phases[0].rate.v0 == DEFAULT_MAX_RATE_PER_PUBLISHER * 4
    assert scenario.workload.publishers.confirms_in_flight == 1  # the run opens with the first step's settings
    assert scenario_kind(scenario) == CLIENT_SETTINGS


def test_per_publisher_rates_and_isolated_runs() -> None:
    spec = with_scenario({"name": "prefetch", "steps": {"vary": "prefetch", "values": [1, 1000], "duration_s": 5,
                                                        "rate": 50, "per_publisher": True, "isolate": True}},
                         consumers={"multi_ack_every": 1})
    scenarios = parse_campaign(spec).scenarios
    assert [s.name for s in scenarios] == ["prefetch-prefetch-1", "prefetch-prefetch-1000"]
    assert [s.workload.consumers.prefetch for s in scenarios] == [1, 1000]
    phase = expand(scenarios[0], 1).phases[0]
    assert phase.rate_mode == "scheduled" and phase.rate.v0 == 50 * 4 and phase.latency_basis == "intended"


def test_plain_rate_steps_per_publisher() -> None:
    spec = with_scenario({"name": "perftest", "steps": {"rates": [50, 100], "per_publisher": True,
                                                        "duration_s": 10}})
    assert parse_campaign(spec).scenarios[0].step_rates == (200.0, 400.0)


def test_sequence_with_no_confirms_and_a_cap() -> None:
    spec = with_scenario({"name": "none", "steps": {"sequence": [{"confirms_in_flight": 0, "auto_ack": True}],
                                                    "duration_s": 5, "max_rate": 20000}})
    phase = expand(parse_campaign(spec).scenarios[0], 1).phases[0]
    assert phase.name == "confirms_in_flight=0,auto_ack=true"
    assert phase.rate.v0 == 20000 and phase.settings.auto_ack and phase.settings.confirms_in_flight == 0


BAD = [
    ("unknown-dimension", {"vary": "linger_ms", "values": [1]}, "scenarios[0].steps.vary", "unknown step dimension"),
    ("unknown-sequence-key", {"sequence": [{"prefetch": 10, "batch": 3}]}, "scenarios[0].steps.sequence[0].batch",
     "unknown step dimension"),
    ("confirms-off-live", {"vary": "confirms_in_flight", "values": [1000, 0], "max_rate": 1000},
     "scenarios[0].steps.values[1]", "confirm.select has no undo"),
    ("auto-ack-live", {"vary": "auto_ack", "values": [False, True]}, "scenarios[0].steps.values[1]",
     "fixed by basic.consume"),
    ("size-live", {"vary": "message_size", "values": [1000, 2000]}, "scenarios[0].steps.values[1]",
     "publish frame template"),
    ("max-without-window-or-cap", {"sequence": [{"confirms_in_flight": 0}]}, "scenarios[0].steps.sequence[0]",
     "max_rate"),
    ("bad-rate", {"vary": "prefetch", "values": [10], "rate": "fast"}, "scenarios[0].steps.rate", "'max'"),
    ("ack-above-prefetch", {"vary": "prefetch", "values": [5]}, "scenarios[0].steps.values[0]", "<= prefetch"),
]


@pytest.mark.parametrize(("steps", "path", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_setting_steps_name_the_field(steps: dict[str, Any], path: str, reason: str) -> None:
    spec = with_scenario({"name": "bad", "steps": {"duration_s": 5, **steps}})
    with pytest.raises(SpecError) as info:
        parse_campaign(spec)
    assert any(p.path == path and reason in p.reason for p in info.value.problems), info.value.problems


def test_max_with_faults_is_refused() -> None:
    spec = with_scenario({"name": "bad", "steps": {"vary": "prefetch", "values": [200], "duration_s": 5},
                          "faults": [{"kind": "kill_node", "at": 0.5, "target": {"node": 1}}]})
    with pytest.raises(SpecError) as info:
        parse_campaign(spec)
    assert any(p.path == "scenarios[0].faults" and "target rate" in p.reason for p in info.value.problems)


@pytest.mark.parametrize("name", ["flow-control-2020", "flow-control-local", "ndq-10q-multiack",
                                  "ndq-10q-multiack-local"])
def test_seed_003_and_004_campaigns_are_valid(name: str) -> None:
    from sizing.campaign import load_campaign

    campaign = load_campaign(ROOT / "campaigns" / f"{name}.yaml")
    assert campaign.name == name and all(scenario_kind(s) == CLIENT_SETTINGS for s in campaign.scenarios)


def test_flow_control_campaign_carries_seed_003() -> None:
    from sizing.campaign import load_campaign

    campaign = load_campaign(ROOT / "campaigns" / "flow-control-2020.yaml")
    assert [(c.nodes, c.instance_type, c.volume.type, c.volume.iops) for c in campaign.clusters] == [
        (3, "c5.4xlarge", "io1", 10000)]
    inflight = expand(campaign.scenario("qq-inflight"), 3).phases
    assert [p.settings.confirms_in_flight for p in inflight] == [1, 5, 20, 200, 1000, 10000]
    assert {p.duration_s for p in inflight} == {300} and {p.rate_mode for p in inflight} == {"max"}
    # Benchmark 2: one isolated run per prefetch, for each queue type.
    for queue_type, prefix in (("quorum", "qq"), ("mirrored", "mirrored")):
        runs = [s for s in campaign.scenarios if s.name.startswith(f"{prefix}-prefetch-")]
        assert [s.workload.consumers.prefetch for s in runs] == [1, 10, 100, 1000, 10000]
        assert {s.workload.queues.type for s in runs} == {queue_type}
    none = campaign.scenario("mirrored-no-confirms-no-acks")
    assert none.workload.publishers.confirms_in_flight == 0 and none.workload.consumers.auto_ack
    assert "x-quorum-initial-group-size" not in none.workload.queues.arguments


def test_sizing_campaigns_give_the_rate_per_publisher() -> None:
    from sizing.campaign import read_campaign_yaml

    raw = read_campaign_yaml(ROOT / "campaigns" / "quorum-sizing-2020.yaml")
    steps = raw["scenarios"][0]["steps"]
    assert steps["per_publisher"] is True and steps["rates"][2] == 50  # PerfTest's `--rate 50` x 200 producers
