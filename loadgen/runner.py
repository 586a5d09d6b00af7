"""The runner: one scenario of one config against one cluster, recorded phase by phase.

It declares the queues, plans the clients, starts a worker pool (`loadgen.pool`: each worker an IO loop over
a slice of the publishers and consumers), gives the workers one clock (a shared scenario start on the
system-wide monotonic clock), starts the fault injector and the broker sampler, hands every record to the
record sink (`loadgen.sink`, which writes each phase as soon as every worker has reported its last second),
drains, merges the per-message accounting of all workers (`loadgen.accounting`) and closes with a manifest.
A failure anywhere still leaves the records gathered so far in the store, and a non-zero exit code.

The phase, drain and accounting logic (`Runner.drive`) only sees a `Pool` and a `Clock`: unit tests run it
with an in-process fake pool on a fake clock, without a broker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import platform
import secrets
import signal
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from adapters.envelope import enforcement
from adapters.installed import code_commit
from loadgen import accounting
from loadgen.groups import GroupPlan, group_of_publisher, group_of_worker, plan_groups, workers_needed
from loadgen.messages import Done, Event, Ready, Row, Start, WorkerConfig, WorkerError, WorkerMessage
from loadgen.pool import Pool, ProcessPool, RunFailed
from loadgen.recorder import RecordStore
from loadgen.schedule import BatchSchedule, publisher_offsets
from loadgen.sink import RecordSink
from sizing import records, rules
from sizing.cluster import ClusterInfo
from sizing.histogram import merge_wire, quantile_from_counts
from sizing.layout import RunKey
from sizing.spec import CLIENT_LATENCY, RATE_MAX, Campaign
from sizing.timeline import Phase, Timeline, expand

NEMESIS_STOP_TIMEOUT_S = 600  # a rolling restart of 5 nodes under load takes minutes
START_DELAY_S = 0.5  # second 0 lies this far after the start command, so every worker starts on time
STOP_TIMEOUT_S = 30.0
LOG = logging.getLogger("loadgen.runner")

__all__ = ["RunFailed", "RunOptions", "Runner", "SystemClock"]


@dataclass(frozen=True)
class RunOptions:
    workers: int = 1
    out_dir: Path = Path("artifacts/loadgen")
    upload: bool = True
    tick_s: float = 0.005
    drain_timeout_s: float = 30.0
    drain_idle_s: float = 5.0  # stop draining once nothing was consumed for this long
    sample_interval_s: float = 5.0
    node_interval_s: float = 1.0  # node resource rows (loadgen.nodes); 0 = no node sampler
    progress_interval_s: float = 5.0
    ready_timeout_s: float = 60.0
    stream_offset: str = "next"
    purge: bool = True
    io_mode: str = "tick"  # see WorkerConfig.io_mode


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...


class SystemClock:
    monotonic = staticmethod(time.monotonic)
    time = staticmethod(time.time)


class Background(Protocol):
    """The fault injector and the broker sampler, as the runner starts and stops them."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...


class Together:
    """Several background threads started, stopped and joined as one."""

    def __init__(self, parts: list[Background]) -> None:
        self.parts = parts

    def start(self) -> None:
        for part in self.parts:
            part.start()

    def stop(self) -> None:
        for part in self.parts:
            part.stop()

    def join(self, timeout: float | None = None) -> None:
        for part in self.parts:
            part.join(timeout)


def phase_rows(timeline: Timeline, start_epoch: float) -> list[dict[str, Any]]:
    # A max-mode phase has no target: its rate ramp is only the ceiling (sizing.timeline.Phase.rate), recorded as 0.
    return [{"phase": p.number, "phase_name": p.name, "start_s": p.start_s, "duration_s": p.duration_s,
             "warmup_s": p.warmup_s, "target_rate": 0.0 if p.rate_mode == RATE_MAX else p.target_rate,
             "rate_start": p.rate.v0, "rate_end": p.rate.v1,
             "processing_ms_start": p.processing_ms.v0, "processing_ms_end": p.processing_ms.v1,
             "scenario_start_ts": start_epoch, "rate_mode": p.rate_mode, "latency_basis": p.latency_basis}
            for p in timeline.phases]


def last_second_of(phase_end_s: float) -> int:
    """The last whole second whose start lies inside a phase ending at `phase_end_s`."""
    return math.ceil(phase_end_s) - 1


def versions() -> dict[str, str | None]:
    import pika

    return {"python": platform.python_version(), "pika": pika.__version__, "numpy": np.__version__}


class Runner:
    def __init__(self, campaign: Campaign, config_id: str, scenario: str, run_id: str, cluster: ClusterInfo,
                 repeat: int = 1, options: RunOptions | None = None, s3: Any = None,
                 echo: Callable[[str], None] = print, clock: Clock | None = None) -> None:
        self.campaign = campaign
        self.shape = campaign.cluster(config_id)
        self.scenario = campaign.scenario(scenario)
        self.cluster = cluster
        self.options = options or RunOptions()
        if workers_needed(self.scenario, self.options.workers) > self.options.workers:  # a worker per group
            self.options = replace(self.options, workers=workers_needed(self.scenario, self.options.workers))
        self.key = RunKey(campaign.name, config_id, scenario, run_id, repeat)
        self.timeline = expand(self.scenario, self.shape.nodes, campaign.seed)
        self.workload = self.scenario.workload
        self.echo = echo
        self.clock = clock or SystemClock()
        self.nonce = secrets.randbits(32)
        self.store = RecordStore(self.key, Path(self.options.out_dir), upload=self.options.upload, s3=s3)
        self.sink = RecordSink(self.store, self.options.workers)
        # what the workers reported, for progress, the drain and the manifest
        self.max_second: dict[int, int] = {}
        self.e2e_by_phase: dict[int, np.ndarray] = {}  # steady seconds only (the progress line's p99)
        self.totals: dict[str, int] = defaultdict(int)
        self.last_rows: dict[int, Row] = {}
        self.done: dict[int, Done] = {}
        self.errors: list[str] = []
        self.start_mono = 0.0
        self.start_epoch = 0.0
        self.status = "created"
        self.manifest: dict[str, Any] = {}
        self.accounting: list[dict[str, int]] = []
        self.layouts: list[accounting.PublisherLayout] = []
        self.scheduled_total = 0
        # Capacity search (loadgen.search): each probe's workers count seconds from their own Start and run their
        # probe as phase 1; their rows and events are moved onto the scenario clock by this many whole seconds
        # and their phase renumbered by this many (phase 0, outside any phase, stays 0).
        self.second_offset = 0
        self.phase_offset = 0
        self.search_result: Any = None  # sizing.search.SearchResult once a search scenario ran
        self.groups: list[GroupPlan] = []  # issue 14: every workload group (one implicit `main` without groups)
        self.worker_group: dict[int, str] = {}
        # The broker's exact counters before the workers start (adapters.brokercounters), for the manifest's
        # broker_counts: what the broker counted over the run next to the generator's own totals.
        self.counts_before: Any = None
        self.counts_error = ""
        # `client_latency` faults (seed 003's known round-trip time): the workers connect through latency proxies
        # (adapters.latencyproxy), one per node, started in run(); everything else talks to the nodes directly.
        self.proxies: Any = None
        self.proxy_summary: dict[str, Any] | None = None
        self.worker_cluster = cluster

    @property
    def worker_cpu(self) -> dict[int, dict[str, float]]:
        """User/system CPU of each worker process over the whole run, and the messages it published."""
        return {w: {"user_s": d.user_s, "system_s": d.system_s, "published": d.published}
                for w, d in self.done.items()}

    # ------------------------------------------------------------------ clock and events
    def now_s(self) -> float:
        return self.clock.monotonic() - self.start_mono

    def phase_number(self, second: float) -> int:
        phase = self.timeline.phase_at(second)
        return phase.number if phase else 0

    def emit_event(self, event: dict[str, Any]) -> None:
        """Sink for the runner's, the workers' and the fault injector's events (thread-safe)."""
        event = {"fault_id": None, "fault_kind": None, "node": None, "detail": None, **event}
        if isinstance(event.get("detail"), dict):
            event["detail"] = json.dumps(event["detail"], sort_keys=True)
        self.sink.add_event(event)

    def runner_event(self, kind: str, second: float, phase: int | None = None, **detail: Any) -> None:
        self.emit_event({"ts": self.start_epoch + second, "second": second,
                         "phase": self.phase_number(second) if phase is None else phase, "kind": kind,
                         "detail": detail or None})

    def write_phases(self) -> None:
        """The `phases` record of a search so far (a phase per attempt, rewritten after each), per workload group."""
        self.store.write_records("phases", [
            {**row, "group": group.name, "foreground": group.foreground, "group_detail": group.detail}
            for group in self.groups for row in phase_rows(self.timeline, self.start_epoch)])

    def emit_sample(self, row: dict[str, Any]) -> None:
        self.sink.add_sample({**row, "phase": self.phase_number(row["second"])})

    def emit_node_second(self, row: dict[str, Any]) -> None:
        self.sink.add_node_second({**row, "phase": self.phase_number(row["second"])})

    # ------------------------------------------------------------------ the run
    def run(self) -> int:
        """Runs the scenario against the cluster; returns the process exit code (0 = complete)."""
        from loadgen import broker

        def prepare() -> None:
            self.queue_names = [name for group in self.scenario.workload_groups
                                for name in broker.declare_queues(self.cluster, group.workload.queues,
                                                                  purge=self.options.purge)]
            self.manifest["versions"].update(broker.broker_versions(self.cluster))  # read from the running broker
            self.counts_before = self._broker_counts()

        def between_probes() -> int:
            """A search probe's undrained backlog is purged so that the next probe starts from empty queues."""
            if self.workload.queues.type == "stream":  # streams cannot be purged; the probe's nonce filters them
                return 0
            return broker.purge_queues(self.cluster, self.queue_names)

        def sampler() -> Background:
            samplers: list[Background] = [broker.BrokerSampler(
                self.cluster, self.queue_names, self.emit_sample, self.start_mono, self.start_epoch,
                interval_s=self.options.sample_interval_s)]
            if self.options.node_interval_s > 0:
                from loadgen.nodes import NodeSampler

                samplers.append(NodeSampler(self.cluster, self.emit_node_second, self.start_mono, self.start_epoch,
                                            interval_s=self.options.node_interval_s))
            return Together(samplers)

        if any(f.kind == CLIENT_LATENCY for f in self.timeline.faults):
            self._start_proxies()
        try:
            return self.drive(ProcessPool, prepare=prepare,
                              faults=self._fault_injector if self.timeline.faults else None,
                              sampler=sampler, between_probes=between_probes)
        finally:
            self._stop_proxies()

    def _start_proxies(self) -> None:
        from adapters.latencyproxy import ProxySet
        from loadgen.faults.proxy import proxied

        self.proxies = ProxySet([(n.host, n.amqp_port) for n in self.cluster.nodes]).start()
        self.worker_cluster = proxied(self.cluster, self.proxies.ports)

    def _stop_proxies(self) -> dict[str, Any] | None:
        """Stop the proxies (after the workers closed their connections); what they did, their process's CPU as a
        share of one core over its life (the generator's host pays for it, judged as a worker's: sizing.rules)."""
        if self.proxies is None or self.proxy_summary is not None:
            return self.proxy_summary
        self.proxies.stop()
        summary = self.proxies.summary()
        summary["cpu_share"] = round(summary.get("cpu_s", 0.0) / max(summary.get("life_s", 0.0), 1e-9), 4)
        summary["cpu_saturated"] = rules.cpu_saturated(summary["cpu_share"])
        self.proxy_summary = summary
        return summary

    def drive(self, make_pool: Callable[[list[WorkerConfig]], Pool], prepare: Callable[[], None] | None = None,
              faults: Callable[[], Background] | None = None,
              sampler: Callable[[], Background] | None = None,
              between_probes: Callable[[], int] | None = None) -> int:
        """The run around a pool: ready, one clock, phases, drain, stop, final records. Returns the exit code."""
        self.started_at = self.clock.time()
        import pyarrow.parquet  # noqa: F401 - import (seconds on a busy host) before the clock starts
        self.manifest = self._manifest_base()
        self.status = "running"
        self.store.write_manifest({**self.manifest, "status": self.status})
        pool: Pool | None = None
        nemesis = sample_thread = None
        previous = signal.signal(signal.SIGTERM, _raise_interrupt) if threading.current_thread() is \
            threading.main_thread() else None
        try:
            if prepare is not None:
                prepare()
            if self.scenario.search is not None:
                # A search has no timeline ahead of the run: loadgen.search runs one pool per probe.
                from loadgen.search import run_search

                self.start_mono, self.start_epoch = self.clock.monotonic(), self.clock.time()
                self.runner_event("run_start", 0.0, phase=0, workers=self.options.workers, nonce=self.nonce)
                if sampler is not None:
                    sample_thread = sampler()
                    sample_thread.start()
                self.search_result = run_search(self, make_pool, between_probes, START_DELAY_S)
                self.status = "complete"
            else:
                configs = self._plan()
                pool = make_pool(configs)
                self._wait_ready(pool)
                # One clock for every process: the system-wide monotonic clock, second 0 shortly after this.
                self.start_mono = self.clock.monotonic() + START_DELAY_S
                self.start_epoch = self.clock.time() + START_DELAY_S
                if faults is not None:
                    # Started before anything slow (uploads) so that no fault fires late; it waits for its times.
                    nemesis = faults()
                    nemesis.start()
                pool.start(Start(self.start_mono, self.start_epoch))
                # Stamped at scenario second 0 (what it marks), not when this line runs after the first write.
                self.runner_event("run_start", 0.0, phase=0, workers=len(configs), nonce=self.nonce)
                self.store.write_records("phases", self._group_phase_rows())
                if sampler is not None:
                    sample_thread = sampler()
                    sample_thread.start()
                self._follow(pool)
                self._drain(pool)
                self.status = "complete"
        except KeyboardInterrupt:
            self.status = "interrupted"
            self.errors.append("interrupted (SIGINT/SIGTERM)")
        except Exception as err:
            LOG.exception("run failed")
            self.status = "failed"
            self.errors.append(f"{type(err).__name__}: {err}")
        finally:
            for thread in (nemesis, sample_thread):
                if thread is not None:
                    thread.stop()
            if pool is not None:
                self._stop_workers(pool)
            if sample_thread is not None:
                sample_thread.join(timeout=15)
            if nemesis is not None:
                # Stopping heals what is still broken, and a rolling restart finishes node by node: wait for
                # it, so that no node is left down and every heal is recorded.
                nemesis.join(timeout=NEMESIS_STOP_TIMEOUT_S)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self._finish()
        return 0 if self.status == "complete" else 1

    # ------------------------------------------------------------------ the seam a capacity search drives
    # loadgen.search runs each probe as a phase of its own with a pool of its own; these are the runner's steps it
    # drives (loadgen.search.ProbeHost), so the search needs none of the runner's internals.
    def open_attempt(self, make_pool: Callable[[list[WorkerConfig]], Pool], own: Timeline, number: int,
                     not_before_s: int) -> Pool:
        """A fresh, connected pool for attempt `number` of a search: a new nonce (what an earlier probe left
        behind counts as foreign), the workers' phase 1 renumbered as the run's phase `number`, what they report
        before it is placed put on the scenario clock no earlier than `not_before_s`."""
        self.nonce = secrets.randbits(32)
        self.second_offset = max(not_before_s, math.ceil(self.now_s()))
        self.phase_offset = number - 1
        configs = self._plan(own)
        self.done = {}
        pool = make_pool(configs)
        self._wait_ready(pool)
        return pool

    def place_attempt(self, pool: Pool, placed: Phase) -> dict[str, int]:
        """Put the attempt on the scenario clock at its phase's start (a whole second), record the phases so far,
        start the workers; returns the totals at its start (what its drain counts from)."""
        self.second_offset = int(placed.start_s)
        self.timeline = Timeline(self.timeline.scenario, (*self.timeline.phases, placed), ())
        self.write_phases()
        since = dict(self.totals)
        pool.start(Start(self.start_mono + placed.start_s, self.start_epoch + placed.start_s))
        return since

    def follow_attempt(self, pool: Pool, placed: Phase, ready_wait_s: float) -> None:
        """Until the attempt's phase ends and every worker reported its last second (at most `ready_wait_s` more)."""
        self._follow(pool, (placed,))
        deadline = self.clock.monotonic() + ready_wait_s
        while placed.number not in self.sink.written and self.clock.monotonic() < deadline:
            self._pump(pool, 0.2)
            self._write_finished_phases()

    def drain_attempt(self, pool: Pool, drain_s: float, since: dict[str, int]) -> bool:
        """Let the attempt's backlog drain, at most `drain_s`; whether it did."""
        return self._drain(pool, timeout_s=drain_s, since=since)

    def stop_attempt(self, pool: Pool) -> dict[int, Done]:
        """Stop the attempt's workers; what each returned (its CPU and the path of its message books)."""
        self._stop_workers(pool)
        return dict(self.done)

    def account_attempt(self, phase: int, books: dict[int, Done]) -> None:
        """The attempt's loss/duplicate accounting (its own key space) as the rows of its phase."""
        paths = [d.path for d in books.values()]
        if len(paths) == self.options.workers:
            for row in accounting.merge_by_group(paths, self.layouts, self.scheduled_total, 1,
                                                 group_of_publisher(self.groups)):
                self.accounting.append({**row, "phase": phase})
        else:
            self.errors.append(f"accounting of phase {phase} skipped: {len(paths)}/{self.options.workers} workers "
                               f"returned their books")

    def end_search(self, cpu: dict[int, Done]) -> None:
        """Every attempt's worker CPU, summed per worker, as the run's (the manifest's worker_cpu)."""
        self.done = cpu

    def steady_rows(self, phase: int) -> tuple[list[dict[str, Any]], int]:
        """The steady (warm-up excluded) rows the workers reported for `phase`, and its worker_behind events."""
        with self.sink.lock:
            rows = [dict(r) for w in range(self.options.workers) for r in self.sink.rows.get((phase, w), [])
                    if not r["warmup"]]
            behind = sum(1 for e in self.sink.events.get(phase, []) if e.get("kind") == "worker_behind")
        return rows, behind

    def _fault_injector(self) -> Background:
        from loadgen.nemesis import FaultInjector  # lazily: only runs with faults need it

        executor = None
        if self.proxies is not None:
            from loadgen.faults.proxy import ClientLatencyExecutor
            from loadgen.nemesis import default_executor

            executor = ClientLatencyExecutor(
                self.proxies, lambda: default_executor(self.cluster, self.campaign.broker_config))
        return FaultInjector(self.cluster, self.timeline.faults, self.emit_event, self.start_mono,
                             now=self.clock.monotonic, phase_at=self.phase_number,
                             broker_config=self.campaign.broker_config, executor=executor)

    def _group_phase_rows(self) -> list[dict[str, Any]]:
        """The phases record: one row per workload group per phase (issue 14)."""
        return [{**row, "group": group.name, "foreground": group.foreground, "group_detail": group.detail}
                for group in self.groups for row in phase_rows(group.timeline, self.start_epoch)]

    def _plan(self, timeline: Timeline | None = None) -> list[WorkerConfig]:
        """The workers' configs for `timeline` (default: the scenario's; a search probe passes its own)."""
        opts = self.options
        self.groups = plan_groups(self.scenario, timeline or self.timeline, len(self.cluster.nodes), opts.workers,
                                  seed=f"{self.campaign.seed}/{self.key.run_id}/{self.key.repeat}")
        self.worker_group = group_of_worker(self.groups)
        by_worker = {w: group for group in self.groups for w in group.workers}
        publishers = sorted((p for g in self.groups for p in g.publishers), key=lambda p: p.index)
        consumers = [c for g in self.groups for c in g.consumers]
        timeline_of = {p.index: g.timeline for g in self.groups for p in g.publishers}
        schedules = [BatchSchedule(timeline_of[p.index], p.share, p.start_s) for p in publishers]
        offsets = publisher_offsets([s.total for s in schedules])
        self.layouts = [accounting.PublisherLayout(p.index, offsets[p.index], tuple(s.phase_first_seq()))
                        for p, s in zip(publishers, schedules, strict=True)]
        self.scheduled_total = offsets[-1]
        work_dir = Path(self.options.out_dir) / "work" / f"{self.key.run_id}-{self.key.repeat}-{os.getpid()}"
        work_dir.mkdir(parents=True, exist_ok=True)
        return [
            WorkerConfig(worker=w, workers=opts.workers, cluster=self.worker_cluster, workload=by_worker[w].workload,
                         timeline=by_worker[w].timeline, publishers=tuple(p for p in publishers if p.worker == w),
                         consumers=tuple(c for c in consumers if c.worker == w), offsets=tuple(offsets),
                         nonce=self.nonce, out_dir=str(work_dir), tick_s=opts.tick_s,
                         stream_offset=opts.stream_offset, io_mode=opts.io_mode)
            for w in range(opts.workers)
        ]

    def _wait_ready(self, pool: Pool) -> None:
        ready: set[int] = set()
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
                    self._handle(message)

    def _handle(self, message: WorkerMessage) -> None:
        if isinstance(message, Row):
            row, worker = message.record, message.worker
            if self.second_offset or self.phase_offset:
                row["second"] += self.second_offset
                row["phase"] += self.phase_offset if row["phase"] else 0
            row["group"] = self.worker_group.get(worker, records.DEFAULT_GROUP)
            self.sink.add_row(worker, row)
            self.max_second[worker] = max(self.max_second.get(worker, -1), row["second"])
            self.last_rows[worker] = message
            for name in ("published", "confirmed", "nacked", "consumed", "redelivered", "acked"):
                self.totals[name] += row[name]
            self.totals["_foreign"] += message.foreign
            if row["e2e_hist"] and row["phase"] and not row["warmup"]:  # progress p99: steady seconds only
                counts = self.e2e_by_phase.setdefault(row["phase"], np.zeros_like(merge_wire([])))
                counts += merge_wire([row["e2e_hist"]])
        elif isinstance(message, Event):
            if self.second_offset or self.phase_offset:
                message.record["second"] += self.second_offset
                if message.record.get("phase"):
                    message.record["phase"] += self.phase_offset
            self.emit_event(message.record)
        elif isinstance(message, WorkerError):
            raise RunFailed(f"worker {message.worker}: {message.text}")
        elif isinstance(message, Done):
            self.done[message.worker] = message

    def _pump(self, pool: Pool, timeout: float, check_alive: bool = True) -> None:
        for message in pool.receive(timeout):
            self._handle(message)
        if check_alive:
            pool.check_alive()

    def _follow(self, pool: Pool, phases: tuple[Phase, ...] | None = None) -> None:
        """Until the scenario (or the given phases: a search probe) ends: receive rows, write finished phases,
        print progress."""
        phases = self.timeline.phases if phases is None else phases
        duration = phases[-1].end_s if phases else 0.0
        announced_start: set[int] = set()
        announced_end: set[int] = set()
        next_progress = self.options.progress_interval_s
        while True:
            self._pump(pool, 0.2)
            now = self.now_s()
            for phase in phases:
                if now >= phase.start_s and phase.number not in announced_start:
                    announced_start.add(phase.number)
                    self.runner_event("phase_start", phase.start_s, phase=phase.number, name=phase.name,
                                      target_rate=phase.target_rate)
                if now >= phase.end_s and phase.number not in announced_end:
                    announced_end.add(phase.number)
                    self.runner_event("phase_end", phase.end_s, phase=phase.number, name=phase.name)
            self._write_finished_phases()
            if now >= next_progress:
                next_progress += self.options.progress_interval_s
                self.echo(self.progress_line(now))
            if now >= duration and len(announced_end) == len(phases):
                return

    def _drain(self, pool: Pool, timeout_s: float | None = None, since: dict[str, int] | None = None) -> bool:
        """Let consumers catch up with what was confirmed (bounded), so loss is not confused with backlog.
        A search probe passes its own timeout and the totals at its start (`since`). True when drained."""
        opts = self.options
        timeout_s = opts.drain_timeout_s if timeout_s is None else timeout_s
        since = since or {}
        confirms = all(g.workload.publishers.confirms_in_flight > 0 for g in self.scenario.workload_groups)
        deadline = self.clock.monotonic() + timeout_s
        last_consumed, last_change = -1, self.clock.monotonic()
        while self.clock.monotonic() < deadline:
            self._pump(pool, 0.2)
            self._write_finished_phases()
            totals = {k: self.totals[k] - since.get(k, 0) for k in ("consumed", "redelivered", "_foreign",
                                                                    "confirmed", "published")}
            fresh = totals["consumed"] - totals["redelivered"] - totals["_foreign"]
            expected = totals["confirmed"] if confirms else totals["published"]
            in_flight = sum(r.record["in_flight"] for r in self.last_rows.values())
            if fresh >= expected and (in_flight == 0 or not confirms):
                return True
            if fresh != last_consumed:
                last_consumed, last_change = fresh, self.clock.monotonic()
            elif self.clock.monotonic() - last_change > opts.drain_idle_s:
                self.echo(f"drain: nothing consumed for {opts.drain_idle_s:g}s with {expected - fresh} messages "
                          f"outstanding; stopping")
                return False
        self.echo(f"drain: timed out after {timeout_s:g}s")
        return False

    def _stop_workers(self, pool: Pool) -> None:
        pool.stop()
        deadline = self.clock.monotonic() + STOP_TIMEOUT_S
        while len(self.done) < pool.size and self.clock.monotonic() < deadline:
            if pool.finished():
                break
            try:
                self._pump(pool, 0.2, check_alive=False)
            except RunFailed as err:
                self.errors.append(str(err))
        pool.join()
        try:
            self._pump(pool, 0.05, check_alive=False)
        except RunFailed as err:
            self.errors.append(str(err))

    # ------------------------------------------------------------------ records
    def _write_finished_phases(self) -> None:
        if len(self.max_second) < self.options.workers:
            return
        reported = min(self.max_second.values())
        for phase in self.timeline.phases:
            if phase.number not in self.sink.written and reported >= last_second_of(phase.end_s):
                self.sink.flush_phase(phase.number)

    def _finish(self) -> None:
        n_workers = self.options.workers
        self.runner_event("run_end", self.now_s() if self.start_mono else 0.0, phase=0, status=self.status,
                          errors=self.errors[:5])
        paths = {w: d.path for w, d in self.done.items()}
        try:
            if self.start_mono:
                for phase in self.timeline.phases:  # phases cut short by a failure still get what they have
                    if phase.number not in self.sink.written and self.sink.has_rows(phase.number):
                        self.sink.flush_phase(phase.number)
                self.sink.flush_dirty()
            else:
                self.sink.flush("events", 0)
            if self.scenario.search is not None:  # merged probe by probe (loadgen.search)
                self.store.write_records("accounting", self.accounting)
            elif paths and len(paths) == n_workers:
                self.accounting = accounting.merge_by_group(paths.values(), self.layouts, self.scheduled_total,
                                                            len(self.timeline.phases), group_of_publisher(self.groups))
                self.store.write_records("accounting", self.accounting)
            elif self.start_mono:
                self.errors.append(f"accounting skipped: {len(paths)}/{n_workers} workers returned their books")
        except Exception as err:
            LOG.exception("writing the final records failed")
            self.errors.append(f"final records: {type(err).__name__}: {err}")
            if self.status == "complete":
                self.status = "failed"
        if self.store.errors and self.status == "complete":
            self.status = "failed"
            self.errors.append(f"{len(self.store.errors)} upload(s) failed")
        self.manifest.update({
            "status": self.status, "ended_at": self.clock.time(), "scenario_start_ts": self.start_epoch or None,
            "errors": self.errors, "store_errors": self.store.errors[:20],
            "totals": {k: v for k, v in self.totals.items() if not k.startswith("_")},
            "foreign_deliveries": self.totals.get("_foreign", 0), "accounting": self.accounting,
            "worker_cpu": self.worker_cpu,
        })
        if self.search_result is not None:
            self.manifest["search"] = self.search_result.to_dict()
        if self.proxies is not None:
            self.manifest["latency_proxy"] = summary = self._stop_proxies()
            if summary and summary["cpu_saturated"]:
                self.errors.append("the latency proxy saturated a core: the round-trip time was not the one set")
        if self.counts_before is not None or self.counts_error:
            self.manifest["broker_counts"] = self._count_check()
        self.store.write_manifest(self.manifest)
        for path in paths.values():
            with contextlib.suppress(OSError):
                os.remove(path)
        self.echo(self.summary_line())
    def _broker_counts(self) -> Any:
        """Every node's exact counters now (None, and the reason kept, when a node does not answer)."""
        from adapters import brokercounters
        from adapters.nodestats import NodeUnavailable

        try:
            return brokercounters.cluster_counts(self.cluster)
        except NodeUnavailable as err:
            self.counts_error = f"counters not readable: {err}"
            return None

    def _count_check(self) -> dict[str, Any]:
        from adapters import brokercounters
        from loadgen import broker

        after = self._broker_counts() if self.counts_before is not None else None
        counted = brokercounters.counted_between(self.counts_before, after) if after is not None else None
        why = self.counts_error or ("" if counted is not None else "a node restarted during the run (its counters "
                                                                   "started again at 0)")
        acks = not any(group.workload.consumers.auto_ack for group in self.scenario.workload_groups)
        generator = {k: int(self.totals.get(k, 0)) for k in ("published", "confirmed", "consumed")}
        check = broker.count_check(counted, generator, acks, why)
        if check["agrees"] is False:
            self.echo(f"broker counts differ from the generator's ({brokercounters.SOURCE}): "
                      + "; ".join(check["differ"]))
        return check

    # ------------------------------------------------------------------ reporting
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
        in_flight = sum(r.record["in_flight"] for r in self.last_rows.values())
        cpu = sum(r["cpu_s"] for r in rows)
        name = f"{phase.number}/{len(self.timeline.phases)} {phase.name}" if phase else "-"
        return (f"[{now:6.1f}s] phase {name} | second {complete}: target {target:.0f} msg/s, published {published}, "
                f"consumed {consumed} | p99 e2e {p99:.1f} ms (phase so far, warm-up excluded) | "
                f"behind {late * 1000:.0f} ms | "
                f"in flight {in_flight} | loadgen cpu {cpu:.2f} s/s")

    def summary_line(self) -> str:
        lost = sum(r["lost"] for r in self.accounting)
        dups = sum(r["duplicates"] for r in self.accounting)
        return (f"run {self.status}: published {self.totals.get('published', 0)}, confirmed "
                f"{self.totals.get('confirmed', 0)}, consumed {self.totals.get('consumed', 0)}, lost {lost}, "
                f"duplicates {dups}; records under {self.store.local_path('')}"
                + (f"; errors: {'; '.join(self.errors[:3])}" if self.errors else ""))

    def _manifest_base(self) -> dict[str, Any]:
        shape = self.shape
        return {
            "schema_version": records.SCHEMA_VERSION, **self.key.as_dict(), "status": "created",
            "started_at": self.started_at, "host": socket.gethostname(), "pid": os.getpid(),
            "argv": sys.argv, "versions": versions(), "spec_hash": self.campaign.spec_hash,
            "code_commit": code_commit(),
            "config": {"config_id": self.key.config_id, "nodes": shape.nodes, "instance_type": shape.instance_type,
                       "volume": asdict(shape.volume)},
            "scenario": {"name": self.scenario.name, "duration_s": self.timeline.duration_s,
                         "phases": len(self.timeline.phases), "faults": [asdict(f) for f in self.timeline.faults]},
            "workload": _jsonable(asdict(self.workload)),
            "groups": {g.name: {"foreground": g.name == self.scenario.foreground, "hold": g.hold,
                                "workload": _jsonable(asdict(g.workload))} for g in self.scenario.workload_groups},
            "cluster": {"target": self.cluster.target, "cluster_name": self.cluster.cluster_name,
                        "nodes": [n.name for n in self.cluster.nodes],
                        "envelope": enforcement(self.cluster.cluster_dir)},
            "loadgen": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.options).items()},
                        "nonce": self.nonce},
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: dict(v) if hasattr(v, "items") else str(v)))


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
