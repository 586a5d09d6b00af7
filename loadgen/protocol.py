"""The narrow client protocol between the drivers (what a client does) and the IO layer (how bytes move).

    Connector.open(driver) --> driver.on_open(link) ... driver.on_confirm / driver.on_deliveries ... link.close()

A `Link` is one open AMQP connection + channel as a driver sees it: publish a batch, ack, how much is still
queued for the socket, close. A `Driver` is told about confirms and deliveries. The pika implementation
(`loadgen.client`: SelectConnection, hand-built publish frames, the `loadgen.frames` receive fast path) is one
implementation of `Connector` + `Link`; tests use in-memory fakes. A new rate mode (closed-loop "max"
publishing) or a workload group is a new `Driver`, not a change to the IO loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

# One delivery as decoded by `loadgen.frames` (fields of `loadgen.frames.Delivery`, as a plain tuple):
# channel, delivery tag, redelivered, run nonce, publisher, sequence number, intended send time (us).
DeliveryFields = tuple[int, int, int, int, int, int, int]


class Link(Protocol):
    """One open connection + channel, from the driver's side."""

    def publish_batch(self, nonce: int, publisher: int, first_seq: int, intended_us: Sequence[int]) -> None:
        """basic.publish of len(intended_us) messages carrying sequence numbers first_seq, first_seq + 1, ..."""

    def ack(self, delivery_tag: int, multiple: bool) -> None: ...

    def set_prefetch(self, prefetch: int) -> None:
        """A consumer link: the new prefetch for its consumer from now on (a live step change)."""

    def backlog_bytes(self) -> int:
        """Bytes written but not yet taken by the socket (a driver stops feeding a link that does not drain)."""

    def close(self) -> None: ...


class Driver(Protocol):
    """What the IO layer calls back. `ready` is the connector's view: False before the first open, True when
    open, None while it reconnects after a loss."""

    ready: bool | None
    link: Link | None

    def on_open(self, link: Link) -> None:
        """A fresh channel: delivery tags restart at 1."""

    def on_confirm(self, tag: int, multiple: int, positive: bool) -> None: ...

    def on_deliveries(self, deliveries: list[DeliveryFields]) -> None: ...


class Connector(Protocol):
    """Opens a driver's link (and reopens it after a loss); ends in `driver.on_open(link)`."""

    def open(self, driver: Driver) -> None: ...


class DriverHost(Protocol):
    """What drivers share within one worker: the clock, the second's stats and the per-message key lists."""

    nonce: int
    offsets: list[int]
    processing_s: float
    stats: object  # loadgen.drivers.SecondStats
    fresh_keys: list[int]
    redelivered_keys: list[int]
    reordered_keys: list[int]

    def now_s(self) -> float: ...

    def now_us(self) -> int: ...

    def add_scheduled(self, due: np.ndarray) -> None: ...
