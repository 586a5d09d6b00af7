"""The capacity search, driven online: sizing.criteria.search.CapacitySearch picks each probe, the generator runs it.

A search has no timeline ahead of the run, and the workers follow a timeline fixed at spawn, so every probe is
a one-phase timeline run as an attempt of its own (loadgen.session: plan, ready, follow, drain, stop): the
probe's warm-up and measurement at its rate, then a drain of its backlog bounded by the search's
`drain_s`; whatever is left is purged before the next probe, which starts from empty queues. Each attempt is a
phase of the run, numbered on from the previous one and placed on the scenario clock after it, so the records of
a search read like those of any scenario (`phases`, `client_seconds`, `events`, `accounting`) and phase_summary
works unchanged: a probe's phase carries its rate as the target.

An attempt the generator could not keep up with (rules.worker_behind or CPU saturation: the phase is not valid)
says nothing about the cluster: it is recorded as inconclusive and run again (at most MAX_INCONCLUSIVE times per
search; after that an invalid attempt counts as a fail). Each verdict is taken from the generator's own
per-second figures of the measurement window, the same figures and formulas phase_summary uses (steady sums over
the steady seconds, merged e2e histograms, sizing.criteria.search.backlog_slope, validity by
sizing.criteria.rules.phase_valid, the analysis' own rule), and recorded as a `search_probe` event with the figures it
used and the bracket after it; the analysis recomputes it from the raw records and the GX gate fails the batch when the
two disagree.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadgen.messages import Done, WorkerConfig
from loadgen.pool import Pool, RunFailed
from loadgen.session import Attempt, Placement, Session
from sizing.contract.histogram import merge_wire, quantile_from_counts
from sizing.criteria.rules import phase_valid
from sizing.criteria.search import (
    PROBE_EVENT,
    RESULT_EVENT,
    CapacitySearch,
    Probe,
    ProbeOutcome,
    ProbeResult,
    SearchResult,
    backlog_slope,
)
from sizing.planning.timeline import Phase, Ramp, Timeline


@dataclass
class SearchRun:
    """What a search leaves the run: its result, every attempt's accounting (on the run's phase numbers) and each
    worker's CPU summed over the attempts."""

    result: SearchResult
    accounting: list[dict[str, Any]]
    cpu: dict[int, Done]


DRAIN_EVENT = "probe_drain"  # what the drain left behind and what was purged
# An attempt during which the generator fell behind (not valid) says nothing about the cluster: it is recorded as
# inconclusive and re-run, at most this many times per search; after that an invalid attempt counts as a fail.
MAX_INCONCLUSIVE = 3
READY_WAIT_S = 5.0  # longest wait for the last second of a probe's phase to arrive before judging it


def probe_phase(probe: Probe, start_s: float, processing_ms: float, name: str, number: int) -> Phase:
    """The probe as one phase: for its workers phase 1 at second 0 (their timeline holds only it), for the run
    phase `number` (the attempt's) at the second it was placed at."""
    duration = probe.warmup_s + probe.measure_s
    return Phase(number, name, start_s, duration, probe.warmup_s,
                 Ramp(start_s, duration, probe.rate, probe.rate),
                 Ramp(start_s, duration, processing_ms, processing_ms))


def phase_name(probe: Probe, number: int) -> str:
    return f"p{number}-probe{probe.index + 1}-{probe.stage}-rate{probe.rate:g}"


def measure(attempt: Attempt, probe: Probe, phase: Phase) -> ProbeResult:
    """The probe's figures over its measurement window, from the per-second rows its attempt's workers reported."""
    rows, behind = attempt.steady_rows(phase.number)
    steady_s = phase.duration_s - phase.warmup_s  # phase_summary's denominator
    per_second: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    cpu: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        per_second[r["second"]][0] += r["published"]
        per_second[r["second"]][1] += r["acked"]
        cpu[r["worker"]].append(r["cpu_s"])
    seconds = sorted(per_second)
    slope = backlog_slope([float(s) for s in seconds], [per_second[s][0] for s in seconds],
                          [per_second[s][1] for s in seconds])
    hists = [r["e2e_hist"] for r in rows if r["e2e_hist"]]
    counts = merge_wire(hists) if hists else None
    has_latency = counts is not None and counts.sum() > 0
    p99 = quantile_from_counts(counts, 0.99) / 1000.0 if has_latency else math.inf
    p999 = quantile_from_counts(counts, 0.999) / 1000.0 if has_latency else math.inf
    worker_cpu_max = max((sum(v) / len(v) for v in cpu.values()), default=0.0)
    valid = phase_valid(not rows, worker_cpu_max, behind)
    return ProbeResult(probe, sum(r["confirmed"] for r in rows) / steady_s, sum(r["consumed"] for r in rows) / steady_s,
                       slope, p99, p999, valid)


def _figures(result: ProbeResult) -> dict[str, Any]:
    return {"probe": result.probe.index, "rate": result.probe.rate, "stage": result.probe.stage,
            "confirm_rate": result.confirm_rate, "consume_rate": result.consume_rate,
            "backlog_slope": result.backlog_slope, "p99_ms": _finite(result.p99_ms),
            "p999_ms": _finite(result.p999_ms), "valid": result.valid}


def _decision_detail(outcome: ProbeOutcome, search: CapacitySearch) -> dict[str, Any]:
    last_pass, first_fail = search.bracket()
    return {**_figures(outcome.result), "passed": outcome.passed, "last_pass": last_pass, "first_fail": first_fail}


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def run_search(session: Session, make_pool: Callable[[list[WorkerConfig]], Pool],
               between_probes: Callable[[], int] | None, start_delay_s: float, errors: list[str]) -> SearchRun:
    """Probe until the policy is done, one attempt per probe; every probe's phase, verdict and drain are recorded.
    The run's clock is set (second 0 is the search's start); a probe starts `start_delay_s` after its workers are
    ready. What goes wrong with an attempt's books goes to `errors`."""
    spec = session.scenario.search
    assert spec is not None
    search = CapacitySearch(spec)
    processing_ms = session.workload.consumers.processing_ms
    cpu: dict[int, Done] = {}
    accounted: list[dict[str, Any]] = []
    next_free_s = 0
    number = 0  # phases of the run: one per attempt (an inconclusive attempt is re-run as a phase of its own)
    inconclusive = 0
    while (probe := search.next_probe()) is not None:
        number += 1
        name = phase_name(probe, number)
        own = Timeline(session.timeline.scenario, (probe_phase(probe, 0.0, processing_ms, name, 1),), ())
        # What its workers report before it is placed lands no earlier than the previous attempt's end.
        attempt = session.open(make_pool, own, placement=Placement(max(next_free_s, math.ceil(session.now_s())),
                                                                    number - 1))
        try:
            offset = max(next_free_s, math.ceil(session.now_s() + start_delay_s))
            placed = probe_phase(probe, float(offset), processing_ms, name, number)
            since = session.place(attempt, placed)
            session.follow_until_written(attempt, placed, READY_WAIT_S)
            result = measure(attempt, probe, placed)
            retry = not result.valid and inconclusive < MAX_INCONCLUSIVE
            if retry:  # the generator fell behind: the attempt says nothing about the cluster; run it again
                inconclusive += 1
                detail = {**_figures(result), "passed": False, "inconclusive": True}
                verdict = "INCONCLUSIVE (generator behind), re-run"
            else:
                outcome = search.record(result)
                detail = {**_decision_detail(outcome, search), "inconclusive": False}
                verdict = "pass" if outcome.passed else "FAIL"
            session.runner_event(PROBE_EVENT, placed.end_s, phase=placed.number, **detail)
            session.echo(f"search probe {probe.index + 1} ({probe.stage}) at {probe.rate:g} msg/s: {verdict} "
                         f"(confirm {detail['confirm_rate']:.1f}, consume {detail['consume_rate']:.1f} msg/s, "
                         f"backlog slope {detail['backlog_slope']:.1f}, p99 {result.p99_ms:.1f} ms, valid "
                         f"{result.valid}); bracket [{detail.get('last_pass')}, {detail.get('first_fail')}]")
            drained = session.drain(attempt, spec.drain_s, since)
        finally:
            books = session.stop(attempt, errors)
        try:
            accounted += attempt.accounting_rows(lambda _own, phase=placed.number: phase)
        except RunFailed as err:
            errors.append(f"accounting of phase {placed.number} skipped: {err}")
        _add_cpu(cpu, books)
        purged = between_probes() if between_probes is not None and not drained else 0
        next_free_s = math.ceil(session.now_s())
        session.runner_event(DRAIN_EVENT, session.now_s(), phase=0, probe=probe.index, drained=drained,
                             purged=purged)
    result = search.result()
    session.runner_event(RESULT_EVENT, session.now_s(), phase=0, status=result.status,
                         sustainable_rate=result.sustainable_rate, last_pass=result.last_pass,
                         first_fail=result.first_fail, probes_used=result.probes_used,
                         worst_case_probes=spec.worst_case_probes(), inconclusive_attempts=inconclusive)
    session.echo(f"search {result.status}: sustainable {result.sustainable_rate} msg/s, bracket "
                 f"[{result.last_pass}, {result.first_fail}], {result.probes_used} probes "
                 f"(worst case {spec.worst_case_probes()}) and {inconclusive} inconclusive re-run(s)")
    return SearchRun(result, accounted, cpu)


def _add_cpu(cpu: dict[int, Done], books: dict[int, Done]) -> None:
    """Each worker's CPU over every attempt so far (each attempt has a pool of its own); its books are spent."""
    for worker, done in books.items():
        before = cpu.get(worker)
        cpu[worker] = done if before is None else Done(worker, "", before.user_s + done.user_s,
                                                       before.system_s + done.system_s,
                                                       before.published + done.published)
        if done.path:
            with contextlib.suppress(OSError):
                os.remove(done.path)
