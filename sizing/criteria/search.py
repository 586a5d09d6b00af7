"""Capacity search: the highest publish rate a cluster sustains within the SLO, found adaptively.

A pure policy (no I/O, no clock) shaped as a state machine the load generator drives:

    search = CapacitySearch(spec)
    while (probe := search.next_probe()) is not None:
        search.record(measure(probe))   # run one phase: warm-up, measurement window, drain
    search.result()

Method: a multiplicative ladder (start, start x growth, ... capped at upper) until the first failing
probe, then bisection between the last pass and the first fail down to the resolution. The pass next to
the boundary is confirmed by a second probe at the same rate; when the confirmation fails, that rate
becomes the new first fail and the bracket widens down to the next lower pass (no guessing). After
`max_disagreements` failed confirmations on top of the first, the search stops as "unstable" and reports
no sustainable rate. A probe's verdict is sizing.criteria.rules.probe_passes.

Every decision is a function of the recorded outcomes alone, so a search can be replayed from its events.
Invariant: the reported sustainable rate is a rate that passed twice and lies below every failing probe.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from sizing.criteria.rules import probe_passes

STAGES = ("ladder", "bisect", "confirm")
# How a search ended. converged: bracket within the resolution, its pass confirmed. at_upper: the upper
# bound passed twice (capacity is at least that). below_start: the start rate already failed. unstable:
# too many confirmations disagreed with their first probe.
STATUSES = ("converged", "at_upper", "below_start", "unstable")


# The events a search records (written by loadgen.search, read by spark_jobs.lib.phase_summary and the tests).
PROBE_EVENT = "search_probe"  # one per probe: the online verdict and the figures it was taken on
RESULT_EVENT = "search_result"


@dataclass(frozen=True)
class SearchSpec:
    """A search scenario's inputs (campaign spec `scenarios[].search`, SLO resolved from the target)."""

    start_rate: float  # msg/s, first probe
    upper_rate: float  # msg/s, never probed above
    resolution: float  # a fraction of the last pass (0.02 = 2 %) when resolution_relative, else msg/s
    resolution_relative: bool
    warmup_s: float  # per probe, excluded from the verdict
    measure_s: float  # per probe, the window the verdict is taken on
    drain_s: float  # per probe, the most the generator waits for a backlog to drain before the next probe
    slo_p99_ms: float
    slo_p999_ms: float | None = None
    growth: float = 2.0  # ladder multiplier
    max_disagreements: int = 1  # failed confirmations tolerated before the search is called unstable

    def resolution_at(self, rate: float) -> float:
        """The bracket width (msg/s) at which the search stops, for a last pass at `rate`."""
        return self.resolution * rate if self.resolution_relative else self.resolution

    def ladder_rates(self) -> tuple[float, ...]:
        rates = [self.start_rate]
        while rates[-1] < self.upper_rate:
            rates.append(min(rates[-1] * self.growth, self.upper_rate))
        return tuple(rates)

    def bisections_per_bracket(self) -> int:
        """Most bisection probes one bracket can take: the widest ladder gap relative to its resolution.

        A bracket after a failed confirmation is never wider than the ladder gap holding its upper end,
        and its lower end is at least that gap's lower rung (every rung below a fail passed), so the
        ladder gaps bound every bracket the search can hold.
        """
        rungs = self.ladder_rates()
        worst = 0
        for lo, hi in itertools.pairwise(rungs):
            ratio = (hi - lo) / self.resolution_at(lo)
            worst = max(worst, math.ceil(math.log2(ratio)) if ratio > 1 else 0)
        return worst

    def worst_case_probes(self) -> int:
        """An upper bound on probes: the whole ladder, then per bracket (the first and one per tolerated
        disagreement) its bisections plus one confirmation. `sizing plan` budgets with it."""
        return len(self.ladder_rates()) + (self.max_disagreements + 1) * (self.bisections_per_bracket() + 1)

    @property
    def probe_s(self) -> float:
        return self.warmup_s + self.measure_s + self.drain_s

    def worst_case_s(self) -> float:
        return self.worst_case_probes() * self.probe_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "start_rate": self.start_rate, "upper_rate": self.upper_rate, "resolution": self.resolution,
            "resolution_relative": self.resolution_relative, "warmup_s": self.warmup_s,
            "measure_s": self.measure_s, "drain_s": self.drain_s, "slo_p99_ms": self.slo_p99_ms,
            "slo_p999_ms": self.slo_p999_ms, "growth": self.growth, "max_disagreements": self.max_disagreements,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchSpec:
        return cls(
            start_rate=float(data["start_rate"]), upper_rate=float(data["upper_rate"]),
            resolution=float(data["resolution"]), resolution_relative=bool(data["resolution_relative"]),
            warmup_s=float(data["warmup_s"]), measure_s=float(data["measure_s"]), drain_s=float(data["drain_s"]),
            slo_p99_ms=float(data["slo_p99_ms"]),
            slo_p999_ms=None if data.get("slo_p999_ms") is None else float(data["slo_p999_ms"]),
            growth=float(data.get("growth", 2.0)), max_disagreements=int(data.get("max_disagreements", 1)),
        )


@dataclass(frozen=True)
class Probe:
    """One phase the generator runs: `rate` msg/s, warm-up then measurement (then a drain)."""

    index: int  # 0-based, in the order the search asked for them
    rate: float
    stage: str  # one of STAGES
    warmup_s: float
    measure_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "rate": self.rate, "stage": self.stage, "warmup_s": self.warmup_s,
                "measure_s": self.measure_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Probe:
        return cls(int(data["index"]), float(data["rate"]), str(data["stage"]), float(data["warmup_s"]),
                   float(data["measure_s"]))


@dataclass(frozen=True)
class ProbeResult:
    """What one probe measured over its measurement window (the inputs of sizing.criteria.rules.probe_passes)."""

    probe: Probe
    confirm_rate: float  # msg/s
    consume_rate: float  # msg/s
    backlog_slope: float  # msg/s per s: least-squares slope of the queue backlog over the window
    p99_ms: float  # end-to-end
    p999_ms: float | None
    valid: bool  # the generator kept up (sizing.criteria.rules.worker_behind never fired in the window)

    def passes(self, spec: SearchSpec) -> bool:
        return probe_passes(target_rate=self.probe.rate, confirm_rate=self.confirm_rate,
                            consume_rate=self.consume_rate, backlog_slope=self.backlog_slope, p99_ms=self.p99_ms,
                            p999_ms=self.p999_ms, valid=self.valid, slo_p99_ms=spec.slo_p99_ms,
                            slo_p999_ms=spec.slo_p999_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"probe": self.probe.to_dict(), "confirm_rate": self.confirm_rate, "consume_rate": self.consume_rate,
                "backlog_slope": self.backlog_slope, "p99_ms": self.p99_ms, "p999_ms": self.p999_ms,
                "valid": self.valid}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(Probe.from_dict(data["probe"]), float(data["confirm_rate"]), float(data["consume_rate"]),
                   float(data["backlog_slope"]), float(data["p99_ms"]),
                   None if data.get("p999_ms") is None else float(data["p999_ms"]), bool(data["valid"]))


@dataclass(frozen=True)
class ProbeOutcome:
    """A probe's measurements and the verdict the search took on them (recorded as an event)."""

    result: ProbeResult
    passed: bool

    @property
    def rate(self) -> float:
        return self.result.probe.rate

    def to_dict(self) -> dict[str, Any]:
        return {"result": self.result.to_dict(), "passed": self.passed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeOutcome:
        return cls(ProbeResult.from_dict(data["result"]), bool(data["passed"]))


@dataclass(frozen=True)
class SearchResult:
    sustainable_rate: float | None  # a confirmed pass below every fail; None when there is none
    last_pass: float | None  # bracket: highest pass below first_fail
    first_fail: float | None  # bracket: lowest failing rate; None when nothing failed (status at_upper)
    probes_used: int
    status: str  # one of STATUSES
    p99_at_sustainable_ms: float | None  # the worst p99 of the passes at the sustainable rate
    outcomes: tuple[ProbeOutcome, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"sustainable_rate": self.sustainable_rate, "last_pass": self.last_pass,
                "first_fail": self.first_fail, "probes_used": self.probes_used, "status": self.status,
                "p99_at_sustainable_ms": self.p99_at_sustainable_ms,
                "outcomes": [o.to_dict() for o in self.outcomes]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        def opt(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(opt("sustainable_rate"), opt("last_pass"), opt("first_fail"), int(data["probes_used"]),
                   str(data["status"]), opt("p99_at_sustainable_ms"),
                   tuple(ProbeOutcome.from_dict(o) for o in data["outcomes"]))


@dataclass(frozen=True)
class _Decision:
    rate: float | None  # the next probe's rate, or None when the search is over
    stage: str = ""
    status: str = ""  # set when over


class CapacitySearch:
    """The search state machine. `next_probe` returns the same probe until it is recorded."""

    def __init__(self, spec: SearchSpec, outcomes: tuple[ProbeOutcome, ...] = ()) -> None:
        self.spec = spec
        self._outcomes: list[ProbeOutcome] = list(outcomes)  # replay: resume from recorded events
        self._pending: Probe | None = None

    @property
    def outcomes(self) -> tuple[ProbeOutcome, ...]:
        return tuple(self._outcomes)

    def next_probe(self) -> Probe | None:
        if self._pending is None:
            decision = self._decide()
            if decision.rate is None:
                return None
            self._pending = Probe(len(self._outcomes), decision.rate, decision.stage, self.spec.warmup_s,
                                  self.spec.measure_s)
        return self._pending

    def record(self, result: ProbeResult) -> ProbeOutcome:
        """Take the verdict on the pending probe's measurements and move on."""
        if self._pending is None or result.probe != self._pending:
            raise ValueError(f"result for {result.probe} but the pending probe is {self._pending}")
        outcome = ProbeOutcome(result, result.passes(self.spec))
        self._outcomes.append(outcome)
        self._pending = None
        return outcome

    def done(self) -> bool:
        return self._pending is None and self._decide().rate is None

    def result(self) -> SearchResult:
        decision = self._decide()
        if decision.rate is not None:
            raise ValueError(f"search not finished: next is a {decision.stage} probe at {decision.rate:g} msg/s")
        lo, hi = self.bracket()
        sustainable = lo if decision.status in ("converged", "at_upper") else None
        p99 = max((o.result.p99_ms for o in self._outcomes if o.passed and o.rate == sustainable), default=None)
        return SearchResult(sustainable, lo, hi, len(self._outcomes), decision.status, p99, tuple(self._outcomes))

    def bracket(self) -> tuple[float | None, float | None]:
        """(last pass below the first fail, first fail) over the outcomes so far; None where there is none yet."""
        fails = [o.rate for o in self._outcomes if not o.passed]
        hi = min(fails) if fails else None
        passes = [o.rate for o in self._outcomes if o.passed and (hi is None or o.rate < hi)]
        return (max(passes) if passes else None), hi

    # ------------------------------------------------------------------------------------------ policy

    def _passes_at(self, rate: float) -> int:
        return sum(1 for o in self._outcomes if o.passed and o.rate == rate)

    def _decide(self) -> _Decision:
        spec = self.spec
        lo, hi = self.bracket()
        disagreements = sum(1 for o in self._outcomes if o.result.probe.stage == "confirm" and not o.passed)
        if disagreements > spec.max_disagreements:
            return _Decision(None, status="unstable")
        if hi is None:  # still climbing: every probe so far passed
            for rung in spec.ladder_rates():
                if self._passes_at(rung) == 0:
                    return _Decision(rung, "ladder")
            if self._passes_at(spec.upper_rate) < 2:
                return _Decision(spec.upper_rate, "confirm")
            return _Decision(None, status="at_upper")
        if lo is None:
            return _Decision(None, status="below_start")
        if hi - lo > spec.resolution_at(lo):
            return _Decision((lo + hi) / 2.0, "bisect")
        if self._passes_at(lo) < 2:
            return _Decision(lo, "confirm")
        return _Decision(None, status="converged")


def backlog_slope(seconds: list[float], published: list[float], acked: list[float]) -> float:
    """Least-squares slope (msg/s per s) of the backlog over a probe's measurement window.

    The backlog is the running sum of published - acked over the window's seconds (all workers summed): every
    message in the system, including those delivered into a consumer's prefetch buffer but not yet processed.
    (Deliveries alone would hide a consumer-bound overload for as long as the prefetch buffers absorb it: at
    4 consumers x prefetch 50, a 5 s probe 6 msg/s above the bound showed no growth at all, measured.) The
    generator computes it online and phase_summary (spark_jobs) from the same client_seconds, with this one
    function. Fewer than two seconds: 0 (no trend can be seen).
    """
    n = len(seconds)
    if n < 2:
        return 0.0
    backlog, level = [], 0.0
    for c, d in zip(published, acked, strict=True):
        level += c - d
        backlog.append(level)
    mean_t, mean_b = sum(seconds) / n, sum(backlog) / n
    var_t = sum((t - mean_t) ** 2 for t in seconds)
    return sum((t - mean_t) * (b - mean_b) for t, b in zip(seconds, backlog, strict=True)) / var_t if var_t else 0.0


def replay(spec: SearchSpec, outcomes: tuple[ProbeOutcome, ...]) -> SearchResult | None:
    """The search's result from recorded outcomes (the analysis passes its recomputed verdicts); None when those
    verdicts would have called for another probe, i.e. the run cannot answer for them."""
    search = CapacitySearch(spec, outcomes)
    return search.result() if search.done() else None
