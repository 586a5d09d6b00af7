"""What the runner and its worker processes send each other: typed, picklable values (no tuples).

`WorkerConfig` goes to a worker once at spawn; `Start`/`Stop` are the runner's commands; `Ready`, `Row`,
`Event`, `WorkerError` and `Done` are what a worker reports (`loadgen.pool` moves them between processes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadgen.schedule import ConsumerPlan, PublisherPlan
from sizing.campaign import Workload
from sizing.planning.timeline import Timeline
from sizing.resources.cluster import ClusterInfo


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


# ------------------------------------------------------------------ runner -> worker


@dataclass(frozen=True)
class Start:
    """Scenario second 0 on the system-wide monotonic clock, and the epoch time it corresponds to."""

    start_mono: float
    start_epoch: float


@dataclass(frozen=True)
class Stop:
    pass


# ------------------------------------------------------------------ worker -> runner


@dataclass(frozen=True)
class Ready:
    """Every client of the worker is connected."""

    worker: int


@dataclass(frozen=True)
class Row:
    """One worker-second: `record` has the client_seconds columns (sizing.contract.records, without the run key)."""

    worker: int
    record: dict[str, Any]
    late_s: float = 0.0  # how far the oldest due, unsent message is behind (progress line)
    final: bool = False  # the partial second closed by the stop


@dataclass(frozen=True)
class Event:
    """One `events` record (sizing.contract.records) raised by the worker."""

    worker: int
    record: dict[str, Any]


@dataclass(frozen=True)
class WorkerError:
    worker: int
    text: str


@dataclass(frozen=True)
class Done:
    """The worker stopped: its accounting file (`loadgen.accounting`) and its process CPU for the whole run."""

    worker: int
    path: str
    user_s: float
    system_s: float
    published: int


WorkerMessage = Ready | Row | Event | WorkerError | Done
