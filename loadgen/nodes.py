"""The node sampler: one NODE_SECONDS row per broker node per scenario second (adapters.nodestats reads them).

Each node has its own thread, so a frozen node delays only its own rows. At every whole scenario second the
thread reads the node's counters; the snapshot is stamped when the response arrives (the time its data
describes). Two snapshots at most `MAX_SPAN_FACTOR` intervals apart make one row for the second the first one
lies in; every second that no such pair covers (a failed read, a read that outlived its interval, a restarted
process whose counters started again) is written as a row with missing=True and null figures.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from adapters.nodestats import NodeUnavailable, Snapshot, missing_figures, rates, reader_for
from sizing.resources.cluster import ClusterInfo, NodeInfo

MAX_SPAN_FACTOR = 1.5  # a pair of snapshots further apart than this many intervals describes no single second
MIN_SPAN_FACTOR = 0.5  # a tick closer than this to the last response is skipped (rates over a sliver are noise)


class NodeReader(Protocol):
    target: str

    def read(self, now: Callable[[], float]) -> Snapshot: ...


class NodeSecondsTracker:
    """Pure bookkeeping of one node: snapshots (or failures) in, rows out; no clock, no I/O."""

    def __init__(self, node: str, target: str, interval_s: float = 1.0) -> None:
        self.node, self.target, self.interval_s = node, target, interval_s
        self.previous: Snapshot | None = None
        self.next_second = 0  # rows are emitted for every second from 0 on, in order
        self.shared_cores = target == "local"  # a missing row's guess; a measured row says what its snapshot saw

    def _missing(self, up_to: int) -> list[dict[str, Any]]:
        """Missing rows for every not yet emitted second < up_to."""
        rows = [self._row(second, None) for second in range(self.next_second, up_to)]
        self.next_second = max(self.next_second, up_to)
        return rows

    def _row(self, second: int, figures: dict[str, Any] | None) -> dict[str, Any]:
        row = {"second": second, "node": self.node, "target": self.target, "missing": figures is None,
               **(figures or missing_figures())}
        if row["shared_cores"] is None:
            row["shared_cores"] = self.shared_cores
        return row

    def observe(self, snapshot: Snapshot) -> list[dict[str, Any]]:
        """A successful read (snapshot.t in scenario seconds): the row it closes, after any missing seconds."""
        rows: list[dict[str, Any]] = []
        previous, self.previous = self.previous, snapshot
        if previous is not None and snapshot.t - previous.t <= MAX_SPAN_FACTOR * self.interval_s:
            figures = rates(previous, snapshot)
            second = math.floor(previous.t)
            if figures is not None and second >= self.next_second:
                rows += self._missing(second)
                rows.append({**self._row(second, figures), "ts_offset": previous.t})
                self.next_second = second + 1
        # the seconds before this response can no longer get a row
        rows += self._missing(math.floor(snapshot.t))
        return rows

    def fail(self, t: float) -> list[dict[str, Any]]:
        """A failed or abandoned read answered at t: no row can cover any second up to and including floor(t)."""
        self.previous = None
        return self._missing(math.floor(t) + 1)

    def finish(self, t: float) -> list[dict[str, Any]]:
        """At stop: the seconds before t that no row covered."""
        return self._missing(math.floor(t))


class NodeSampler(threading.Thread):
    """All nodes of a cluster, one thread each; rows (with ts/second) go to `emit` (the runner's record sink)."""

    def __init__(self, cluster: ClusterInfo, emit: Callable[[dict[str, Any]], None], scenario_start: float,
                 start_epoch: float, interval_s: float = 1.0, now: Callable[[], float] = time.monotonic,
                 readers: dict[str, NodeReader] | None = None) -> None:
        super().__init__(name="node-sampler", daemon=True)
        self.cluster, self.emit, self.interval_s, self.now = cluster, emit, interval_s, now
        self.scenario_start, self.start_epoch = scenario_start, start_epoch
        self._stop_event = threading.Event()
        slot = cluster.network.slot if cluster.network is not None else None
        self.readers = readers or {n.name: reader_for(cluster.target, n, timeout_s=0.9 * interval_s,
                                                      network_slot=slot) for n in cluster.nodes}
        self.threads = [threading.Thread(target=self._sample, args=(node,), name=f"node-sampler-{node.number}",
                                         daemon=True) for node in cluster.nodes]
        self.failures = 0

    def scenario_s(self) -> float:
        return self.now() - self.scenario_start

    def _emit(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            offset = row.pop("ts_offset", row["second"])
            self.emit({**row, "ts": self.start_epoch + offset})

    def _sample(self, node: NodeInfo) -> None:
        reader = self.readers[node.name]
        tracker = NodeSecondsTracker(node.name, reader.target, self.interval_s)
        tick = max(0.0, math.ceil(self.scenario_s() / self.interval_s) * self.interval_s)
        while not self._stop_event.wait(max(0.0, tick - self.scenario_s())):
            try:
                rows = tracker.observe(reader.read(self.scenario_s))
            except NodeUnavailable:
                self.failures += 1
                rows = tracker.fail(self.scenario_s())
            self._emit(rows)
            now = self.scenario_s()
            tick += self.interval_s
            while tick - now < MIN_SPAN_FACTOR * self.interval_s:  # a late response skips the ticks it overran
                tick += self.interval_s
        self._emit(tracker.finish(self.scenario_s()))

    def run(self) -> None:
        for thread in self.threads:
            thread.start()
        for thread in self.threads:
            thread.join()

    def stop(self) -> None:
        self._stop_event.set()
