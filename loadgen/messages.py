"""What the runner and its worker processes send each other: typed, picklable values (no tuples).

`WorkerConfig` goes to a worker once at spawn; `Start`/`Stop` are the runner's commands; `Ready`, `Row`,
`Event`, `WorkerError` and `Done` are what a worker reports (`loadgen.pool` moves them between processes).
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.schedule import ConsumerPlan, PublisherPlan
from sizing.cluster import ClusterInfo
from sizing.spec import Workload
from sizing.timeline import Timeline


@dataclass(frozen=True)
class WorkerConfig:
    worker: int
    workers: int
    cluster: ClusterInfo
    workload: Workload
    timeline: Timeline
    publishers: tuple[PublisherPlan, ...]  # this worker's publishers
    consumers: tuple[ConsumerPlan, ...]
    offsets: tuple[int, ...]  # flat-array offset of every publisher of the run (len = publishers + 1)
    nonce: int  # run nonce in every body: messages of another run are counted as foreign
    out_dir: str  # where the worker leaves its accounting arrays for the runner
    tick_s: float = 0.005
    stream_offset: str = "next"
    # "tick": sockets are read once per tick (one epoll call for all of them), so the process wakes up
    # 1/tick_s times a second whatever the message rate; deliveries and confirms are then seen up to one
    # tick late (included in the recorded latencies). "event": pika's read watchers, a wake-up per read.
    io_mode: str = "tick"
