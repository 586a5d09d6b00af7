"""Scenario timelines: phases, rate and processing-time profiles, fault events and open-loop send times.

Pure functions of the spec. A scenario expands into a `Timeline`: consecutive phases, each with a
piecewise-linear total publish rate and consumer processing time, plus the concrete fault events.
The load generator follows it; the analysis reads the phase boundaries back from the records.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

from sizing.campaign import RATE_MAX, RATE_SCHEDULED, FaultSpec, ProfileSegment, Scenario, StepSetting


@dataclass(frozen=True)
class Ramp:
    """A value that moves linearly from `v0` to `v1` over [start_s, start_s + duration_s)."""

    start_s: float
    duration_s: float
    v0: float
    v1: float

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    @property
    def slope(self) -> float:
        return (self.v1 - self.v0) / self.duration_s

    def at(self, t: float) -> float:
        u = min(max(t - self.start_s, 0.0), self.duration_s)
        return self.v0 + self.slope * u

    def integral(self, t0: float, t1: float) -> float:
        """Integral of the value over [t0, t1] clipped to this ramp (messages, for a rate)."""
        a, b = max(t0, self.start_s), min(t1, self.end_s)
        if b <= a:
            return 0.0
        return (self.at(a) + self.at(b)) / 2.0 * (b - a)

    def time_of_integral(self, amount: float) -> float:
        """The t at which the integral from start_s reaches `amount` (inverse of the cumulative)."""
        a, s = self.v0, self.slope
        if amount <= 0:
            return self.start_s
        disc = a * a + 2.0 * s * amount
        # 2c / (a + sqrt(a^2 + 2sc)) is the stable root of s/2 u^2 + a u - c = 0, also for s == 0.
        u = 2.0 * amount / (a + math.sqrt(max(disc, 0.0))) if a + math.sqrt(max(disc, 0.0)) > 0 else math.inf
        return self.start_s + u

    def sub(self, t0: float, t1: float) -> Ramp:
        return Ramp(t0, t1 - t0, self.at(t0), self.at(t1))


@dataclass(frozen=True)
class FaultEvent:
    fault_id: str  # unique within the timeline, e.g. "p03-f1"
    kind: str
    phase: int
    at_s: float  # seconds from scenario start
    heal_at_s: float | None
    target: str  # "node" | "leader" | "all"
    node: int | None  # 1-based node number (resolved for "random")
    queue: str | None  # queue whose leader is hit (resolved by the nemesis at run time)
    params: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Phase:
    number: int  # 1-based
    name: str
    start_s: float
    duration_s: float
    warmup_s: float
    rate: Ramp  # total publish rate, msg/s (max mode: the ceiling that sizes the sequence space, not a target)
    processing_ms: Ramp  # consumer processing time per message
    settings: StepSetting | None = None  # client-setting steps: the settings in force during this phase

    @property
    def rate_mode(self) -> str:
        return self.settings.rate_mode if self.settings else RATE_SCHEDULED

    @property
    def latency_basis(self) -> str:
        """What end-to-end latency is measured from: the intended send time (open loop) or the actual one."""
        return "sent" if self.rate_mode == RATE_MAX else "intended"

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    @property
    def steady_start_s(self) -> float:
        return self.start_s + self.warmup_s

    @property
    def target_rate(self) -> float:
        """Mean scheduled rate over the phase (the hold value for a step)."""
        return self.rate.integral(self.start_s, self.end_s) / self.duration_s


@dataclass(frozen=True)
class Timeline:
    scenario: str
    phases: tuple[Phase, ...]
    faults: tuple[FaultEvent, ...]

    @property
    def duration_s(self) -> float:
        return self.phases[-1].end_s if self.phases else 0.0

    def phase_at(self, t: float) -> Phase | None:
        for phase in self.phases:
            if phase.start_s <= t < phase.end_s:
                return phase
        return None

    def rate_at(self, t: float) -> float:
        phase = self.phase_at(t)
        return phase.rate.at(t) if phase else 0.0

    def processing_ms_at(self, t: float) -> float:
        phase = self.phase_at(t)
        return phase.processing_ms.at(t) if phase else 0.0

    def scheduled(self, t0: float, t1: float, share: float = 1.0) -> float:
        """Messages the schedule asks for in [t0, t1), for a publisher holding `share` of the total rate."""
        return share * sum(p.rate.integral(t0, t1) for p in self.phases)


class OpenLoopSchedule:
    """Intended send times for one publisher holding `share` of the total rate.

    Open loop: message k is due at the time the cumulative schedule reaches k, whatever happened to
    message k-1. A publisher that falls behind sends late and records how late; it never stretches
    the schedule (no coordinated omission). `start_s` delays the publisher (PerfTest's random start).
    """

    def __init__(self, timeline: Timeline, share: float, start_s: float = 0.0) -> None:
        if share <= 0:
            raise ValueError(f"share must be positive, got {share}")
        self._ramps = [p.rate for p in timeline.phases]
        self._share = share
        self._index = 0
        self._base = 0.0  # messages scheduled before the current ramp (for this publisher)
        self._sent = 0
        self.end_s = timeline.duration_s
        self._skip_until(start_s)

    def _skip_until(self, start_s: float) -> None:
        while self._index < len(self._ramps) and self._ramps[self._index].end_s <= start_s:
            self._base += self._share * self._ramps[self._index].integral(-math.inf, math.inf)
            self._index += 1
        if self._index < len(self._ramps):
            ramp = self._ramps[self._index]
            self._sent = math.ceil(self._base + self._share * ramp.integral(ramp.start_s, start_s))

    def next_due(self) -> float | None:
        """Intended send time of the next message, or None when the schedule is over."""
        while self._index < len(self._ramps):
            ramp = self._ramps[self._index]
            need = (self._sent - self._base) / self._share
            total = ramp.integral(ramp.start_s, ramp.end_s)
            if need < total - 1e-9:
                self._sent += 1
                return min(ramp.time_of_integral(need), ramp.end_s)
            self._base += self._share * total
            self._index += 1
        return None


# ------------------------------------------------------------------------------------------ expansion


def _profile_ramps(segments: tuple[ProfileSegment, ...]) -> list[Ramp]:
    ramps, t = [], 0.0
    for seg in segments:
        ramps.append(Ramp(t, seg.duration_s, seg.start, seg.end))
        t += seg.duration_s
    return ramps


def _covering(ramps: list[Ramp], t0: float, t1: float) -> Ramp:
    mid = (t0 + t1) / 2
    for ramp in ramps:
        if ramp.start_s <= mid < ramp.end_s:
            return ramp.sub(t0, t1)
    return ramps[-1].sub(t0, t1)


def _describe(rate: Ramp, processing: Ramp) -> str:
    def part(r: Ramp, unit: str) -> str:
        return f"{r.v0:g}{unit}" if r.v0 == r.v1 else f"{r.v0:g}to{r.v1:g}{unit}"

    return f"rate{part(rate, '')}-proc{part(processing, 'ms')}"


def _phases(scenario: Scenario) -> list[Phase]:
    base_ms = scenario.workload.consumers.processing_ms
    if scenario.step_settings and scenario.step_duration_s is not None:
        d = scenario.step_duration_s
        return [
            Phase(i + 1, setting.label, i * d, d, scenario.warmup_s, Ramp(i * d, d, setting.rate, setting.rate),
                  Ramp(i * d, d, setting.processing_ms, setting.processing_ms), setting)
            for i, setting in enumerate(scenario.step_settings)
        ]
    if scenario.step_rates is not None and scenario.step_duration_s is not None:
        d = scenario.step_duration_s
        total = d * len(scenario.step_rates)
        proc = _profile_ramps(scenario.processing_ms) if scenario.processing_ms else [Ramp(0, total, base_ms, base_ms)]
        return [
            Phase(i + 1, f"rate-{rate:g}", i * d, d, scenario.warmup_s, Ramp(i * d, d, rate, rate),
                  _covering(proc, i * d, (i + 1) * d))
            for i, rate in enumerate(scenario.step_rates)
        ]
    assert scenario.publish_rate is not None
    rate_ramps = _profile_ramps(scenario.publish_rate)
    total = rate_ramps[-1].end_s
    proc = _profile_ramps(scenario.processing_ms) if scenario.processing_ms else [Ramp(0, total, base_ms, base_ms)]
    cuts = sorted({0.0, total, *(r.end_s for r in rate_ramps), *(r.end_s for r in proc)})
    phases = []
    for i, (t0, t1) in enumerate(itertools.pairwise(cuts)):
        rate, processing = _covering(rate_ramps, t0, t1), _covering(proc, t0, t1)
        warmup = min(max(scenario.warmup_s - t0, 0.0), t1 - t0)
        phases.append(Phase(i + 1, f"seg{i + 1}-{_describe(rate, processing)}", t0, t1 - t0, warmup, rate, processing))
    return phases


def _fault_events(scenario: Scenario, phases: list[Phase], nodes: int, seed: int) -> list[FaultEvent]:
    events = []
    for f_index, fault in enumerate(scenario.faults, start=1):
        chosen = [p for p in phases if fault.phases is None or p.number in fault.phases]
        for phase in chosen:
            offset = fault.at_s if fault.at_s is not None else (fault.at_fraction or 0.0) * phase.duration_s
            at = phase.start_s + min(offset, phase.duration_s)
            node = _resolve_node(fault, nodes, random.Random(f"{seed}/{scenario.name}/{phase.number}/{f_index}"))
            heal = at + fault.heal_after_s if fault.heal_after_s is not None else None
            events.append(FaultEvent(
                fault_id=f"p{phase.number:02d}-f{f_index}", kind=fault.kind, phase=phase.number, at_s=at,
                heal_at_s=heal, target="node" if fault.target == "random" else fault.target, node=node,
                queue=fault.queue, params=tuple(sorted(fault.params.items())),
            ))
    return sorted(events, key=lambda e: (e.at_s, e.fault_id))


def _resolve_node(fault: FaultSpec, nodes: int, rng: random.Random) -> int | None:
    if fault.target == "random":
        return rng.randint(1, nodes)
    if fault.target == "node":
        return fault.node
    return None


def expand(scenario: Scenario, nodes: int, seed: int = 2020) -> Timeline:
    """The scenario's concrete timeline on a cluster of `nodes` nodes (random fault targets resolved).

    A search scenario has no timeline ahead of the run (sizing/criteria/search.py picks each probe from the last
    one's verdict): it expands to no phases; `planned_duration_s` gives its worst case.
    """
    if scenario.search is not None:
        return Timeline(scenario.name, (), ())
    phases = _phases(scenario)
    return Timeline(scenario.name, tuple(phases), tuple(_fault_events(scenario, phases, nodes, seed)))


def planned_duration_s(scenario: Scenario) -> float:
    """Seconds of load the scenario plans for: its timeline, or for a search the worst case
    (worst_case_probes x (warm-up + measurement + drain allowance))."""
    if scenario.search is not None:
        return scenario.search.worst_case_s()
    return _phases(scenario)[-1].end_s
