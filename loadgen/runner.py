"""The runner: one scenario of one config against one cluster, recorded phase by phase.

It declares the queues, plans the clients, starts a worker pool (`loadgen.pool`: each worker an IO loop over
a slice of the publishers and consumers), gives the workers one clock (a shared scenario start on the
system-wide monotonic clock), starts the fault injector and the broker sampler, hands every record to the
record sink (`loadgen.sink`, which writes each phase as soon as every worker has reported its last second),
drains, merges the per-message accounting of all workers (`loadgen.accounting`) and closes with a manifest.
A failure anywhere still leaves the records gathered so far in the store, and a non-zero exit code.

The runner owns what is run-wide (the manifest, the broker's counters, the samplers, the fault injector, the
latency proxies, the final records); the workers are driven attempt by attempt by a `loadgen.session.Session` and
what they report goes to its `Recording`. A fixed timeline is one attempt, a capacity search (`loadgen.search`)
many. `Runner.drive` only sees a `Pool` and a `Clock`: unit tests run it with an in-process fake pool on a fake
clock, without a broker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from adapters.envelope import enforcement
from adapters.installed import code_commit
from loadgen.groups import workers_needed
from loadgen.messages import Done, WorkerConfig
from loadgen.pool import Pool, ProcessPool, RunFailed
from loadgen.recorder import RecordStore
from loadgen.session import Attempt, Clock, Recording, Session
from sizing.campaign import CLIENT_LATENCY, Campaign
from sizing.contract import records
from sizing.contract.layout import RunKey
from sizing.criteria import rules
from sizing.planning.timeline import Timeline, expand
from sizing.resources.cluster import ClusterInfo

NEMESIS_STOP_TIMEOUT_S = 600  # a rolling restart of 5 nodes under load takes minutes
START_DELAY_S = 0.5  # second 0 lies this far after the start command, so every worker starts on time
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
        self.workload = self.scenario.workload
        self.echo = echo
        self.clock = clock or SystemClock()
        self.nonce = secrets.randbits(32)  # the first attempt's (a search draws one per attempt)
        self.store = RecordStore(self.key, Path(self.options.out_dir), upload=self.options.upload, s3=s3)
        self.recording = Recording(self.store, self.options.workers,
                                   expand(self.scenario, self.shape.nodes, campaign.seed), self.clock)
        # `client_latency` faults (seed 003's known round-trip time): the workers connect through latency proxies
        # (adapters.latencyproxy), one per node, started in run(); everything else talks to the nodes directly.
        self.session = Session(self.scenario, self.key, campaign.seed, cluster, self.options, self.recording,
                               self.clock, echo)
        self.attempt: Attempt | None = None  # a fixed timeline's one attempt
        self.done: dict[int, Done] = {}  # each worker's CPU over the run (a search sums its attempts')
        self.errors: list[str] = []
        self.status = "created"
        self.manifest: dict[str, Any] = {}
        self.accounting: list[dict[str, int]] = []
        self.search_result: Any = None  # sizing.criteria.search.SearchResult once a search scenario ran
        # The broker's exact counters before the workers start (adapters.brokercounters), for the manifest's
        # broker_counts: what the broker counted over the run next to the generator's own totals.
        self.counts_before: Any = None
        self.counts_error = ""
        self.proxies: Any = None
        self.proxy_summary: dict[str, Any] | None = None

    # What tests and callers read of the run as it goes: the run's clock, its phases so far, the totals.
    @property
    def timeline(self) -> Timeline:
        return self.recording.timeline

    @property
    def start_mono(self) -> float:
        return self.recording.start_mono

    @property
    def start_epoch(self) -> float:
        return self.recording.start_epoch

    @property
    def totals(self) -> dict[str, int]:
        return self.recording.totals

    @property
    def worker_cpu(self) -> dict[int, dict[str, float]]:
        """User/system CPU of each worker process over the whole run, and the messages it published."""
        return {w: {"user_s": d.user_s, "system_s": d.system_s, "published": d.published}
                for w, d in self.done.items()}

    def now_s(self) -> float:
        return self.recording.now_s()

    def runner_event(self, kind: str, second: float, phase: int | None = None, **detail: Any) -> None:
        self.recording.runner_event(kind, second, phase, **detail)

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
            recording = self.recording
            samplers: list[Background] = [broker.BrokerSampler(
                self.cluster, self.queue_names, recording.sample, recording.start_mono, recording.start_epoch,
                interval_s=self.options.sample_interval_s)]
            if self.options.node_interval_s > 0:
                from loadgen.nodes import NodeSampler

                samplers.append(NodeSampler(self.cluster, recording.node_second, recording.start_mono,
                                            recording.start_epoch, interval_s=self.options.node_interval_s))
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
        self.session.cluster = proxied(self.cluster, self.proxies.ports)

    def _stop_proxies(self) -> dict[str, Any] | None:
        """Stop the proxies (after the workers closed their connections); what they did, their process's CPU as a
        share of one core over its life (the generator's host pays for it, judged as a worker's:
        sizing.criteria.rules)."""
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
        """The run around its attempts: ready, one clock, phases, drain, stop, final records. Returns the exit
        code."""
        self.started_at = self.clock.time()
        import pyarrow.parquet  # noqa: F401 - import (seconds on a busy host) before the clock starts
        self.manifest = self._manifest_base()
        self.status = "running"
        self.store.write_manifest({**self.manifest, "status": self.status})
        recording, session = self.recording, self.session
        nemesis = sample_thread = None
        previous = signal.signal(signal.SIGTERM, _raise_interrupt) if threading.current_thread() is \
            threading.main_thread() else None
        try:
            if prepare is not None:
                prepare()
            if self.scenario.search is not None:
                # A search has no timeline ahead of the run: loadgen.search runs one attempt per probe.
                from loadgen.search import run_search

                recording.start_mono, recording.start_epoch = self.clock.monotonic(), self.clock.time()
                self.runner_event("run_start", 0.0, phase=0, workers=self.options.workers, nonce=self.nonce)
                if sampler is not None:
                    sample_thread = sampler()
                    sample_thread.start()
                searched = run_search(session, make_pool, between_probes, START_DELAY_S, self.errors)
                self.search_result, self.accounting, self.done = searched.result, searched.accounting, searched.cpu
                self.status = "complete"
            else:
                self.attempt = attempt = session.open(make_pool, self.timeline, self.nonce)
                # One clock for every process: the system-wide monotonic clock, second 0 shortly after this.
                recording.start_mono = self.clock.monotonic() + START_DELAY_S
                recording.start_epoch = self.clock.time() + START_DELAY_S
                if faults is not None:
                    # Started before anything slow (uploads) so that no fault fires late; it waits for its times.
                    nemesis = faults()
                    nemesis.start()
                session.start(attempt)
                # Stamped at scenario second 0 (what it marks), not when this line runs after the first write.
                self.runner_event("run_start", 0.0, phase=0, workers=attempt.pool.size, nonce=self.nonce)
                recording.write_phases(own_timelines=True)
                if sampler is not None:
                    sample_thread = sampler()
                    sample_thread.start()
                session.follow(attempt)
                session.drain(attempt)
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
            if self.attempt is not None:
                self.done = session.stop(self.attempt, self.errors)
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

    def _fault_injector(self) -> Background:
        from loadgen.nemesis import FaultInjector  # lazily: only runs with faults need it

        executor = None
        if self.proxies is not None:
            from loadgen.faults.proxy import ClientLatencyExecutor
            from loadgen.nemesis import default_executor

            executor = ClientLatencyExecutor(
                self.proxies, lambda: default_executor(self.cluster, self.campaign.broker_config))
        return FaultInjector(self.cluster, self.timeline.faults, self.recording.event, self.recording.start_mono,
                             now=self.clock.monotonic, phase_at=self.recording.phase_number,
                             broker_config=self.campaign.broker_config, executor=executor)

    # ------------------------------------------------------------------ records
    def _finish(self) -> None:
        recording = self.recording
        self.runner_event("run_end", self.now_s() if recording.start_mono else 0.0, phase=0, status=self.status,
                          errors=self.errors[:5])
        try:
            recording.flush_all()
            if self.scenario.search is not None:  # accounted attempt by attempt (loadgen.search)
                self.store.write_records("accounting", self.accounting)
            elif self.attempt is not None and self.attempt.done:
                try:
                    self.accounting = self.attempt.accounting_rows()
                    self.store.write_records("accounting", self.accounting)
                except RunFailed as err:
                    self.errors.append(f"accounting skipped: {err}")
            elif recording.start_mono:
                self.errors.append(f"accounting skipped: 0/{self.options.workers} workers returned their books")
        except Exception as err:
            LOG.exception("writing the final records failed")
            self.errors.append(f"final records: {type(err).__name__}: {err}")
            if self.status == "complete":
                self.status = "failed"
        if self.store.errors and self.status == "complete":
            self.status = "failed"
            self.errors.append(f"{len(self.store.errors)} upload(s) failed")
        self.manifest.update({
            "status": self.status, "ended_at": self.clock.time(), "scenario_start_ts": recording.start_epoch or None,
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
        if self.attempt is not None:
            for done in self.attempt.done.values():
                with contextlib.suppress(OSError):
                    os.remove(done.path)
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
                        "envelope": enforcement(self.cluster.cluster_dir),
                        # the factors the nodes ran on, host calibration included (the runs table names them)
                        "scale_model": self.cluster.envelope.factors.to_dict() if self.cluster.envelope else None},
            "loadgen": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.options).items()},
                        "nonce": self.nonce},
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: dict(v) if hasattr(v, "items") else str(v)))


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
