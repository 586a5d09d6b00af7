"""The pure half of the load generator: who publishes what, when, to which queue, from which process.

Nothing here touches a socket or a clock. `BatchSchedule` is `sizing.planning.timeline.OpenLoopSchedule` in
vectorised form (the same intended send times, computed with numpy a chunk at a time, because a
per-message Python call costs more CPU than the whole publish path is allowed), plus the per-phase
sequence-number bounds the accounting needs. `plan_clients` slices publishers and consumers over worker
processes and cluster nodes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from sizing.campaign import Workload, client_queue
from sizing.planning.timeline import Timeline


class BatchSchedule:
    """Intended send times (seconds since scenario start) of one publisher's messages, by sequence number.

    Sequence number 0 is the publisher's first message. The times equal those `OpenLoopSchedule(timeline,
    share, start_s).next_due()` returns one by one (the unit tests check it), so the open-loop contract is the
    same: message k is due when the cumulative schedule reaches it, whatever happened before.
    """

    def __init__(self, timeline: Timeline, share: float, start_s: float = 0.0) -> None:
        if share <= 0:
            raise ValueError(f"share must be positive, got {share}")
        ramps = [p.rate for p in timeline.phases]
        self.share = share
        self.start_s = start_s
        self.end_s = timeline.duration_s
        n = len(ramps)
        self._start = np.array([r.start_s for r in ramps], dtype=np.float64)
        self._end = np.array([r.end_s for r in ramps], dtype=np.float64)
        self._v0 = np.array([r.v0 for r in ramps], dtype=np.float64)
        self._slope = np.array([r.slope for r in ramps], dtype=np.float64)
        # The same floating-point accumulation as OpenLoopSchedule, so that boundaries round the same way.
        base, bases, bounds = 0.0, [], []
        first = n
        sent0 = 0
        for i, ramp in enumerate(ramps):
            total = ramp.integral(ramp.start_s, ramp.end_s)
            bases.append(base)
            bounds.append(base + share * (total - 1e-9))
            if first == n and ramp.end_s > start_s:
                first = i
                sent0 = math.ceil(base + share * ramp.integral(ramp.start_s, start_s))
            base += share * ramp.integral(-math.inf, math.inf)
        self._base = np.array(bases, dtype=np.float64)
        self._bound = np.maximum.accumulate(np.array(bounds, dtype=np.float64)) if n else np.zeros(0)
        self._first_ramp = first
        self._sent0 = sent0 if first < n else 0
        last_k = math.ceil(self._bound[-1]) if n and first < n else 0  # first global index past the schedule
        self.total = max(0, last_k - self._sent0)  # messages this publisher sends in the whole run

    def due_times(self, seq_from: int, count: int) -> np.ndarray:
        """Intended send times of sequence numbers [seq_from, seq_from + count) (clipped to the schedule)."""
        seq_to = min(seq_from + count, self.total)
        if seq_to <= seq_from:
            return np.zeros(0, dtype=np.float64)
        k = np.arange(seq_from + self._sent0, seq_to + self._sent0, dtype=np.float64)
        idx = np.searchsorted(self._bound, k, side="right")
        idx = np.maximum(idx, self._first_ramp)
        need = (k - self._base[idx]) / self.share
        a, s = self._v0[idx], self._slope[idx]
        root = np.sqrt(np.maximum(a * a + 2.0 * s * need, 0.0))
        denom = a + root
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(denom > 0, 2.0 * need / denom, np.inf)
        u = np.where(need <= 0, 0.0, u)
        return np.minimum(self._start[idx] + u, self._end[idx])

    def phase_first_seq(self) -> list[int]:
        """For each phase i (0-based), the first sequence number scheduled in it; plus `total` at the end.

        Message seq belongs to phase i when first[i] <= seq < first[i + 1] (phases may hold no message).
        """
        firsts = [0]
        for i in range(len(self._bound)):
            upto = max(0, math.ceil(self._bound[i]) - self._sent0) if i >= self._first_ramp else 0
            firsts.append(min(max(upto, firsts[-1]), self.total))
        firsts[-1] = self.total
        return firsts


def per_second_counts(due: np.ndarray, seconds: int) -> np.ndarray:
    """How many of `due` fall in each whole second [s, s+1), s = 0 .. seconds-1."""
    if due.size == 0:
        return np.zeros(seconds, dtype=np.int64)
    return np.bincount(np.minimum(due.astype(np.int64), seconds - 1), minlength=seconds)[:seconds]


# ------------------------------------------------------------------------------------------ client plan


@dataclass(frozen=True)
class PublisherPlan:
    index: int  # global publisher id (carried in every message body)
    worker: int
    queue: str
    node: int  # 0-based index into ClusterInfo.nodes it connects to first
    start_s: float  # random start delay
    share: float  # fraction of the total publish rate


@dataclass(frozen=True)
class ConsumerPlan:
    index: int
    worker: int
    queue: str
    node: int


def plan_clients(workload: Workload, nodes: int, workers: int, seed: int | str = 2020
                 ) -> tuple[list[PublisherPlan], list[ConsumerPlan]]:
    """Publisher i publishes to queue i mod Q, consumer j consumes queue j mod Q (client_queue: PerfTest's spread);
    clients are dealt round-robin over worker processes and cluster nodes; start delays are seeded."""
    if workers < 1 or nodes < 1:
        raise ValueError("need at least one worker and one node")
    queues = workload.queues.names()
    pubs = workload.publishers
    delay = pubs.random_start_delay_s
    publishers = [
        PublisherPlan(index=i, worker=i % workers, queue=queues[client_queue(i, len(queues))], node=i % nodes,
                      start_s=random.Random(f"{seed}/publisher/{i}").uniform(0.0, delay) if delay > 0 else 0.0,
                      share=1.0 / pubs.count)
        for i in range(pubs.count)
    ]
    # Consumers are offset by one node so that a queue's publisher and consumer rarely share a connection node.
    consumers = [
        ConsumerPlan(index=j, worker=j % workers, queue=queues[client_queue(j, len(queues))], node=(j + 1) % nodes)
        for j in range(workload.consumers.count)
    ]
    return publishers, consumers


def publisher_offsets(totals: list[int]) -> list[int]:
    """Start of each publisher's slice in the flat per-message arrays (accounting): a running sum."""
    offsets, acc = [], 0
    for t in totals:
        offsets.append(acc)
        acc += t
    offsets.append(acc)
    return offsets


