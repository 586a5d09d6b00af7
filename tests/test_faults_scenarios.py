"""The seed-002 adverse scenarios of the shipped campaigns expand to exactly the seed's timelines."""

from pathlib import Path

import pytest

from sizing.campaign import load_campaign
from sizing.planning.timeline import expand

CAMPAIGNS = Path(__file__).resolve().parents[1] / "campaigns"
SEED_CAMPAIGNS = ["quorum-sizing-2020.yaml", "mirrored-sizing-2020.yaml"]
# Seed 002: 5 min base, 20 min ramp, 5 min hold, 20 min ramp back, 50 min base.
BOUNDARIES = [0, 300, 1500, 1800, 3000, 6000]


@pytest.fixture(scope="module", params=SEED_CAMPAIGNS)
def campaign(request):
    return load_campaign(CAMPAIGNS / request.param)


def boundaries(timeline):
    return [p.start_s for p in timeline.phases] + [timeline.duration_s]


@pytest.mark.parametrize(("name", "rate", "consumers"), [
    ("consumer-slowdown-10k", 10000, 200), ("consumer-slowdown-20k", 20000, 300),
    ("consumer-slowdown-30k", 30000, 400)])
def test_consumer_slowdown(campaign, name, rate, consumers):
    scenario = campaign.scenario(name)
    timeline = expand(scenario, 3, campaign.seed)
    assert boundaries(timeline) == BOUNDARIES
    assert scenario.workload.consumers.count == consumers
    assert timeline.faults == ()
    # processing time: 10 ms, ramp to 30 ms, hold, ramp back, 10 ms (linear ramps)
    expected_ms = {0: 10, 299.5: 10, 300: 10, 900: 20, 1200: 25, 1500: 30, 1650: 30, 1799: 30, 1800: 30,
                   2400: 20, 2700: 15, 3000: 10, 4500: 10, 5999: 10}
    for t, ms in expected_ms.items():
        assert timeline.processing_ms_at(t) == pytest.approx(ms), t
        assert timeline.rate_at(t) == rate, t
    assert timeline.rate_at(6000) == 0  # the schedule is over
    assert timeline.scheduled(0, 6000) == pytest.approx(rate * 6000)
    assert [p.processing_ms.v0 for p in timeline.phases] == [10, 10, 30, 30, 10]
    assert [p.processing_ms.v1 for p in timeline.phases] == [10, 30, 30, 10, 10]
    # Consumer capacity (count x 1000 / processing ms): 2x the publish rate at 10 ms, 2/3 of it at 30 ms
    # for the 10k case, as the seed says (20k msg/s -> 6.6k msg/s).
    capacity = [consumers * 1000 / timeline.processing_ms_at(t) for t in (0, 1500)]
    if rate == 10000:
        assert capacity == pytest.approx([20000, 6666.67], rel=1e-3)
    assert capacity[1] < rate  # a backlog must form at the slowest point


@pytest.mark.parametrize(("name", "base", "peak", "consumers", "seed_consumption", "total"), [
    ("publish-peak-10k-20k", 10000, 20000, 200, 13_000, 75_000_000),
    ("publish-peak-20k-30k", 20000, 30000, 300, 23_000, 135_000_000),
    ("publish-peak-30k-40k", 30000, 40000, 400, 33_000, 195_000_000)])
def test_publish_peak(campaign, name, base, peak, consumers, seed_consumption, total):
    scenario = campaign.scenario(name)
    timeline = expand(scenario, 3, campaign.seed)
    assert boundaries(timeline) == BOUNDARIES
    assert scenario.workload.consumers.count == consumers
    # Seed 002: "200 consumers with 13k msg/s top consume rate" (23k with 300, 33k with 400): a deficit of up to
    # 7k msg/s at the peak. The campaign's consumers carry what the seed's carried, within 3 %, below the peak and
    # above the base: a backlog forms at the peak and drains at the base.
    capacity = consumers * 1000 / scenario.workload.consumers.processing_ms
    assert capacity == pytest.approx(seed_consumption, rel=0.03)
    assert base < capacity < peak and peak - capacity == pytest.approx(7000, rel=0.05)
    mid = (base + peak) / 2
    expected_rate = {0: base, 299.5: base, 300: base, 900: mid, 1500: peak, 1650: peak, 1800: peak, 2400: mid,
                     3000: base, 5999: base}
    for t, r in expected_rate.items():
        assert timeline.rate_at(t) == pytest.approx(r), t
        assert timeline.processing_ms_at(t) == scenario.workload.consumers.processing_ms, t
    per_phase = [timeline.scheduled(p.start_s, p.end_s) for p in timeline.phases]
    assert per_phase == pytest.approx([300 * base, 1200 * mid, 300 * peak, 1200 * mid, 3000 * base])
    assert timeline.scheduled(0, 6000) == pytest.approx(total)
    assert [round(p.target_rate) for p in timeline.phases] == [base, mid, peak, mid, base]
    # warm-up only at the very start of the run
    assert [p.warmup_s for p in timeline.phases] == [60, 0, 0, 0, 0]


@pytest.mark.parametrize("nodes", [3, 5, 9])
def test_broker_kill_one_per_intensity_half_way_healed_before_the_run_ends(campaign, nodes):
    # Seed 000/002: each intensity its own 30-minute run (steps.isolate), a broker hard-killed part way into each.
    runs = [s for s in campaign.scenarios if s.isolated_from == "broker-kill"]
    assert len(runs) == 15 and [s.step_rates[0] for s in runs] == [r * 200 for r in (
        5, 25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 300, 325, 350)]
    timelines = [expand(run, nodes, campaign.seed) for run in runs]
    for timeline in timelines:
        (phase,), (fault,) = timeline.phases, timeline.faults
        assert phase.duration_s == 1800 and fault.kind == "kill_node" and fault.phase == 1
        assert fault.at_s == phase.start_s + phase.duration_s / 2
        assert phase.start_s < fault.at_s < fault.heal_at_s < phase.end_s
        assert fault.target == "node" and 1 <= fault.node <= nodes
    # the random victims are reproducible from the campaign seed, and not always the same node
    assert [expand(run, nodes, campaign.seed).faults for run in runs] == [t.faults for t in timelines]
    assert len({t.faults[0].node for t in timelines}) > 1


def test_both_seed_campaigns_share_the_adverse_schedules():
    quorum, mirrored = (load_campaign(CAMPAIGNS / name) for name in SEED_CAMPAIGNS)
    assert quorum.workload.queues.type == "quorum" and mirrored.workload.queues.type == "mirrored"
    for scenario in quorum.scenarios:
        assert expand(scenario, 3, quorum.seed).phases == expand(mirrored.scenario(scenario.name), 3,
                                                                 mirrored.seed).phases
