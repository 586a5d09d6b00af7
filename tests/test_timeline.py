"""Timelines: phase expansion, open-loop send times, fault events (pure, no I/O)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sizing.campaign import families, load_campaign
from sizing.planning.plan import plan_configs, plan_runs
from sizing.planning.timeline import OpenLoopSchedule, Ramp, expand

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def quorum():
    return load_campaign(ROOT / "campaigns" / "quorum-sizing-2020.yaml")


@pytest.fixture(scope="module")
def quick():
    return load_campaign(ROOT / "campaigns" / "local-quick.yaml")


def all_due(schedule: OpenLoopSchedule) -> list[float]:
    out = []
    while (t := schedule.next_due()) is not None:
        out.append(t)
    return out


def test_ramp_integral_and_its_inverse_agree() -> None:
    ramp = Ramp(10.0, 20.0, 100.0, 300.0)
    assert ramp.integral(10, 30) == pytest.approx(4000.0)
    for amount in (0.0, 1.0, 999.0, 2000.0, 3999.0):
        t = ramp.time_of_integral(amount)
        assert ramp.integral(10, t) == pytest.approx(amount, abs=1e-6)
    down = Ramp(0.0, 10.0, 300.0, 100.0)
    assert down.integral(0, down.time_of_integral(1234.0)) == pytest.approx(1234.0)


def family(campaign, name: str):
    """The scenario as written (seed 000's isolated runs as one continuous timeline)."""
    return next(s for s in families(campaign.scenarios) if s.name == name)


def test_steps_expand_to_one_phase_per_intensity(quorum) -> None:
    timeline = expand(family(quorum, "increasing-intensity"), nodes=3)
    assert [p.target_rate for p in timeline.phases] == [1000, 5000, *range(10000, 70001, 5000)]
    assert [p.start_s for p in timeline.phases] == [1800.0 * i for i in range(15)]
    assert all(p.warmup_s == 60 and p.processing_ms.at(p.start_s) == 10 for p in timeline.phases)
    assert timeline.duration_s == 27000
    assert timeline.phase_at(10799.0).number == 6 and timeline.phase_at(27000.0) is None


def test_profile_phases_are_cut_at_every_breakpoint(quorum) -> None:
    timeline = expand(quorum.scenario("publish-peak-20k-30k"), nodes=5)
    assert [(p.start_s, p.duration_s) for p in timeline.phases] == [
        (0, 300), (300, 1200), (1500, 300), (1800, 1200), (3000, 3000)]
    assert timeline.rate_at(900) == pytest.approx(25000)  # half way up the ramp
    assert timeline.phases[0].warmup_s == 60 and all(p.warmup_s == 0 for p in timeline.phases[1:])
    # total scheduled messages: 20k*300 + 25k*1200 + 30k*300 + 25k*1200 + 20k*3000
    assert timeline.scheduled(0, timeline.duration_s) == pytest.approx(135_000_000)


def test_open_loop_schedule_matches_the_integral_and_never_stretches(quorum) -> None:
    timeline = expand(quorum.scenario("publish-peak-10k-20k"), nodes=3)
    share = 1 / 2000
    due = all_due(OpenLoopSchedule(timeline, share))
    assert len(due) == pytest.approx(timeline.scheduled(0, timeline.duration_s, share), abs=1)
    assert due == sorted(due)
    # during the ramp the spacing shrinks as the rate grows: 1 / (share * rate)
    t = 900.0
    nearest = min(range(len(due) - 1), key=lambda i: abs(due[i] - t))
    assert due[nearest + 1] - due[nearest] == pytest.approx(1 / (share * timeline.rate_at(t)), rel=0.01)


def test_schedule_per_second_counts_follow_a_step_change(quick) -> None:
    timeline = expand(quick.scenario("increasing-intensity"), nodes=1)
    due = all_due(OpenLoopSchedule(timeline, share=0.25))
    per_second = [sum(1 for t in due if s <= t < s + 1) for s in range(math.ceil(timeline.duration_s))]
    # local-quick's steps, 10 s each: 1000, 2000, 3000, 4500, 6000 msg/s, a quarter of each per second
    assert per_second == [250] * 10 + [500] * 10 + [750] * 10 + [1125] * 10 + [1500] * 10


def test_random_start_delay_skips_the_messages_due_before_it(quick) -> None:
    timeline = expand(quick.scenario("increasing-intensity"), nodes=1)
    late = all_due(OpenLoopSchedule(timeline, share=0.25, start_s=20.0))
    assert late[0] >= 20.0
    assert len(late) == pytest.approx(timeline.scheduled(20.0, timeline.duration_s, 0.25), abs=1)


def test_fault_events_are_placed_in_every_phase_and_deterministic(quorum) -> None:
    scenario = family(quorum, "broker-kill")
    a, b = expand(scenario, nodes=5, seed=7), expand(scenario, nodes=5, seed=7)
    assert a.faults == b.faults
    assert len(a.faults) == 15
    for fault, phase in zip(a.faults, a.phases, strict=True):
        assert fault.kind == "kill_node" and fault.phase == phase.number
        assert fault.at_s == phase.start_s + 900 and fault.heal_at_s == phase.start_s + 1140
        assert 1 <= fault.node <= 5
    assert len({f.node for f in a.faults}) > 1  # random targets vary between phases
    assert expand(scenario, nodes=5, seed=8).faults != a.faults


def test_plan_covers_configs_scenarios_and_repeats(quick) -> None:
    configs = plan_configs(quick)
    assert [c.config_id for c in configs] == ["n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2", "n1-c5.xlarge-gp2"]
    assert [c.local_port_base for c in configs] == [21000, 21050, 21100]
    assert configs[1].monthly_cost == pytest.approx(3 * (0.34 * 720 + 100))
    runs = plan_runs(quick, configs[1])
    assert [(r.scenario, r.repeat) for r in runs] == [("increasing-intensity", 1), ("broker-kill", 1)]
    assert runs[1].timeline.faults[0].node == 1
    only = plan_configs(quick, only=["n3-c5.2xlarge-gp2"])
    assert [c.slot for c in only] == [1]  # the slot (and so the ports) stays that of the full plan
    with pytest.raises(KeyError, match="unknown config"):
        plan_configs(quick, only=["n7-nope"])
