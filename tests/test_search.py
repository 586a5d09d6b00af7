"""The capacity-search policy (sizing/criteria/search.py) against a simulated system whose capacity is known by
construction: a throughput ceiling, multiplicative noise on it per probe, and a p99 that explodes near it.
No broker, no clock: every known answer below is a formula of the simulated system's parameters."""

from __future__ import annotations

import random

import pytest

from sizing.criteria.rules import PROBE_MATCH_FRACTION, probe_passes
from sizing.criteria.search import CapacitySearch, Probe, ProbeOutcome, ProbeResult, SearchResult, SearchSpec

BASE_P99_MS = 5.0  # p99 of an idle system


class SimulatedSystem:
    """Throughput ceiling `capacity` (x (1 + noise) per probe); below it p99 = base / (1 - rate/ceiling),
    the queueing curve that explodes near capacity; above it the backlog grows by rate - ceiling."""

    def __init__(self, capacity: float, noise: float = 0.0, seed: int = 0) -> None:
        self.capacity = capacity
        self.noise = noise
        self.rng = random.Random(seed)

    def knee(self, slo_p99_ms: float) -> float:
        """Noise-free sustainable rate: below capacity and base / (1 - r/c) <= slo."""
        return self.capacity * (1.0 - BASE_P99_MS / slo_p99_ms)

    def measure(self, probe: Probe) -> ProbeResult:
        ceiling = self.capacity * (1.0 + self.rng.uniform(-self.noise, self.noise))
        if probe.rate < ceiling:
            p99 = BASE_P99_MS / (1.0 - probe.rate / ceiling)
            return ProbeResult(probe, probe.rate, probe.rate, 0.0, p99, p99 * 1.5, True)
        return ProbeResult(probe, ceiling, ceiling, probe.rate - ceiling, 60_000.0, 90_000.0, True)


def spec(**overrides) -> SearchSpec:
    values = dict(start_rate=1000.0, upper_rate=100_000.0, resolution=0.02, resolution_relative=True,
                  warmup_s=60, measure_s=120, drain_s=60, slo_p99_ms=1000.0, growth=2.0, max_disagreements=1)
    values.update(overrides)
    return SearchSpec(**values)


def run(search_spec: SearchSpec, system: SimulatedSystem, limit: int = 1000) -> SearchResult:
    search = CapacitySearch(search_spec)
    for _ in range(limit):
        probe = search.next_probe()
        if probe is None:
            return search.result()
        search.record(system.measure(probe))
    raise AssertionError(f"search did not stop within {limit} probes")


def test_probe_passes_checks_each_condition():
    """Known answers: one passing window, then each condition broken on its own."""
    ok = dict(target_rate=10_000, confirm_rate=9_950, consume_rate=9_950, backlog_slope=50.0, p99_ms=900,
              p999_ms=1900, valid=True, slo_p99_ms=1000, slo_p999_ms=2000)
    assert probe_passes(**ok)
    assert PROBE_MATCH_FRACTION * 10_000 == 9_950  # the pass above sits exactly on the threshold
    for key, bad in [("confirm_rate", 9_949), ("consume_rate", 9_949), ("backlog_slope", 50.1), ("p99_ms", 1001),
                     ("p999_ms", 2001), ("p999_ms", None), ("valid", False)]:
        assert not probe_passes(**{**ok, key: bad}), key
    assert probe_passes(**{**ok, "p999_ms": None, "slo_p999_ms": None})


def test_worst_case_probes_known_answer():
    """start 1k, upper 100k, x2: rungs 1k..64k, 100k (8). Widest gap relative to 2 %: every doubling gives
    1 / 0.02 = 50 -> ceil(log2 50) = 6; 64k..100k gives 36k / 1.28k = 28.1 -> 5. 8 + 2 x (6 + 1) = 22."""
    s = spec()
    assert s.ladder_rates() == (1000, 2000, 4000, 8000, 16000, 32000, 64000, 100_000)
    assert s.bisections_per_bracket() == 6
    assert s.worst_case_probes() == 22
    assert s.worst_case_s() == 22 * 240
    absolute = spec(resolution=500.0, resolution_relative=False)
    # widest gap 64k..100k = 36000 / 500 = 72 -> ceil(log2 72) = 7 bisections
    assert absolute.bisections_per_bracket() == 7
    assert absolute.worst_case_probes() == 8 + 2 * (7 + 1)


def test_noise_free_search_brackets_the_knee_within_the_resolution():
    system = SimulatedSystem(capacity=37_000)
    knee = system.knee(1000.0)  # 36 815 msg/s
    result = run(spec(), system)
    assert result.status == "converged"
    assert result.last_pass <= knee < result.first_fail
    assert result.first_fail - result.last_pass <= 0.02 * result.last_pass
    assert result.sustainable_rate == result.last_pass
    assert knee - result.sustainable_rate <= 0.02 * result.sustainable_rate
    assert result.p99_at_sustainable_ms <= 1000.0
    stages = [o.result.probe.stage for o in result.outcomes]
    assert stages[-1] == "confirm" and stages.count("confirm") == 1
    assert result.probes_used <= spec().worst_case_probes()


def test_absolute_resolution():
    system = SimulatedSystem(capacity=12_345)
    result = run(spec(resolution=100.0, resolution_relative=False), system)
    assert result.first_fail - result.last_pass <= 100.0
    assert result.last_pass <= system.knee(1000.0) < result.first_fail


def test_capacity_above_upper_bound_reports_the_upper_bound_confirmed():
    result = run(spec(upper_rate=50_000), SimulatedSystem(capacity=500_000))
    assert result.status == "at_upper"
    assert result.sustainable_rate == 50_000 and result.first_fail is None
    assert sum(1 for o in result.outcomes if o.rate == 50_000 and o.passed) == 2


def test_start_rate_above_capacity_reports_nothing():
    result = run(spec(start_rate=20_000), SimulatedSystem(capacity=10_000))
    assert result.status == "below_start"
    assert result.sustainable_rate is None and result.first_fail == 20_000 and result.probes_used == 1


def test_p999_slo_lowers_the_sustainable_rate():
    """p99.9 = 1.5 x p99 in the simulation, so an SLO of 1000 ms on p99.9 is the p99 SLO of 666.7 ms."""
    system = SimulatedSystem(capacity=40_000)
    result = run(spec(slo_p999_ms=1000.0), system)
    knee = system.capacity * (1.0 - 1.5 * BASE_P99_MS / 1000.0)
    assert result.last_pass <= knee < result.first_fail


class ScriptedSystem(SimulatedSystem):
    """A clean system that lies once: the first probe in (lie_from, lie_to) passes whatever its rate."""

    def __init__(self, capacity: float, lie_from: float, lie_to: float) -> None:
        super().__init__(capacity)
        self.lie = (lie_from, lie_to)
        self.lied = False

    def measure(self, probe: Probe) -> ProbeResult:
        if not self.lied and self.lie[0] < probe.rate < self.lie[1]:
            self.lied = True
            return ProbeResult(probe, probe.rate, probe.rate, 0.0, 10.0, 15.0, True)
        return super().measure(probe)


def test_a_noisy_pass_above_capacity_is_caught_by_the_confirmation():
    """Capacity 30k; the ladder fails at 32k; the bisection's first probe (24k) is a true pass, the next
    at 28k is a true pass, 30k is the lie (a pass above the knee). The bracket converges on the lie,
    its confirmation fails, the bracket widens down to the previous pass and the search converges below
    the true knee."""
    system = ScriptedSystem(capacity=30_000, lie_from=29_900, lie_to=30_100)
    result = run(spec(), system)
    knee = system.knee(1000.0)
    lie = [o for o in result.outcomes if o.passed and o.rate > knee]
    assert lie, "the scripted lie happened"
    assert any(o.rate == lie[0].rate and not o.passed and o.result.probe.stage == "confirm" for o in result.outcomes)
    assert result.status == "converged"
    assert result.sustainable_rate <= knee < result.first_fail
    assert result.probes_used <= spec().worst_case_probes()


def test_unstable_system_stops_without_a_rate():
    """Every confirmation fails: after max_disagreements + 1 of them, the search gives up honestly."""

    class Flaky(SimulatedSystem):
        def measure(self, probe: Probe) -> ProbeResult:
            if probe.stage == "confirm":
                return ProbeResult(probe, probe.rate, probe.rate, 0.0, 5000.0, None, True)
            return super().measure(probe)

    s = spec(max_disagreements=2)
    result = run(s, Flaky(capacity=30_000))
    assert result.status == "unstable" and result.sustainable_rate is None
    assert sum(1 for o in result.outcomes if o.result.probe.stage == "confirm") == 3
    assert result.probes_used <= s.worst_case_probes()


@pytest.mark.parametrize("noise", [0.0, 0.01, 0.05])
def test_properties_over_many_seeds_and_capacities(noise):
    """For 300 (capacity, seed, spec) draws: never a rate at or above a failing probe, the reported rate
    passed twice, no more probes than worst_case_probes(), and with noise no larger than the search
    tolerates, the result lands within resolution (+ the noise band) of the knee."""
    rng = random.Random(f"search-{noise}")
    for case in range(300):
        capacity = rng.uniform(2_000, 200_000)
        s = spec(start_rate=rng.choice([500.0, 1000.0, 5000.0]), upper_rate=rng.choice([150_000.0, 250_000.0]),
                 growth=rng.choice([1.5, 2.0, 3.0]), resolution=rng.choice([0.01, 0.02, 0.05]),
                 max_disagreements=rng.choice([0, 1, 2]))
        system = SimulatedSystem(capacity, noise, seed=case)
        result = run(s, system)
        assert result.probes_used <= s.worst_case_probes(), (case, result.probes_used)
        fails = [o.rate for o in result.outcomes if not o.passed]
        if result.sustainable_rate is not None:
            assert all(result.sustainable_rate < f for f in fails), case
            assert sum(1 for o in result.outcomes if o.passed and o.rate == result.sustainable_rate) >= 2
        if result.status != "converged" or capacity > s.upper_rate:
            assert noise > 0 or capacity < s.start_rate or capacity > s.upper_rate, (case, result.status)
            continue
        knee = system.knee(s.slo_p99_ms)
        # a noisy ceiling shifts the measured knee by up to `noise`; the bracket adds one resolution
        assert result.sustainable_rate <= knee * (1 + noise) + 1e-6, case
        assert result.sustainable_rate >= knee * (1 - noise) * (1 - s.resolution) - 1e-6, case


def test_round_trips_and_replay():
    system = SimulatedSystem(capacity=25_000)
    s = spec()
    result = run(s, system)
    assert SearchSpec.from_dict(s.to_dict()) == s
    assert SearchResult.from_dict(result.to_dict()) == result
    # Resuming from recorded outcomes (events) reaches the same decision without any new probe.
    replay = CapacitySearch(s, tuple(ProbeOutcome.from_dict(o.to_dict()) for o in result.outcomes))
    assert replay.next_probe() is None and replay.result() == result


def test_record_refuses_a_result_for_another_probe():
    search = CapacitySearch(spec())
    probe = search.next_probe()
    assert search.next_probe() == probe  # idempotent until recorded
    other = Probe(probe.index, probe.rate * 2, probe.stage, probe.warmup_s, probe.measure_s)
    with pytest.raises(ValueError):
        search.record(SimulatedSystem(1e6).measure(other))
