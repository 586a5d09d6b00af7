"""The node sampler's CPU per second against the kernel's CFS quota (issue 44), without RabbitMQ: a busy loop in an
envelope made by the production code (adapters.envelope.create_node: its cgroups and CPU quota, no volumes), entered
as a node's server enters it (envelope.enter_command), read every second through the sampler's own reader
(adapters.nodestats.LocalNodeReader.read, then rates(): what node_seconds rows hold).

Known answer: a busy loop uses all of its quota and the kernel lets it use no more, so every second's cpu_busy (a
fraction of the quota) is 1. Needs root and a cgroup cpu controller (skipped otherwise, as tests/test_rootfs.py);
no RabbitMQ, but marked `cluster` (it times busy cores: one at a time with the heavy group). Measured on this 2-core
machine (2026-11-28): see the assertion message, which prints every second's figure from the cgroup's counter and,
for comparison, from /proc's ticks on the same snapshots.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from adapters.nodestats import LocalNodeReader, rates
from sizing.contract.records import CPU_SOURCE_CGROUP
from sizing.resources.cluster import NodeInfo
from sizing.resources.scalemodel import CPU_PERIOD_US
from tests.fixtures.envelopes import CPU_ENFORCED, SUPPORT, busy_envelopes

# `cluster`: no RabbitMQ, but it keeps cores busy for ~10 s and reads them, so it runs with the heavy group.
pytestmark = [pytest.mark.cluster, pytest.mark.alone,
              pytest.mark.skipif(not CPU_ENFORCED, reason="needs root and a cgroup cpu controller")]

SECONDS = 9
# CFS stops a group that has used its period's quota at the next scheduler tick (4 ms at this kernel's HZ=250) and
# takes the overrun from its next periods, and the group's counter is charged at those same points; a 1 s window also
# cuts a period at each end. So a second's CPU is off its quota by up to a tick and a period's quota, either way: 5 ms
# of 0.05 cores' 50 ms a second (10 %), 6 ms of 0.1 cores' 100 ms (6 %). Measured with the loop held at its quota in
# every period (2026-11-28, 60 s at 0.05 cores): 0.931-1.066 per second, 9 seconds in 60 beyond 5 %; the task's own
# /proc/<pid>/schedstat runtime agreed with the counter to 0.001. At 0.1 cores a fresh-clone CI run read 1.052 in one
# second of nine: issue 44's 5 % per second is not what this kernel holds a quota to below about 0.2 cores.
TICK_S = 0.004


def per_second_tolerance(cores: float) -> float:
    """A tick and a period's quota, of the quota's CPU-seconds per second."""
    return round((TICK_S + cores * CPU_PERIOD_US / 1e6) / cores, 3)


QUOTAS = {cores: per_second_tolerance(cores) for cores in (0.05, 0.1)}  # 10 % and 6 % of the quota
WINDOW_TOLERANCE = 0.015  # over all SECONDS


@dataclass
class BusyNode:
    cores: float
    info: NodeInfo
    cgroup: str  # relative to each hierarchy's root

    def throttling(self) -> tuple[int, int]:
        """(periods, periods throttled) of the group so far: the kernel's own word that it held the group at its
        quota (cpu.stat of the cpu hierarchy, v1 and v2 alike)."""
        assert SUPPORT is not None and SUPPORT.cgroups is not None
        dirs = SUPPORT.cgroups.dirs(self.cgroup)
        stat = dict(line.split() for line in (dirs.get("cpu") or dirs["unified"]).joinpath("cpu.stat")
                    .read_text().splitlines())
        return int(stat["nr_periods"]), int(stat["nr_throttled"])


@contextmanager
def busy_nodes(tmp_path: Path) -> Iterator[list[BusyNode]]:
    """One node per quota, each a busy loop in its own envelope (tests.fixtures.envelopes: removed also on failure),
    its pid in a pid file, nothing on its metrics port. Started inside the test's call, not by a fixture: an `alone`
    test's set-up shares the machine (tests/fixtures/lanes.py), and the loops would run beside the other worker's
    measurements while this test waits for the machine."""
    with socket.socket() as sock:  # a port bound and closed again: the endpoint refuses at once
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    with busy_envelopes(tmp_path / "state", list(QUOTAS)) as loops:
        yield [BusyNode(loop.cores, NodeInfo(number=number, name=f"busy-{number}@localhost", host="127.0.0.1",
                                             amqp_port=1, management_port=2, prometheus_port=closed_port,
                                             pid_file=str(loop.pid_file)), loop.record.cgroup)
               for number, loop in enumerate(loops, 1)]


def test_each_seconds_cpu_is_the_quota_the_kernel_enforces(tmp_path):
    """Every second's cpu_busy from the sampler's reader is within QUOTAS[cores] of the quota (6 % at 0.1 cores,
    10 % at 0.05: a tick and a period's quota), where the kernel throttled the group in every period of it (it was
    held at its quota: a second in which another process kept the loop off the CPU used less, and is only held to
    the upper bound); over the whole
    window, within 1.5 %. Measured (2026-11-28, 2 cores, load 1.5-3 from other work), max per-second deviation over
    5 runs: from the cgroup's counter 0.069 at 0.05 cores (0.931-1.062) and 0.037 at 0.1 cores (0.963-1.036); from
    /proc's ticks on the same snapshots 0.205 (0.80 and 1.20: 10 ms of 50 ms) and 0.102 (0.90 and 1.10)."""
    with busy_nodes(tmp_path) as nodes:
        readers = {node.cores: LocalNodeReader(node.info, timeout_s=0.3) for node in nodes}
        time.sleep(1.0)  # the loop's start (the shell that enters the cgroups, then execs it) is behind it
        for node in nodes:  # the loop runs inside its envelope with the quota set
            procs = Path(readers[node.cores].envelope.cpu_files[0]).with_name("cgroup.procs").read_text().split()
            assert int(Path(node.info.pid_file).read_text()) in [int(p) for p in procs]
            assert readers[node.cores].envelope.cpu_quota_cores == node.cores
        previous = {node.cores: (readers[node.cores].read(), node.throttling()) for node in nodes}
        first = dict(previous)
        seconds: dict[float, list[tuple[float, float, bool]]] = {cores: [] for cores in QUOTAS}  # cgroup, ticks, held
        for _ in range(SECONDS):
            time.sleep(1.0)
            for node in nodes:
                current = (readers[node.cores].read(), node.throttling())
                (before, (periods0, throttled0)), (after, (periods1, throttled1)) = previous[node.cores], current
                figures = rates(before, after)
                assert figures is not None and figures["cpu_source"] == CPU_SOURCE_CGROUP, figures
                assert figures["cpu_quota_cores"] == node.cores
                by_ticks = rates(replace(before, cgroup_cpu=None), replace(after, cgroup_cpu=None))
                held = throttled1 - throttled0 == periods1 - periods0 > 0
                seconds[node.cores].append((figures["cpu_busy"], by_ticks["cpu_busy"], held))
                previous[node.cores] = current
    report = "; ".join(
        f"{cores} cores (tolerance {QUOTAS[cores]:.2f}): cgroup max |dev| "
        f"{max(abs(v - 1) for v, _, _ in rows):.3f} [{', '.join(f'{v:.3f}' + ('' if h else '*') for v, _, h in rows)}]"
        f", ticks max |dev| {max(abs(t - 1) for _, t, _ in rows):.3f} [{', '.join(f'{t:.2f}' for _, t, _ in rows)}]"
        for cores, rows in seconds.items()) + " (*: a period of the second not throttled)"
    print(report)
    for node in nodes:
        rows = seconds[node.cores]
        assert sum(held for _, _, held in rows) >= SECONDS - 2, report  # else the machine was too busy to say
        assert all(v <= 1 + QUOTAS[node.cores] for v, _, _ in rows), report
        assert all(abs(v - 1) <= QUOTAS[node.cores] for v, _, held in rows if held), report
        # the seconds' errors do not add up: over the window, a tick and a period of 9 s (1.1 % at 0.05 cores)
        whole = rates(first[node.cores][0], previous[node.cores][0])
        assert whole is not None and whole["cpu_busy"] <= 1 + WINDOW_TOLERANCE, report
        if all(held for _, _, held in rows):
            assert whole["cpu_busy"] >= 1 - WINDOW_TOLERANCE, report
