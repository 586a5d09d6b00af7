"""A run's workers, attempt by attempt, and the recording of what they report.

Jepsen's interpreter is the model: one loop drives the workers (`Session`), and everything they report goes into a
history the analysis reads later (`Recording`). A fixed timeline is one attempt; a capacity search (loadgen.search)
one attempt per probe. Each attempt is a value of its own (`Attempt`: its pool, nonce, workers' groups and message
key layout, where its seconds and phases land on the run's clock, what each worker returned, its steady rows), so
nothing of one attempt is rewritten for the next and a search reads its probe's figures from its attempt, not back
out of the recording.

The session only sees a `Pool` and a `Clock`: unit tests run it with an in-process fake pool on a fake clock.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from loadgen import accounting
from loadgen.groups import GroupPlan, group_of_publisher, group_of_worker, plan_groups
from loadgen.messages import Done, Event, Ready, Row, Start, WorkerConfig, WorkerError, WorkerMessage
from loadgen.pool import Pool, RunFailed
from loadgen.recorder import RecordStore
from loadgen.schedule import BatchSchedule, publisher_offsets
from loadgen.sink import RecordSink
from sizing.campaign import RATE_MAX, Scenario
from sizing.contract import records
from sizing.contract.histogram import merge_wire, quantile_from_counts
from sizing.contract.layout import RunKey
from sizing.planning.timeline import Phase, Timeline
from sizing.resources.cluster import ClusterInfo

STOP_TIMEOUT_S = 30.0
TOTALS = ("published", "confirmed", "nacked", "consumed", "redelivered", "acked")


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...


def last_second_of(phase_end_s: float) -> int:
    """The last whole second whose start lies inside a phase ending at `phase_end_s`."""
    return math.ceil(phase_end_s) - 1


def phase_rows(timeline: Timeline, start_epoch: float) -> list[dict[str, Any]]:
    # A max-mode phase has no target: its rate ramp is only the ceiling (sizing.planning.timeline.Phase.rate), recorded
    # as 0.
    return [{"phase": p.number, "phase_name": p.name, "start_s": p.start_s, "duration_s": p.duration_s,
             "warmup_s": p.warmup_s, "target_rate": 0.0 if p.rate_mode == RATE_MAX else p.target_rate,
             "rate_start": p.rate.v0, "rate_end": p.rate.v1,
             "processing_ms_start": p.processing_ms.v0, "processing_ms_end": p.processing_ms.v1,
             "scenario_start_ts": start_epoch, "rate_mode": p.rate_mode, "latency_basis": p.latency_basis}
            for p in timeline.phases]


# ------------------------------------------------------------------------------------------------ the recording
class Recording:
    """What the run's workers, fault injector and samplers reported, on the run's clock: the record sink (written
    phase by phase), the running totals, each worker's last row and the steady latency per phase (progress and
    drain read them). Thread-safe where the sink is: the injector and the samplers add from their own threads."""

    def __init__(self, store: RecordStore, workers: int, timeline: Timeline, clock: Clock) -> None:
        self.store = store
        self.sink = RecordSink(store, workers)
        self.workers = workers
        self.timeline = timeline  # the run's phases so far (a search adds one per attempt)
        self.clock = clock
        self.start_mono = 0.0
        self.start_epoch = 0.0
        self.groups: list[GroupPlan] = []  # the workload groups, as the latest attempt planned them
        self.totals: dict[str, int] = defaultdict(int)
        self.max_second: dict[int, int] = {}
        self.last_rows: dict[int, Row] = {}
        self.e2e_by_phase: dict[int, np.ndarray] = {}  # steady seconds only (the progress line's p99)

    def now_s(self) -> float:
        return self.clock.monotonic() - self.start_mono

    def phase_number(self, second: float) -> int:
        phase = self.timeline.phase_at(second)
        return phase.number if phase else 0

    # -- what arrives
    def event(self, event: dict[str, Any]) -> None:
        """The runner's, the workers' and the fault injector's events."""
        event = {"fault_id": None, "fault_kind": None, "node": None, "detail": None, **event}
        if isinstance(event.get("detail"), dict):
            event["detail"] = json.dumps(event["detail"], sort_keys=True)
        self.sink.add_event(event)

    def runner_event(self, kind: str, second: float, phase: int | None = None, **detail: Any) -> None:
        self.event({"ts": self.start_epoch + second, "second": second,
                    "phase": self.phase_number(second) if phase is None else phase, "kind": kind,
                    "detail": detail or None})

    def sample(self, row: dict[str, Any]) -> None:
        self.sink.add_sample({**row, "phase": self.phase_number(row["second"])})

    def node_second(self, row: dict[str, Any]) -> None:
        self.sink.add_node_second({**row, "phase": self.phase_number(row["second"])})

    def row(self, message: Row) -> None:
        """A worker's second, already on the run's clock."""
        row, worker = message.record, message.worker
        self.sink.add_row(worker, row)
        self.max_second[worker] = max(self.max_second.get(worker, -1), row["second"])
        self.last_rows[worker] = message
        for name in TOTALS:
            self.totals[name] += row[name]
        self.totals["_foreign"] += row["foreign"]
        if row["e2e_hist"] and row["phase"] and not row["warmup"]:  # progress p99: steady seconds only
            counts = self.e2e_by_phase.setdefault(row["phase"], np.zeros_like(merge_wire([])))
            counts += merge_wire([row["e2e_hist"]])

    # -- what is written
    def write_phases(self, own_timelines: bool) -> None:
        """The `phases` record so far: one row per workload group per phase (issue 14). A fixed timeline's groups
        each follow their own schedule (`own_timelines`); a search's phases are its attempts, the same for all."""
        self.store.write_records("phases", [
            {**row, "group": group.name, "foreground": group.foreground, "group_detail": group.detail}
            for group in self.groups
            for row in phase_rows(group.timeline if own_timelines else self.timeline, self.start_epoch)])

    def write_finished_phases(self) -> None:
        """Every phase whose last second every worker has reported."""
        if len(self.max_second) < self.workers:
            return
        reported = min(self.max_second.values())
        for phase in self.timeline.phases:
            if phase.number not in self.sink.written and reported >= last_second_of(phase.end_s):
                self.sink.flush_phase(phase.number)

    def flush_all(self) -> None:
        """At the end: the phases cut short by a failure get what they have, then whatever changed since."""
        if self.start_mono:
            for phase in self.timeline.phases:
                if phase.number not in self.sink.written and self.sink.has_rows(phase.number):
                    self.sink.flush_phase(phase.number)
            self.sink.flush_dirty()
        else:
            self.sink.flush("events", 0)

    # -- what is shown
    def in_flight(self) -> int:
        return sum(r.record["in_flight"] for r in self.last_rows.values())

    def progress_line(self, now: float) -> str:
        phase = self.timeline.phase_at(min(now, self.timeline.duration_s - 1e-9))
        complete = min(self.max_second.values()) if self.max_second else -1
        with self.sink.lock:
            rows = [r for (_p, _w), rs in self.sink.rows.items() for r in rs if r["second"] == complete]
        published = sum(r["published"] for r in rows)
        consumed = sum(r["consumed"] for r in rows)
        timelines = [g.timeline for g in self.groups] or [self.timeline]  # every workload group's schedule
        target = sum(t.scheduled(complete, complete + 1) for t in timelines) if complete >= 0 else 0.0
        counts = self.e2e_by_phase.get(phase.number) if phase else None
        p99 = quantile_from_counts(counts, 0.99) / 1000 if counts is not None and counts.sum() else float("nan")
        late = max((r.late_s for r in self.last_rows.values()), default=0.0)
        cpu = sum(r["cpu_s"] for r in rows)
        name = f"{phase.number}/{len(self.timeline.phases)} {phase.name}" if phase else "-"
        return (f"[{now:6.1f}s] phase {name} | second {complete}: target {target:.0f} msg/s, published {published}, "
                f"consumed {consumed} | p99 e2e {p99:.1f} ms (phase so far, warm-up excluded) | "
                f"behind {late * 1000:.0f} ms | "
                f"in flight {self.in_flight()} | loadgen cpu {cpu:.2f} s/s")


# -------------------------------------------------------------------------------------------------- an attempt
@dataclass(frozen=True)
class Placement:
    """Where an attempt's own clock lands on the run's: its workers count seconds from their own Start and number
    their phases from 1; the run sees them this many whole seconds later and phases renumbered by this many (phase
    0, outside any phase, stays 0). A fixed timeline's attempt is placed at (0, 0)."""

    second_offset: int = 0
    phase_offset: int = 0

    def place(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.second_offset or self.phase_offset:
            record["second"] += self.second_offset
            if record.get("phase"):
                record["phase"] += self.phase_offset
        return record


@dataclass
class WorkerPlan:
    """The workers of one attempt: their configs, the workload groups, and the key layout accounting merges by."""

    configs: list[WorkerConfig]
    groups: list[GroupPlan]
    layouts: list[accounting.PublisherLayout]
    scheduled_total: int

    @property
    def worker_group(self) -> dict[int, str]:
        return group_of_worker(self.groups)


def plan_workers(scenario: Scenario, timeline: Timeline, cluster: ClusterInfo, key: RunKey, seed: int | str,
                 workers: int, nonce: int, out_dir: Path, tick_s: float, stream_offset: str,
                 io_mode: str) -> WorkerPlan:
    """The workers' configs for `timeline` (the scenario's, or a search probe's own)."""
    groups = plan_groups(scenario, timeline, len(cluster.nodes), workers, seed=f"{seed}/{key.run_id}/{key.repeat}")
    by_worker = {w: group for group in groups for w in group.workers}
    publishers = sorted((p for g in groups for p in g.publishers), key=lambda p: p.index)
    consumers = [c for g in groups for c in g.consumers]
    timeline_of = {p.index: g.timeline for g in groups for p in g.publishers}
    schedules = [BatchSchedule(timeline_of[p.index], p.share, p.start_s) for p in publishers]
    offsets = publisher_offsets([s.total for s in schedules])
    layouts = [accounting.PublisherLayout(p.index, offsets[p.index], tuple(s.phase_first_seq()))
               for p, s in zip(publishers, schedules, strict=True)]
    work_dir = out_dir / "work" / f"{key.run_id}-{key.repeat}-{os.getpid()}"
    work_dir.mkdir(parents=True, exist_ok=True)
    configs = [
        WorkerConfig(worker=w, workers=workers, cluster=cluster, workload=by_worker[w].workload,
                     timeline=by_worker[w].timeline, publishers=tuple(p for p in publishers if p.worker == w),
                     consumers=tuple(c for c in consumers if c.worker == w), offsets=tuple(offsets),
                     nonce=nonce, out_dir=str(work_dir), tick_s=tick_s, stream_offset=stream_offset, io_mode=io_mode)
        for w in range(workers)
    ]
    return WorkerPlan(configs, groups, layouts, offsets[-1])


@dataclass
class Attempt:
    """One pool of workers over one timeline, and what it reported."""

    pool: Pool
    plan: WorkerPlan
    phases: int  # how many phases its own timeline has
    placement: Placement = Placement()
    done: dict[int, Done] = field(default_factory=dict)  # what each worker returned when it stopped
    steady: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))  # run phase -> rows
    behind: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # run phase -> worker_behind events

    def steady_rows(self, phase: int) -> tuple[list[dict[str, Any]], int]:
        """The steady (warm-up excluded) rows its workers reported for run phase `phase`, and its worker_behind
        events."""
        return [dict(r) for r in self.steady.get(phase, [])], self.behind.get(phase, 0)

    def accounting_rows(self, run_phase_of: Callable[[int], int] = lambda phase: phase) -> list[dict[str, Any]]:
        """Its loss/duplicate accounting per phase (its own key space), phases on the run's numbering; raises
        RunFailed when a worker did not return its books."""
        paths = [d.path for d in self.done.values()]
        if len(paths) != self.pool.size:
            raise RunFailed(f"{len(paths)}/{self.pool.size} workers returned their books")
        return [{**row, "phase": run_phase_of(row["phase"])} for row in accounting.merge_by_group(
            paths, self.plan.layouts, self.plan.scheduled_total, self.phases, group_of_publisher(self.plan.groups))]


# --------------------------------------------------------------------------------------------------- the session
class Session:
    """Runs attempts against one cluster: plans and opens each attempt's pool, starts it on the run's clock, follows
    it phase by phase, drains and stops it, handing everything its workers report to the recording."""

    def __init__(self, scenario: Scenario, key: RunKey, seed: int | str, cluster: ClusterInfo, options: Any,
                 recording: Recording, clock: Clock, echo: Callable[[str], None]) -> None:
        self.scenario = scenario
        self.workload = scenario.workload
        self.key = key
        self.seed = seed
        self.cluster = cluster  # what the workers connect to (the latency proxies, when the run has them)
        self.options = options
        self.recording = recording
        self.clock = clock
        self.echo = echo

    @property
    def timeline(self) -> Timeline:
        return self.recording.timeline

    def now_s(self) -> float:
        return self.recording.now_s()

    def runner_event(self, kind: str, second: float, phase: int | None = None, **detail: Any) -> None:
        self.recording.runner_event(kind, second, phase, **detail)

    # -- an attempt's life
    def plan(self, timeline: Timeline, nonce: int) -> WorkerPlan:
        opts = self.options
        return plan_workers(self.scenario, timeline, self.cluster, self.key, self.seed, opts.workers, nonce,
                            Path(opts.out_dir), opts.tick_s, opts.stream_offset, opts.io_mode)

    def open(self, make_pool: Callable[[list[WorkerConfig]], Pool], timeline: Timeline, nonce: int | None = None,
             placement: Placement = Placement()) -> Attempt:
        """A connected pool over `timeline`; a fresh nonce unless given (what an earlier attempt left behind then
        counts as foreign)."""
        plan = self.plan(timeline, secrets.randbits(32) if nonce is None else nonce)
        self.recording.groups = plan.groups
        attempt = Attempt(make_pool(plan.configs), plan, len(timeline.phases), placement)
        self.wait_ready(attempt)
        return attempt

    def start(self, attempt: Attempt, at_s: float = 0.0) -> dict[str, int]:
        """Start its workers at run second `at_s`; the totals at its start (what its drain counts from)."""
        since = dict(self.recording.totals)
        attempt.pool.start(Start(self.recording.start_mono + at_s, self.recording.start_epoch + at_s))
        return since

    def place(self, attempt: Attempt, placed: Phase) -> dict[str, int]:
        """A search attempt: its phase joins the run's timeline at a whole second, the phases so far are recorded,
        its workers start there."""
        attempt.placement = Placement(int(placed.start_s), placed.number - 1)
        recording = self.recording
        recording.timeline = Timeline(recording.timeline.scenario, (*recording.timeline.phases, placed), ())
        recording.write_phases(own_timelines=False)
        return self.start(attempt, placed.start_s)

    def wait_ready(self, attempt: Attempt) -> None:
        pool, ready = attempt.pool, set()
        deadline = self.clock.monotonic() + self.options.ready_timeout_s
        while len(ready) < pool.size:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                raise RunFailed(f"workers {sorted(set(range(pool.size)) - ready)} not connected after "
                                f"{self.options.ready_timeout_s:g}s")
            messages = pool.receive(min(remaining, 1.0))
            if not messages:
                pool.check_alive()
            for message in messages:
                if isinstance(message, Ready):
                    ready.add(message.worker)
                else:
                    self.handle(attempt, message)

    def handle(self, attempt: Attempt, message: WorkerMessage) -> None:
        if isinstance(message, Row):
            row = attempt.placement.place(message.record)
            row["group"] = attempt.plan.worker_group.get(message.worker, records.DEFAULT_GROUP)
            self.recording.row(message)
            if row["phase"] and not row["warmup"]:
                attempt.steady[row["phase"]].append(row)
        elif isinstance(message, Event):
            event = attempt.placement.place(message.record)
            if event.get("kind") == "worker_behind":
                attempt.behind[int(event.get("phase") or 0)] += 1
            self.recording.event(event)
        elif isinstance(message, WorkerError):
            raise RunFailed(f"worker {message.worker}: {message.text}")
        elif isinstance(message, Done):
            attempt.done[message.worker] = message

    def pump(self, attempt: Attempt, timeout: float, check_alive: bool = True) -> None:
        for message in attempt.pool.receive(timeout):
            self.handle(attempt, message)
        if check_alive:
            attempt.pool.check_alive()

    def follow(self, attempt: Attempt, phases: tuple[Phase, ...] | None = None) -> None:
        """Until the run's timeline (or the given phases: a search probe) ends: receive rows, write finished
        phases, print progress."""
        recording = self.recording
        phases = recording.timeline.phases if phases is None else phases
        duration = phases[-1].end_s if phases else 0.0
        announced_start: set[int] = set()
        announced_end: set[int] = set()
        next_progress = self.options.progress_interval_s
        while True:
            self.pump(attempt, 0.2)
            now = self.now_s()
            for phase in phases:
                if now >= phase.start_s and phase.number not in announced_start:
                    announced_start.add(phase.number)
                    self.runner_event("phase_start", phase.start_s, phase=phase.number, name=phase.name,
                                      target_rate=phase.target_rate)
                if now >= phase.end_s and phase.number not in announced_end:
                    announced_end.add(phase.number)
                    self.runner_event("phase_end", phase.end_s, phase=phase.number, name=phase.name)
            recording.write_finished_phases()
            if now >= next_progress:
                next_progress += self.options.progress_interval_s
                self.echo(recording.progress_line(now))
            if now >= duration and len(announced_end) == len(phases):
                return

    def follow_until_written(self, attempt: Attempt, placed: Phase, ready_wait_s: float) -> None:
        """A search attempt: until its phase ends and every worker reported its last second (at most
        `ready_wait_s` more)."""
        self.follow(attempt, (placed,))
        deadline = self.clock.monotonic() + ready_wait_s
        while placed.number not in self.recording.sink.written and self.clock.monotonic() < deadline:
            self.pump(attempt, 0.2)
            self.recording.write_finished_phases()

    def drain(self, attempt: Attempt, timeout_s: float | None = None, since: dict[str, int] | None = None) -> bool:
        """Let consumers catch up with what was confirmed (bounded), so loss is not confused with backlog. A search
        attempt passes its own timeout and the totals at its start (`since`). True when drained."""
        opts, recording = self.options, self.recording
        timeout_s = opts.drain_timeout_s if timeout_s is None else timeout_s
        since = since or {}
        confirms = all(g.workload.publishers.confirms_in_flight > 0 for g in self.scenario.workload_groups)
        deadline = self.clock.monotonic() + timeout_s
        last_consumed, last_change = -1, self.clock.monotonic()
        while self.clock.monotonic() < deadline:
            self.pump(attempt, 0.2)
            recording.write_finished_phases()
            totals = {k: recording.totals[k] - since.get(k, 0) for k in ("consumed", "redelivered", "_foreign",
                                                                         "confirmed", "published")}
            fresh = totals["consumed"] - totals["redelivered"] - totals["_foreign"]
            expected = totals["confirmed"] if confirms else totals["published"]
            if fresh >= expected and (recording.in_flight() == 0 or not confirms):
                return True
            if fresh != last_consumed:
                last_consumed, last_change = fresh, self.clock.monotonic()
            elif self.clock.monotonic() - last_change > opts.drain_idle_s:
                self.echo(f"drain: nothing consumed for {opts.drain_idle_s:g}s with {expected - fresh} messages "
                          f"outstanding; stopping")
                return False
        self.echo(f"drain: timed out after {timeout_s:g}s")
        return False

    def stop(self, attempt: Attempt, errors: list[str]) -> dict[int, Done]:
        """Stop its workers and collect what each returned (its CPU and the path of its message books); what went
        wrong on the way goes to `errors`."""
        pool = attempt.pool
        pool.stop()
        deadline = self.clock.monotonic() + STOP_TIMEOUT_S
        while len(attempt.done) < pool.size and self.clock.monotonic() < deadline:
            if pool.finished():
                break
            try:
                self.pump(attempt, 0.2, check_alive=False)
            except RunFailed as err:
                errors.append(str(err))
        pool.join()
        try:
            self.pump(attempt, 0.05, check_alive=False)
        except RunFailed as err:
            errors.append(str(err))
        return dict(attempt.done)
