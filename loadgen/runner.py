"""The runner: one scenario of one config against one cluster, recorded phase by phase.

It declares the queues, plans the clients, starts N worker processes (each an IO loop over a slice of the
publishers and consumers), gives them one clock (a shared scenario start on the system-wide monotonic
clock), starts the fault injector and the broker sampler, writes and uploads each phase's records as soon as
every worker has reported its last second, drains, merges the per-message accounting of all workers and
closes with a manifest. A failure anywhere still leaves the records gathered so far in the store, and a
non-zero exit code.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import multiprocessing as mp
import os
import platform
import queue as queue_module
import secrets
import signal
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from loadgen import broker
from loadgen.client import WorkerConfig, worker_main
from loadgen.recorder import PublisherBook, RecordStore, account, merge_consumed
from loadgen.schedule import BatchSchedule, plan_clients, publisher_offsets
from sizing import records
from sizing.cluster import ClusterInfo
from sizing.histogram import merge_wire, quantile_from_counts
from sizing.layout import RunKey
from sizing.spec import Campaign
from sizing.timeline import Timeline, expand

NEMESIS_STOP_TIMEOUT_S = 600  # a rolling restart of 5 nodes under load takes minutes
LOG = logging.getLogger("loadgen.runner")


@dataclass(frozen=True)
class RunOptions:
    workers: int = 1
    out_dir: Path = Path("artifacts/loadgen")
    upload: bool = True
    tick_s: float = 0.005
    drain_timeout_s: float = 30.0
    drain_idle_s: float = 5.0  # stop draining once nothing was consumed for this long
    sample_interval_s: float = 5.0
    progress_interval_s: float = 5.0
    ready_timeout_s: float = 60.0
    stream_offset: str = "next"
    purge: bool = True
    io_mode: str = "tick"  # see WorkerConfig.io_mode


class RunFailed(RuntimeError):
    pass


def phase_rows(timeline: Timeline, start_epoch: float) -> list[dict[str, Any]]:
    return [{"phase": p.number, "phase_name": p.name, "start_s": p.start_s, "duration_s": p.duration_s,
             "warmup_s": p.warmup_s, "target_rate": p.target_rate, "rate_start": p.rate.v0, "rate_end": p.rate.v1,
             "processing_ms_start": p.processing_ms.v0, "processing_ms_end": p.processing_ms.v1,
             "scenario_start_ts": start_epoch} for p in timeline.phases]


def last_second_of(phase_end_s: float) -> int:
    """The last whole second whose start lies inside a phase ending at `phase_end_s`."""
    return math.ceil(phase_end_s) - 1


def versions() -> dict[str, str | None]:
    import pika

    return {"python": platform.python_version(), "pika": pika.__version__, "numpy": np.__version__}


class Runner:
    def __init__(self, campaign: Campaign, config_id: str, scenario: str, run_id: str, cluster: ClusterInfo,
                 repeat: int = 1, options: RunOptions | None = None, s3: Any = None,
                 echo: Callable[[str], None] = print) -> None:
        self.campaign = campaign
        self.shape = campaign.cluster(config_id)
        self.scenario = campaign.scenario(scenario)
        self.cluster = cluster
        self.options = options or RunOptions()
        self.key = RunKey(campaign.name, config_id, scenario, run_id, repeat)
        self.timeline = expand(self.scenario, self.shape.nodes, campaign.seed)
        self.workload = self.scenario.workload
        self.echo = echo
        self.nonce = secrets.randbits(32)
        self.store = RecordStore(self.key, Path(self.options.out_dir), upload=self.options.upload, s3=s3)
        self.lock = threading.Lock()
        self.rows: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)  # (phase, worker) -> rows
        self.events: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.samples: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.dirty: set[tuple[str, int]] = set()
        self.written_phases: set[int] = set()
        self.max_second: dict[int, int] = {}
        self.e2e_by_phase: dict[int, np.ndarray] = {}
        self.totals: dict[str, int] = defaultdict(int)
        self.last_rows: dict[int, dict[str, Any]] = {}
        self.errors: list[str] = []
        self.start_mono = 0.0
        self.start_epoch = 0.0
        self.status = "created"
        self.manifest: dict[str, Any] = {}
        self.accounting: list[dict[str, int]] = []
        self.worker_cpu: dict[int, dict[str, float]] = {}  # user/system CPU of each worker process, whole run

    # ------------------------------------------------------------------ clock and events
    def now_s(self) -> float:
        return time.monotonic() - self.start_mono

    def phase_number(self, second: float) -> int:
        phase = self.timeline.phase_at(second)
        return phase.number if phase else 0

    def emit_event(self, event: dict[str, Any]) -> None:
        """Sink for the runner's, the workers' and the fault injector's events (thread-safe)."""
        event = {"fault_id": None, "fault_kind": None, "node": None, "detail": None, **event}
        if isinstance(event.get("detail"), dict):
            event["detail"] = json.dumps(event["detail"], sort_keys=True)
        phase = int(event.get("phase") or 0)
        with self.lock:
            self.events[phase].append(event)
            if phase in self.written_phases or phase == 0:
                self.dirty.add(("events", phase))

    def runner_event(self, kind: str, second: float, phase: int | None = None, **detail: Any) -> None:
        self.emit_event({"ts": self.start_epoch + second, "second": second,
                         "phase": self.phase_number(second) if phase is None else phase, "kind": kind,
                         "detail": detail or None})

    def emit_sample(self, row: dict[str, Any]) -> None:
        phase = self.phase_number(row["second"])
        with self.lock:
            self.samples[phase].append({**row, "phase": phase})
            if phase in self.written_phases or phase == 0:
                self.dirty.add(("broker_samples", phase))

    # ------------------------------------------------------------------ the run
    def run(self) -> int:
        """Runs the scenario; returns the process exit code (0 = complete)."""
        self.started_at = time.time()
        import pyarrow.parquet  # noqa: F401 - import (seconds on a busy host) before the clock starts
        self.manifest = self._manifest_base()
        self.status = "running"
        self.store.write_manifest({**self.manifest, "status": self.status})
        procs: list[Any] = []
        ctl: list[Any] = []
        nemesis = sampler = None
        previous = signal.signal(signal.SIGTERM, _raise_interrupt) if threading.current_thread() is \
            threading.main_thread() else None
        try:
            names = broker.declare_queues(self.cluster, self.workload.queues, purge=self.options.purge)
            self.manifest["versions"]["rabbitmq"] = broker.rabbitmq_version(self.cluster)
            books, configs = self._plan()
            ctx = mp.get_context("spawn")
            out = ctx.Queue()
            for cfg in configs:
                parent_end, child_end = ctx.Pipe()
                proc = ctx.Process(target=worker_main, args=(cfg, child_end, out), name=f"loadgen-w{cfg.worker}",
                                   daemon=True)
                proc.start()
                procs.append(proc)
                ctl.append(parent_end)
            self.out = out
            self._wait_ready(procs)
            # One clock for every process: the system-wide monotonic clock, second 0 shortly after this.
            self.start_mono = time.monotonic() + 0.5
            self.start_epoch = time.time() + (self.start_mono - time.monotonic())
            if self.timeline.faults:
                # Started before anything slow (uploads) so that no fault fires late; it waits for its times.
                nemesis = self._fault_injector()
                nemesis.start()
            for end in ctl:
                end.send(("start", self.start_mono, self.start_epoch))
            # Stamped at scenario second 0 (what it marks), not when this line runs after the first write.
            self.runner_event("run_start", 0.0, phase=0, workers=len(configs), nonce=self.nonce)
            self.store.write_records("phases", phase_rows(self.timeline, self.start_epoch))
            sampler = broker.BrokerSampler(self.cluster, names, self.emit_sample, self.start_mono, self.start_epoch,
                                           interval_s=self.options.sample_interval_s)
            sampler.start()
            self._follow(procs)
            self._drain(procs)
            self.status = "complete"
        except KeyboardInterrupt:
            self.status = "interrupted"
            self.errors.append("interrupted (SIGINT/SIGTERM)")
        except Exception as err:
            LOG.exception("run failed")
            self.status = "failed"
            self.errors.append(f"{type(err).__name__}: {err}")
        finally:
            for thread in (nemesis, sampler):
                if thread is not None:
                    thread.stop()
            paths = self._stop_workers(procs, ctl)
            if sampler is not None:
                sampler.join(timeout=15)
            if nemesis is not None:
                # Stopping heals what is still broken, and a rolling restart finishes node by node: wait for
                # it, so that no node is left down and every heal is recorded.
                nemesis.join(timeout=NEMESIS_STOP_TIMEOUT_S)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self._finish(paths, locals().get("books"))
        return 0 if self.status == "complete" else 1

    def _fault_injector(self) -> Any:
        from loadgen.nemesis import FaultInjector  # lazily: only runs with faults need it

        def phase_at(second: float) -> int:
            phase = self.timeline.phase_at(second)
            return phase.number if phase else 0

        return FaultInjector(self.cluster, self.timeline.faults, self.emit_event, self.start_mono,
                             now=time.monotonic, phase_at=phase_at, broker_config=self.campaign.broker_config)

    def _plan(self) -> tuple[list[PublisherBook], list[WorkerConfig]]:
        opts = self.options
        publishers, consumers = plan_clients(self.workload, len(self.cluster.nodes), opts.workers,
                                             seed=f"{self.campaign.seed}/{self.key.run_id}/{self.key.repeat}")
        schedules = [BatchSchedule(self.timeline, p.share, p.start_s) for p in publishers]
        offsets = publisher_offsets([s.total for s in schedules])
        self.books_meta = [(p.index, offsets[p.index], tuple(s.phase_first_seq())) for p, s in
                           zip(publishers, schedules, strict=True)]
        self.scheduled_total = offsets[-1]
        work_dir = Path(self.options.out_dir) / "work" / f"{self.key.run_id}-{self.key.repeat}-{os.getpid()}"
        work_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir = work_dir
        configs = [
            WorkerConfig(worker=w, workers=opts.workers, cluster=self.cluster, workload=self.workload,
                         timeline=self.timeline, publishers=tuple(p for p in publishers if p.worker == w),
                         consumers=tuple(c for c in consumers if c.worker == w), offsets=tuple(offsets),
                         nonce=self.nonce, out_dir=str(work_dir), tick_s=opts.tick_s,
                         stream_offset=opts.stream_offset, io_mode=opts.io_mode)
            for w in range(opts.workers)
        ]
        return [], configs

    def _wait_ready(self, procs: list[Any]) -> None:
        ready: set[int] = set()
        deadline = time.monotonic() + self.options.ready_timeout_s
        while len(ready) < len(procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunFailed(f"workers {sorted(set(range(len(procs))) - ready)} not connected after "
                                f"{self.options.ready_timeout_s:g}s")
            try:
                kind, worker, payload = self.out.get(timeout=min(remaining, 1.0))
            except queue_module.Empty:
                self._check_alive(procs)
                continue
            if kind == "ready":
                ready.add(worker)
            elif kind == "error":
                raise RunFailed(f"worker {worker}: {payload}")
            elif kind == "event":
                self.emit_event(payload)

    def _check_alive(self, procs: list[Any]) -> None:
        for i, proc in enumerate(procs):
            if not proc.is_alive():
                raise RunFailed(f"worker {i} exited with code {proc.exitcode}")

    def _handle(self, message: tuple[str, int, Any]) -> None:
        kind, worker, payload = message
        if kind == "row":
            row = payload
            with self.lock:
                self.rows[(row["phase"], worker)].append(row)
                if row["phase"] in self.written_phases or row["phase"] == 0:
                    self.dirty.add(("client_seconds", row["phase"]))
                self.max_second[worker] = max(self.max_second.get(worker, -1), row["second"])
            self.last_rows[worker] = row
            for name in ("published", "confirmed", "nacked", "consumed", "redelivered", "_foreign", "acked"):
                self.totals[name] += row[name]
            if row["e2e_hist"] and row["phase"] and not row["warmup"]:  # progress p99: steady seconds only
                counts = self.e2e_by_phase.setdefault(row["phase"], np.zeros_like(merge_wire([])))
                counts += merge_wire([row["e2e_hist"]])
        elif kind == "event":
            self.emit_event(payload)
        elif kind == "error":
            raise RunFailed(f"worker {worker}: {payload}")
        elif kind == "done":
            self.done_paths[worker] = payload["path"]
            self.worker_cpu[worker] = {k: v for k, v in payload.items() if k != "path"}

    def _pump(self, procs: list[Any], timeout: float) -> None:
        try:
            self._handle(self.out.get(timeout=timeout))
            while True:
                self._handle(self.out.get_nowait())
        except queue_module.Empty:
            pass
        if procs:
            self._check_alive(procs)

    def _follow(self, procs: list[Any]) -> None:
        """Until the scenario ends: receive rows, write finished phases, print progress."""
        self.done_paths: dict[int, str] = {}
        duration = self.timeline.duration_s
        announced_start: set[int] = set()
        announced_end: set[int] = set()
        next_progress = self.options.progress_interval_s
        while True:
            self._pump(procs, 0.2)
            now = self.now_s()
            for phase in self.timeline.phases:
                if now >= phase.start_s and phase.number not in announced_start:
                    announced_start.add(phase.number)
                    self.runner_event("phase_start", phase.start_s, phase=phase.number, name=phase.name,
                                      target_rate=phase.target_rate)
                if now >= phase.end_s and phase.number not in announced_end:
                    announced_end.add(phase.number)
                    self.runner_event("phase_end", phase.end_s, phase=phase.number, name=phase.name)
            self._write_finished_phases(len(procs))
            if now >= next_progress:
                next_progress += self.options.progress_interval_s
                self.echo(self.progress_line(now))
            if now >= duration and len(announced_end) == len(self.timeline.phases):
                return

    def _drain(self, procs: list[Any]) -> None:
        """Let consumers catch up with what was confirmed (bounded), so loss is not confused with backlog."""
        opts = self.options
        confirms = self.workload.publishers.confirms_in_flight > 0
        deadline = time.monotonic() + opts.drain_timeout_s
        last_consumed, last_change = -1, time.monotonic()
        while time.monotonic() < deadline:
            self._pump(procs, 0.2)
            self._write_finished_phases(len(procs))
            fresh = self.totals["consumed"] - self.totals["redelivered"] - self.totals["_foreign"]
            expected = self.totals["confirmed"] if confirms else self.totals["published"]
            in_flight = sum(r["in_flight"] for r in self.last_rows.values())
            if fresh >= expected and (in_flight == 0 or not confirms):
                return
            if fresh != last_consumed:
                last_consumed, last_change = fresh, time.monotonic()
            elif time.monotonic() - last_change > opts.drain_idle_s:
                self.echo(f"drain: nothing consumed for {opts.drain_idle_s:g}s with {expected - fresh} messages "
                          f"outstanding; stopping")
                return
        self.echo(f"drain: timed out after {opts.drain_timeout_s:g}s")

    def _stop_workers(self, procs: list[Any], ctl: list[Any]) -> dict[int, str]:
        if not procs:
            return {}
        self.done_paths = getattr(self, "done_paths", {})
        for end in ctl:
            with contextlib.suppress(OSError, BrokenPipeError):
                end.send(("stop",))
        deadline = time.monotonic() + 30
        while len(self.done_paths) < len(procs) and time.monotonic() < deadline:
            if all(not p.is_alive() for p in procs) and not self._queue_has_data():
                break
            try:
                self._pump([], 0.2)
            except RunFailed as err:
                self.errors.append(str(err))
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        try:
            self._pump([], 0.05)
        except RunFailed as err:
            self.errors.append(str(err))
        return dict(self.done_paths)

    def _queue_has_data(self) -> bool:
        try:
            return not self.out.empty()
        except (OSError, ValueError):
            return False

    # ------------------------------------------------------------------ records
    def _write_finished_phases(self, n_workers: int) -> None:
        if not self.max_second or len(self.max_second) < n_workers:
            return
        reported = min(self.max_second.values())
        for phase in self.timeline.phases:
            if phase.number in self.written_phases or reported < last_second_of(phase.end_s):
                continue
            self._write_phase(phase.number, n_workers)
            self.written_phases.add(phase.number)

    def _write_phase(self, phase: int, n_workers: int) -> None:
        with self.lock:
            rows = {w: sorted(self.rows.get((phase, w), []), key=lambda r: r["second"]) for w in range(n_workers)}
            events = sorted(self.events.get(phase, []), key=lambda e: e["second"])
            samples = sorted(self.samples.get(phase, []), key=lambda s: (s["second"], s["node"]))
            for name in ("client_seconds", "events", "broker_samples"):
                self.dirty.discard((name, phase))
        for worker, worker_rows in rows.items():
            self.store.write_records("client_seconds", worker_rows, phase=phase, worker=worker)
        self.store.write_records("events", events, phase=phase)
        self.store.write_records("broker_samples", samples, phase=phase)

    def _finish(self, paths: dict[int, str], _books: Any) -> None:
        n_workers = self.options.workers
        self.runner_event("run_end", self.now_s() if self.start_mono else 0.0, phase=0, status=self.status,
                          errors=self.errors[:5])
        try:
            if self.start_mono:
                for phase in self.timeline.phases:  # phases cut short by a failure still get what they have
                    if phase.number not in self.written_phases and any(
                            self.rows.get((phase.number, w)) for w in range(n_workers)):
                        self._write_phase(phase.number, n_workers)
                        self.written_phases.add(phase.number)
                for record_type, phase in sorted(self.dirty | {("client_seconds", 0), ("events", 0),
                                                              ("broker_samples", 0)}):
                    if phase == 0 or phase in self.written_phases:
                        self._rewrite(record_type, phase, n_workers)
            else:
                self._rewrite("events", 0, n_workers)
            if paths and len(paths) == n_workers:
                self.accounting = self._account(paths)
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
            "status": self.status, "ended_at": time.time(), "scenario_start_ts": self.start_epoch or None,
            "errors": self.errors, "store_errors": self.store.errors[:20],
            "totals": {k: v for k, v in self.totals.items() if not k.startswith("_")},
            "foreign_deliveries": self.totals.get("_foreign", 0), "accounting": self.accounting,
            "worker_cpu": self.worker_cpu,
        })
        self.store.write_manifest(self.manifest)
        for path in paths.values():
            with contextlib.suppress(OSError):
                os.remove(path)
        self.echo(self.summary_line())

    def _rewrite(self, record_type: str, phase: int, n_workers: int) -> None:
        with self.lock:
            if record_type == "client_seconds":
                per_worker = {w: sorted(self.rows.get((phase, w), []), key=lambda r: r["second"])
                              for w in range(n_workers)}
            elif record_type == "events":
                rows = sorted(self.events.get(phase, []), key=lambda e: e["second"])
            else:
                rows = sorted(self.samples.get(phase, []), key=lambda s: (s["second"], s["node"]))
            self.dirty.discard((record_type, phase))
        if record_type == "client_seconds":
            for worker, worker_rows in per_worker.items():
                if worker_rows or phase != 0:
                    self.store.write_records(record_type, worker_rows, phase=phase, worker=worker)
        else:
            self.store.write_records(record_type, rows, phase=phase)

    def _account(self, paths: dict[int, str]) -> list[dict[str, int]]:
        size = self.scheduled_total
        fresh, redelivered, reordered = [], [], []
        published: dict[int, int] = {}
        states: dict[int, np.ndarray] = {}
        for path in paths.values():
            with np.load(path) as data:
                fresh.append(data["fresh_counts"])
                redelivered.append(data["redelivered"])
                reordered.append(data["reordered"])
                for index, count in zip(data["publishers"].tolist(), data["published"].tolist(), strict=True):
                    published[index] = count
                    states[index] = data[f"state_{index}"]
        books = [PublisherBook(index, offset, firsts, published.get(index, 0),
                               states.get(index, np.zeros(firsts[-1], dtype=np.uint8)))
                 for index, offset, firsts in self.books_meta]
        return account(books, len(self.timeline.phases), merge_consumed(fresh, size),
                       np.concatenate(redelivered) if redelivered else np.zeros(0, np.int64),
                       np.concatenate(reordered) if reordered else np.zeros(0, np.int64))

    # ------------------------------------------------------------------ reporting
    def progress_line(self, now: float) -> str:
        phase = self.timeline.phase_at(min(now, self.timeline.duration_s - 1e-9))
        complete = min(self.max_second.values()) if self.max_second else -1
        rows = [r for (p, _w), rs in self.rows.items() for r in rs if r["second"] == complete]
        published = sum(r["published"] for r in rows)
        consumed = sum(r["consumed"] for r in rows)
        target = self.timeline.scheduled(complete, complete + 1) if complete >= 0 else 0.0
        counts = self.e2e_by_phase.get(phase.number) if phase else None
        p99 = quantile_from_counts(counts, 0.99) / 1000 if counts is not None and counts.sum() else float("nan")
        late = max((r.get("_late_s", 0.0) for r in self.last_rows.values()), default=0.0)
        in_flight = sum(r["in_flight"] for r in self.last_rows.values())
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
            "config": {"config_id": self.key.config_id, "nodes": shape.nodes, "instance_type": shape.instance_type,
                       "volume": asdict(shape.volume)},
            "scenario": {"name": self.scenario.name, "duration_s": self.timeline.duration_s,
                         "phases": len(self.timeline.phases), "faults": [asdict(f) for f in self.timeline.faults]},
            "workload": _jsonable(asdict(self.workload)),
            "cluster": {"target": self.cluster.target, "cluster_name": self.cluster.cluster_name,
                        "nodes": [n.name for n in self.cluster.nodes]},
            "loadgen": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.options).items()},
                        "nonce": self.nonce},
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: dict(v) if hasattr(v, "items") else str(v)))


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
