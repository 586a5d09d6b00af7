"""Acceptance of the node resource view on a real 1-node local cluster (slot 55; short runs).

Independent counters each check is against:
- CPU: the node's cpu_s (from /proc/<pid>/stat) against the VM's own runtime counter
  (erlang_vm_statistics_runtime_milliseconds, Erlang's accounting of its threads' CPU time); the workers' records
  against the OS's per-process counters of the workers; and nodes + generator + every other process against the
  machine's busy CPU from /proc/stat less its steal, on transient queues (a persistent run's writeback is
  kernel-worker CPU that no process is charged for).
- Disk: the node's write counter (/proc/<pid>/io write_bytes) against the growth of its data directory (the quorum
  WAL grows by what is written; a 12 s run is far from the WAL's roll size, so nothing is truncated meanwhile),
  within [0.9, 2.0] x (the page-granular accounting bound, explained at the assertion).
- Bottleneck: sizing.criteria.rules.bottleneck on the run's figures: an overloaded phase is `cpu` or `generator`, a
  light one `none` on a quiet machine.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters import nodestats
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout
from sizing.criteria import rules

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CONFIG = "n1-c5.2xlarge-gp2"
QUORUM = {
    "name": "restest", "catalog": "aws-us-east-1-2020", "target": {"rate": 1000, "p99_latency_ms": 5000},
    "workload": {
        "queues": {"count": 2, "name_pattern": "restest-q-{n}", "type": "quorum"},
        "message": {"size_bytes": 1024, "persistent": True},
        "publishers": {"count": 2, "confirms_in_flight": 200, "random_start_delay_s": 0.2},
        "consumers": {"count": 2, "prefetch": 200, "multi_ack_every": 10, "processing_ms": 0},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [
        {"name": "steady", "warmup_s": 2, "steps": {"rates": [1500], "duration_s": 12}},
        # Phase 2 is closed loop with a deep window: as fast as the node confirms, so the two cores saturate
        # (an open-loop 40k msg/s behind a 200-message window left the machine at 0.89 busy: not overloaded).
        {"name": "light-then-max", "warmup_s": 2,
         "steps": {"sequence": [{"rate": 100}, {"rate": "max", "confirms_in_flight": 2000}], "duration_s": 10}},
    ],
}
TRANSIENT = copy.deepcopy(QUORUM)
TRANSIENT["workload"]["queues"] = {"count": 2, "name_pattern": "restest-c-{n}", "type": "classic", "durable": False}
TRANSIENT["workload"]["message"]["persistent"] = False


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    made = local_cluster_factory(slot=55, nodes=1)
    yield made.cluster
    made.destroy()  # before the next module's cluster: one cluster of ours at a time


def run(cluster, spec: dict, scenario: str, out: Path) -> tuple[Runner, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    runner = Runner(parse_campaign(copy.deepcopy(spec)), CONFIG, scenario, f"t{int(time.time())}", cluster,
                    options=RunOptions(workers=1, out_dir=out, upload=False, drain_timeout_s=10, sample_interval_s=2),
                    echo=lambda _line: None)
    assert runner.run() == 0, runner.errors
    return runner, read(out, runner, "node_seconds"), read(out, runner, "client_seconds"), read(out, runner, "events")


def read(out: Path, runner: Runner, record_type: str) -> pd.DataFrame:
    files = sorted((out / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()


def vm_metrics(cluster) -> nodestats.Metrics:
    node = cluster.nodes[0]
    return nodestats.parse_prometheus(nodestats.http_scrape(f"http://{node.host}:{node.prometheus_port}/metrics",
                                                            10).text)


def tree_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def other_work(cluster, seconds: float) -> float:
    """Share of the machine's cores busy with anything but the node's VM and this process over a wait before the
    run (/proc/stat minus /proc/<pid>/stat of both): what else runs here."""
    def ticks() -> tuple[nodestats.MachineCpu, int]:
        machine = nodestats.read_machine_cpu()
        ours = 0
        for pid in (int(Path(cluster.nodes[0].pid_file).read_text().strip()), os.getpid()):
            stat = nodestats.parse_proc_pid_stat(Path(f"/proc/{pid}/stat").read_text())
            ours += stat.utime_ticks + stat.stime_ticks
        return machine, ours

    m0, ours0 = ticks()
    time.sleep(seconds)
    m1, ours1 = ticks()
    busy, idle = m1.busy_ticks - m0.busy_ticks, m1.idle_ticks - m0.idle_ticks
    return max(busy - (ours1 - ours0), 0) / max(busy + idle, 1)


@dataclass(frozen=True)
class ProcessCpu:
    ppid: int
    own: int  # user + system ticks
    children: int  # ticks of the children it has waited for


def process_cpu() -> dict[int, ProcessCpu]:
    """Every process (kernel threads included), from /proc/<pid>/stat."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                text = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            stat = nodestats.parse_proc_pid_stat(text)
            out[int(entry.name)] = ProcessCpu(stat.ppid, stat.utime_ticks + stat.stime_ticks, stat.children_ticks)
    return out


@dataclass(frozen=True)
class WitnessedCpu:
    runner: float  # this process (the generator's runner), less this witness's sampling
    workers: float  # the generator's worker processes, by the OS's per-process counters
    node: float  # the node VM and its descendants, by the OS's per-process counters
    others: float  # every other process, by the OS's per-process counters, and this witness's sampling
    steal: float  # the machine's steal (/proc/stat): the hypervisor's, part of its busy time, no process's
    interrupt: float  # the machine's irq + softirq (/proc/stat), for the failure message


class CpuWitness(threading.Thread):
    """Samples, every 0.25 s and stamped with the wall clock, what the OS charged to each kind of process, so that
    every kind can be taken over exactly the node rows' window.

    The node's are the VM with its descendants (erl_child_setup, inet_gethost). The generator's are this process
    and the processes it starts from now on: its workers. Everything else is other: kernel threads, an Airflow or
    Celery process a previous module left up, and this process's *earlier* children, such as the session's Spark
    JVM or S3 endpoint, which no figure of the run counts (CI failed with them taken for ours: 0.45 CPU-s
    unaccounted of 2.66). Processes that start meanwhile count for their parent's side; the short-lived ones (a
    scheduler's forked parsers) through their parent's children's ticks once it has waited for them."""

    def __init__(self, node_pid: int) -> None:
        super().__init__(daemon=True)
        self.runner_pid = os.getpid()
        self.last = process_cpu()
        self.side = {self.runner_pid: "runner", node_pid: "node"}
        while True:  # the node's descendants so far (not the runner's: those are others)
            grown = {pid: "node" for pid, p in self.last.items() if self.side.get(p.ppid) == "node"}
            if grown.keys() <= self.side.keys():
                break
            self.side |= grown
        self.ended = {"workers": 0, "node": 0, "others": 0}  # last counts of processes that ended
        self.samples: list[tuple[float, ...]] = []
        self.done = threading.Event()

    def kind(self, pid: int) -> str:
        side = self.side.get(pid, "others")
        return "workers" if side == "runner" and pid != self.runner_pid else side

    def ticks(self, now: dict[int, ProcessCpu]) -> dict[str, int]:
        for pid in sorted(now.keys() - self.last.keys()):  # started meanwhile: on its parent's side
            self.side.setdefault(pid, self.side.get(now[pid].ppid, "others"))
        for pid in self.last.keys() - now.keys():
            ended, kind = self.last[pid], self.kind(pid)
            # reaped by a living parent of its own kind: its count moved into that parent's children's ticks
            if not (ended.ppid in now and self.kind(ended.ppid) == kind):
                self.ended[kind] += ended.own + ended.children
        self.last = now
        out = dict(self.ended)
        for pid, p in now.items():
            if pid != self.runner_pid:  # the runner's own: os.times, less this thread
                out[self.kind(pid)] += p.own + p.children
        return out

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.wait(0.25):
            by_kind = self.ticks(process_cpu())
            t, witness = os.times(), time.thread_time()  # this thread is the test's instrument: an other
            machine = nodestats.read_machine_cpu()
            self.samples.append((time.time(), t.user + t.system - witness, by_kind["workers"] / tick,
                                 by_kind["node"] / tick, by_kind["others"] / tick + witness, machine.steal_ticks / tick,
                                 machine.interrupt_ticks / tick))

    def between(self, start: float, end: float) -> WitnessedCpu:
        """CPU seconds of each kind over [start, end], interpolated between the samples around either end."""
        times = [s[0] for s in self.samples]

        def delta(i: int) -> float:
            column = [s[i] for s in self.samples]
            return float(np.interp(end, times, column) - np.interp(start, times, column))

        return WitnessedCpu(*(delta(i) for i in range(1, 7)))


def test_every_second_of_the_run_has_a_row_and_cpu_agrees_with_the_vms_own_counter(cluster, tmp_path):
    background = other_work(cluster, 2.0)
    runtime_before = nodestats.metric_sum(vm_metrics(cluster), "erlang_vm_statistics_runtime_milliseconds")
    witness = CpuWitness(int(Path(cluster.nodes[0].pid_file).read_text().strip()))
    witness.start()
    # Transient classic queues: the disk writes of a persistent run are finished by kernel workers (ext4's
    # kworkers: measured 2.3 of 7.7 busy CPU-s in a quorum run) that no process is charged for, so a persistent
    # run cannot add up; without disk writes, every busy second belongs to a process we count.
    _runner, nodes, clients, _events = run(cluster, TRANSIENT, "steady", tmp_path)
    witness.done.set()
    witness.join()
    runtime_after = nodestats.metric_sum(vm_metrics(cluster), "erlang_vm_statistics_runtime_milliseconds")
    node = cluster.nodes[0].name
    mine = nodes[nodes.node == node].sort_values("second")
    # one row per second from 0 to the end, none invented: a second without figures says so
    assert mine.second.tolist() == list(range(int(mine.second.min()), int(mine.second.max()) + 1))
    assert mine.second.min() == 0 and (~mine.missing).mean() > 0.9, mine[mine.missing].second.tolist()
    present = mine[~mine.missing]
    assert (present.cpu_s > 0).all() and present.cores.eq(os.cpu_count()).all() and present.shared_cores.all()
    # the broker refreshes connection byte counters every collect_statistics_interval (5 s): per second they are
    # lumpy, over the run they add up to at least the bodies published (1.5 k msg/s x 1 KB, most of 12 s)
    assert float((present.client_in_bytes_per_s * present.span_s).sum()) > 1500 * 1024 * 8
    # the node's user CPU over the rows vs the VM's own runtime counter (erts: the user time of its threads) over a
    # slightly longer window (scraped before/after the run): the rows may be lower by the un-sampled edges
    rows_cpu = float((present.cpu_s * present.span_s).sum())
    rows_user = float((present.cpu_user * present.cores * present.span_s).sum())
    vm_cpu = (runtime_after - runtime_before) / 1000
    assert 0.7 * vm_cpu <= rows_user <= 1.15 * vm_cpu, (rows_user, vm_cpu, rows_cpu)
    # Over the node rows' window [first ts, last ts + span], what the OS charged to each kind of process (the
    # witness above). First each side's figures against the processes they describe: the node rows (2-s samples
    # of the VM's /proc/<pid>/stat spread over seconds) and the workers' records (their own process clocks).
    window = (float(present.ts.min()), float((present.ts + present.span_s).max()))
    cpu = witness.between(*window)
    records_cpu = float(clients[clients.second.between(present.second.min(), present.second.max())].cpu_s.sum())
    generator_cpu = records_cpu + cpu.runner
    machine = float((present.machine_cpu_busy_s * present.span_s).sum())
    busy = machine - cpu.steal  # steal is busy to the machine but the hypervisor's, no process's
    figures = (f"node rows {rows_cpu:.2f}s (OS {cpu.node:.2f}s), VM runtime {vm_cpu:.2f}s, generator records "
               f"{records_cpu:.2f}s (OS {cpu.workers:.2f}s) + runner {cpu.runner:.2f}s, other processes "
               f"{cpu.others:.2f}s; machine busy {machine:.2f}s of which steal {cpu.steal:.2f}s, irq+softirq "
               f"{cpu.interrupt:.2f}s; other work before the run {background:.0%}")
    print(f"cpu: {figures}")
    assert abs(rows_cpu - cpu.node) <= 0.10 * cpu.node, figures
    assert abs(records_cpu - cpu.workers) <= 0.10 * cpu.workers, figures
    # Then nothing busy escapes: node + generator + others against the machine's busy CPU (the cores' time less
    # their idle: nodestats.MachineCpu.busy_s). Interrupts on an idle core are busy and charged to no process, and
    # the witness samples every 0.25 s: measured within 1-8 % (1 % under a loop of short-lived processes).
    assert abs(rows_cpu + generator_cpu + cpu.others - busy) <= 0.10 * busy, figures


def test_a_persistent_quorum_run_writes_what_its_data_grows_and_a_transient_one_far_less(cluster, tmp_path):
    data_dir = cluster.nodes[0].data_dir
    grown = {}
    written = {}
    for name, spec in (("quorum", QUORUM), ("transient", TRANSIENT)):
        before = tree_bytes(data_dir)
        _runner, nodes, _clients, _events = run(cluster, spec, "steady", tmp_path / name)
        grown[name] = tree_bytes(data_dir) - before
        present = nodes[~nodes.missing]
        written[name] = float((present.disk_write_bytes_per_s * present.span_s).sum())
    print(f"disk: written {written}, data dir grew {grown}")
    # 1.5 k msg/s x 12 s x 1 KB = 18 MB of bodies; the WAL holds each with its header
    assert grown["quorum"] > 15e6
    # Lower bound: what the WAL grew by was written. Upper bound 2x: write_bytes is charged per page each time a
    # page is dirtied, and the WAL fsyncs every batch, so its tail page is charged again after every sync (measured
    # here: 1.7x at 1.5 k msg/s in 1 KB messages); the ext4 journal is written by jbd2 and not charged to the VM.
    assert 0.9 * grown["quorum"] <= written["quorum"] <= 2.0 * grown["quorum"], (written, grown)
    assert written["transient"] < 0.1 * written["quorum"]


def test_an_overloaded_phase_is_cpu_or_generator_bound_and_a_light_one_is_not(cluster, tmp_path):
    background = other_work(cluster, 2.0)
    # Transient classic queues: no fsync waits, so the overload is all CPU (a quorum run idled ~10 % on fsyncs).
    runner, nodes, clients, events = run(cluster, TRANSIENT, "light-then-max", tmp_path)
    labels = {}
    for phase in runner.timeline.phases:
        steady_from = phase.start_s + phase.warmup_s
        window = nodes[(nodes.second >= steady_from) & (nodes.second < phase.end_s) & ~nodes.missing]
        workers = clients[(clients.phase == phase.number) & ~clients.warmup]
        behind = (events.kind == "worker_behind") & (events.phase == phase.number)
        valid = not rules.cpu_saturated(workers.cpu_s.max()) and not behind.any()
        busiest = window.groupby("node").cpu_busy.mean().max()
        machine = (window.machine_cpu_busy_s / window.machine_cores).mean()
        labels[phase.number] = rules.bottleneck(
            valid=valid, alarm=False, mem_max_fraction=None, busiest_cpu_mean=busiest, machine_cpu_mean=machine,
            volume_load_share=None, ebs_load_share=None, net_mbit_s=None, mbit_s_limit=None)
        print(f"phase {phase.number} {phase.name}: valid={valid} worker cpu max {workers.cpu_s.max():.2f}, "
              f"busiest node cpu {busiest:.2f}, machine {machine:.2f} -> {labels[phase.number]}")
    assert labels[2] in ("cpu", "generator")
    if background <= 0.10:  # on a busy machine the light phase shares saturated cores: `cpu` is then right
        assert labels[1] == "none"
