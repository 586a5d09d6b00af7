"""The pika half of the load generator: one worker process = one IO loop driving a slice of the clients.

A worker owns some publishers and some consumers (one AMQP connection and channel each, as PerfTest does),
all on one pika `SelectConnection` IO loop. It has two parts: `PikaConnector`, the connections (open, ready,
reconnect to the next node, connection.blocked, returns, tick-mode reads), and `Worker`, the tick loop: every
`tick_s` it publishes everything the open-loop schedule has made due, releases consumer acks whose simulated
processing has finished, and closes the per-second record. The tick loop takes its clock, IO loop and connections
as arguments (tests/test_loadgen_tickloop.py runs it against an in-memory broker on a simulated clock).

Hot-path bytes go through `wire` (templates out, `struct` parsing in) instead of pika's per-message frame objects;
pika still does the handshake, channel setup, returns, blocked notifications and everything rare.

Nothing here analyses: the worker counts, buckets latencies into `sizing.contract.histogram` counts, and keeps the
per-message bookkeeping (confirm state per publisher, consumed counts per message) that the runner merges
after the drain.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import select
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import pika
from pika.adapters.select_connection import IOLoop
from pika.adapters.utils import io_services_utils

from loadgen import accounting, wire
from loadgen.drivers import ConsumerState, PublisherState, SecondStats, hist_bytes, seconds_to_us
from loadgen.frames import decode as decode_frames
from loadgen.messages import Done, Event, Ready, Row, Start, Stop, WorkerConfig, WorkerError, WorkerMessage
from loadgen.schedule import per_second_counts
from sizing.campaign import RATE_MAX
from sizing.criteria.rules import worker_behind

LOG = logging.getLogger("loadgen.worker")

# pika reads 4 KiB per recv() (about three 1 KB deliveries per syscall and per Python callback); larger
# reads cut the receive path's per-message cost several-fold. Process-local: only worker processes import this.
RECV_BYTES = 1 << 17
io_services_utils._AsyncTransportBase._MAX_RECV_BYTES = RECV_BYTES
io_services_utils._AsyncTransportBase._MAX_CONSUME_BYTES = 1 << 20

RECONNECT_DELAY_S = 1.0


# ----------------------------------------------------------------------------------------- connection


class FastConnection(pika.SelectConnection):
    """A SelectConnection whose receive path decodes deliveries and confirms itself (see `wire`)."""

    def __init__(self, connector: PikaConnector, parameters: pika.ConnectionParameters, **kwargs: Any) -> None:
        self._lg_connector = connector
        self._lg_rx = bytearray()
        self.fast_consumers: dict[int, ConsumerState] = {}
        self.fast_publishers: dict[int, PublisherState] = {}
        super().__init__(parameters, custom_ioloop=connector.ioloop, **kwargs)

    def socket_fd(self) -> int | None:
        transport = self._transport
        return transport._sock.fileno() if transport is not None and transport._sock is not None else None

    def polled_reads(self, on: bool) -> None:
        """Tick mode: take the socket away from the IO loop's read watcher (the worker polls it once per tick),
        or give it back (for the close handshake)."""
        transport, fd = self._transport, self.socket_fd()
        if transport is None or fd is None or fd < 0:
            return
        if on:
            transport._nbio.remove_reader(fd)
        else:
            transport._nbio.set_reader(fd, transport._on_socket_readable)

    def pull(self) -> None:
        """Read what the socket holds now: one recv() (pika's own read path loops until EAGAIN, which is a
        second syscall and a raised exception per read); EOF and errors go to pika's path, which handles them."""
        transport = self._transport
        if transport is None or transport._sock is None:
            return
        try:
            data = transport._sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            transport._on_socket_readable()
            return
        self._on_data_available(data)
        if len(data) == RECV_BYTES and self._transport is transport:
            self.pull()  # more may be waiting

    # -- loadgen.protocol.Link: one channel per connection, set up by PikaConnector._on_channel
    lg_channel = 1
    lg_template: wire.PublishTemplate | None = None

    def publish_batch(self, nonce: int, publisher: int, first_seq: int, intended_us: Sequence[int]) -> None:
        self.fast_write(self.lg_template.batch(nonce, publisher, first_seq, intended_us))

    def ack(self, delivery_tag: int, multiple: bool) -> None:
        self.fast_write(wire.ack_frame(self.lg_channel, delivery_tag, multiple))

    # Set by PikaConnector._on_channel for a consumer link.
    lg_ch: Any = None
    lg_consumer_tag: str | None = None
    lg_consume: Any = None  # (callback) -> consumer tag: basic.consume with the consumer's queue, ack mode, args

    def set_prefetch(self, prefetch: int) -> None:
        """Re-subscribe with the new prefetch: basic.cancel, basic.qos, basic.consume on the same channel.

        Checked against RabbitMQ 3.10 (tests/test_loadgen_max_mode.py reads the consumer's prefetch_count back from
        the queue with rabbitmqctl eval): basic.qos with global=false sets the limit for consumers created *after*
        it on the channel; an existing consumer keeps the prefetch it subscribed with. Hence the re-subscribe. Unacked
        deliveries stay the channel's (delivery tags keep counting), so the driver's ack bookkeeping carries on."""
        ch, tag = self.lg_ch, self.lg_consumer_tag
        if ch is None or tag is None or not ch.is_open:
            return

        def consume(_frame: Any) -> None:
            self.lg_consumer_tag = self.lg_consume(
                lambda _ok: self._lg_connector.event("consumer_resubscribed", prefetch=prefetch))

        ch.basic_cancel(tag, callback=lambda _frame: ch.basic_qos(prefetch_count=prefetch, callback=consume))

    def backlog_bytes(self) -> int:
        transport = self._transport
        return transport.get_write_buffer_size() if transport is not None else 0

    def fast_write(self, data: bytes | bytearray) -> None:
        """Write straight to the socket when nothing is queued (saves two epoll_ctl calls per write)."""
        transport = self._transport
        if transport is None:
            return
        self.bytes_sent += len(data)
        if transport.get_write_buffer_size() == 0:
            try:
                sent = transport._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                sent = 0  # let the transport's own write path notice and report the failure
            if sent == len(data):
                return
            data = bytes(data[sent:])
        transport.write(bytes(data))

    def _on_data_available(self, data_in: bytes) -> None:
        rx = self._lg_rx
        rx += data_in
        pos = handed = frames = 0
        consumers, publishers = self.fast_consumers, self.fast_publishers
        while True:
            decoded = decode_frames(rx, pos, consumers, publishers)
            frames += decoded.frames
            if decoded.deliveries:
                # One connection carries one client: every delivery of a read is for the same consumer.
                consumers[decoded.deliveries[0][0]].on_deliveries(decoded.deliveries)
            for channel, tag, multiple, positive in decoded.confirms:
                publishers[channel].on_confirm(tag, multiple, positive)
            pos = decoded.end
            if decoded.other is None:
                break
            lo, hi = decoded.other
            handed += hi - lo  # pika counts these bytes itself
            super()._on_data_available(bytes(rx[lo:hi]))  # pika's own path for everything rare
            if self._lg_rx is not rx:
                return
        del rx[:pos]
        self.bytes_received += pos - handed  # the heartbeat checker watches this counter
        self.frames_received += frames

    def _adapter_disconnect_stream(self) -> None:
        self._lg_rx = bytearray()
        super()._adapter_disconnect_stream()


# ----------------------------------------------------------------------------------------- connections


class ConnectorHost(Protocol):
    """What the connection part asks of the tick loop: the clock, the second's stats, and the way to the runner."""

    stats: SecondStats
    second: int

    @property
    def started(self) -> bool: ...

    def now_s(self) -> float: ...

    def event(self, kind: str, node: str | None = None, at_s: float | None = None, **detail: Any) -> None: ...

    def send(self, message: WorkerMessage) -> None: ...


class PikaConnector:
    """The connection part of a worker (a `loadgen.protocol.Connector`): one pika connection + channel per client,
    readiness, reconnects to the next node, connection.blocked, returns, and the tick-mode read poller.

    It knows nothing of schedules or seconds: the tick loop (`Worker`) asks it to read (`read_all`) and to close;
    it tells the tick loop what happened through `ConnectorHost` (events, Ready, WorkerError, stats)."""

    def __init__(self, cfg: WorkerConfig, ioloop: IOLoop, host: ConnectorHost, clients: int) -> None:
        self.cfg, self.ioloop, self.host = cfg, ioloop, host
        self.connections: list[FastConnection] = []
        self.pending_ready = clients
        self.sent_ready = False
        self.closing = False
        # Max mode is a closed loop: a confirm or delivery must be seen when it arrives, not at the next tick
        # (with tick reads a window of 1 would cap a publisher at 1/tick_s msg/s), so such runs use event reads.
        closed_loop = any(p.rate_mode == RATE_MAX for p in cfg.timeline.phases)
        self.read_poller = select.epoll() if cfg.io_mode == "tick" and not closed_loop else None
        self.polled: dict[int, FastConnection] = {}

    def _params(self, node_index: int, name: str) -> pika.ConnectionParameters:
        cluster = self.cfg.cluster
        node = cluster.nodes[node_index % len(cluster.nodes)]
        return pika.ConnectionParameters(
            host=node.host, port=node.amqp_port, virtual_host=cluster.vhost,
            credentials=pika.PlainCredentials(cluster.username, cluster.password),
            heartbeat=30, connection_attempts=1, socket_timeout=5, blocked_connection_timeout=None,
            client_properties={"connection_name": f"loadgen-w{self.cfg.worker}-{name}"})

    def open_all(self, clients: Sequence[PublisherState | ConsumerState]) -> None:
        for client in clients:
            self.open(client)
        if not clients:
            self.sent_ready = True
            self.host.send(Ready(self.cfg.worker))

    def open(self, client: PublisherState | ConsumerState) -> None:
        """loadgen.protocol.Connector: a pika connection + channel for the driver, ending in driver.on_open."""
        kind = "pub" if isinstance(client, PublisherState) else "con"
        conn = FastConnection(self, self._params(client.node, f"{kind}{client.plan.index}"),
                              on_open_callback=lambda c: self._on_open(c, client),
                              on_open_error_callback=lambda c, err: self._on_lost(client, err),
                              on_close_callback=lambda c, err: self._on_lost(client, err))
        client.link = conn
        self.connections.append(conn)

    def event(self, kind: str, **detail: Any) -> None:
        self.host.event(kind, **detail)

    def _on_open(self, conn: FastConnection, client: PublisherState | ConsumerState) -> None:
        conn.add_on_connection_blocked_callback(lambda c, frame: self._on_blocked(client, True, _blocked_reason(frame)))
        conn.add_on_connection_unblocked_callback(lambda c, frame: self._on_blocked(client, False))
        conn.channel(on_open_callback=lambda ch: self._on_channel(conn, ch, client))

    def _on_channel(self, conn: FastConnection, ch: Any, client: PublisherState | ConsumerState) -> None:
        workload = self.cfg.workload
        conn.lg_channel = ch.channel_number
        if isinstance(client, PublisherState):
            conn.lg_template = wire.PublishTemplate(
                ch.channel_number, client.plan.queue, workload.message.size_bytes, workload.message.persistent,
                client.mandatory, frame_max=conn._body_max_length + 8)
            client.on_open(conn)
            ch.add_on_return_callback(lambda *args: self._on_return())
            if client.confirms:
                conn.fast_publishers[ch.channel_number] = client
                ch.confirm_delivery(lambda frame: None, callback=lambda frame: self._client_ready(client))
            else:
                self._client_ready(client)
        else:
            client.on_open(conn)
            conn.fast_consumers[ch.channel_number] = client
            arguments = {"x-stream-offset": self.cfg.stream_offset} if workload.queues.type == "stream" else None

            def consume(_frame: Any) -> None:
                conn.lg_consumer_tag = ch.basic_consume(client.plan.queue, lambda *a: None, auto_ack=client.auto_ack,
                                                        arguments=arguments,
                                                        callback=lambda frame: self._client_ready(client))

            conn.lg_ch = ch
            conn.lg_consume = lambda callback: ch.basic_consume(
                client.plan.queue, lambda *a: None, auto_ack=client.auto_ack, arguments=arguments, callback=callback)

            ch.basic_qos(prefetch_count=client.prefetch, callback=consume)

    def _client_ready(self, client: PublisherState | ConsumerState) -> None:
        recovering = client.ready is None
        client.ready = True
        if self.host.started:
            self.poll_reads(client.link)
        if recovering:
            self.event("connection_recovered", node=self.cfg.cluster.nodes[client.node].name,
                       client=client_name(client))
            return
        self.pending_ready -= 1
        if self.pending_ready == 0 and not self.sent_ready:
            self.sent_ready = True
            self.host.send(Ready(self.cfg.worker))

    # -- tick-mode reads: the worker polls every socket once per tick instead of one callback per read
    def poll_reads(self, conn: FastConnection | None) -> None:
        if self.read_poller is None or conn is None:
            return
        fd = conn.socket_fd()
        if fd is None or fd < 0:
            return
        conn.polled_reads(True)
        try:
            self.read_poller.register(fd, select.EPOLLIN)
        except FileExistsError:  # the fd number of a closed connection, reused
            self.read_poller.modify(fd, select.EPOLLIN)
        self.polled[fd] = conn

    def read_all(self) -> None:
        if self.read_poller is None:
            return
        for fd, _events in self.read_poller.poll(0):
            conn = self.polled.get(fd)
            if conn is None or conn.socket_fd() != fd:
                with contextlib.suppress(OSError, ValueError):
                    self.read_poller.unregister(fd)
                self.polled.pop(fd, None)
                continue
            conn.pull()

    def _on_return(self) -> None:
        self.host.stats.returned += 1

    def _on_blocked(self, client: PublisherState | ConsumerState, blocked: bool, reason: str | None = None) -> None:
        node = self.cfg.cluster.nodes[client.node].name
        if isinstance(client, PublisherState):
            self.host.stats.blocked_ms += client.set_blocked(blocked, self.host.now_s(), self.host.second)
        # The broker's own reason ("low on memory", "low on disk"): which alarm blocked the connection, as the broker
        # said it at that instant, where a management sample every few seconds can miss a short alarm.
        extra = {} if reason is None else {"reason": reason}
        self.event("connection_blocked" if blocked else "connection_unblocked", node=node, client=client_name(client),
                   **extra)

    def _on_lost(self, client: PublisherState | ConsumerState, error: Any) -> None:
        if self.closing:
            return
        if client.link is not None and client.link in self.connections:
            self.connections.remove(client.link)
        if not self.sent_ready:
            self.host.send(WorkerError(self.cfg.worker, f"{client_name(client)} could not connect: {error!r}"))
            return
        if isinstance(client, PublisherState):
            client.set_blocked(False, self.host.now_s(), self.host.second)  # a new connection starts unblocked
        client.ready = None  # None: lost, reconnecting (False only before the first open)
        client.link = None
        node = self.cfg.cluster.nodes[client.node].name
        self.event("connection_closed", node=node, client=client_name(client), error=repr(error)[:300])
        client.node = (client.node + 1) % len(self.cfg.cluster.nodes)  # try the next node, as a client with
        self.ioloop.call_later(RECONNECT_DELAY_S, lambda: self._reconnect(client))  # several URIs would

    def _reconnect(self, client: PublisherState | ConsumerState) -> None:
        if not self.closing:
            self.open(client)

    def close(self) -> None:
        """No more reconnects; pika's own reads back (the close handshake needs them); close every connection."""
        self.closing = True
        for fd, conn in list(self.polled.items()):
            with contextlib.suppress(OSError, ValueError):
                self.read_poller.unregister(fd)
            if conn.socket_fd() == fd:
                conn.polled_reads(False)
        self.polled.clear()
        for conn in list(self.connections):
            if conn.is_open:
                conn.close()


def client_name(client: PublisherState | ConsumerState) -> str:
    return f"{'publisher' if isinstance(client, PublisherState) else 'consumer'}-{client.plan.index}"


# ----------------------------------------------------------------------------------------- the tick loop


class Connections(Protocol):
    """The tick loop's view of its connection part (PikaConnector; a fake in the tick-loop tests)."""

    def open_all(self, clients: Sequence[PublisherState | ConsumerState]) -> None: ...

    def poll_reads(self, conn: Any) -> None: ...

    def read_all(self) -> None: ...

    def close(self) -> None: ...


class Worker:
    """The tick loop of one worker process (a `loadgen.protocol.DriverHost`): every `tick_s` it reads, publishes
    what the schedule made due, releases finished consumer acks, applies step boundaries and closes the per-second
    row. The connections are its `Connections` (pika by default); the clock and the IO loop are injectable."""

    def __init__(self, cfg: WorkerConfig, ctl: Any, out: Any, ioloop: Any = None,
                 connections: Callable[[Worker], Connections] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg, self.ctl, self.out = cfg, ctl, out  # ctl: runner -> worker commands; out: worker -> runner
        self.ioloop = IOLoop() if ioloop is None else ioloop
        self.clock = clock
        self.nonce = cfg.nonce
        self.offsets = list(cfg.offsets)
        self.stats = SecondStats()
        self.fresh_counts = np.zeros(max(self.offsets[-1], 1), dtype=np.uint8)
        self.fresh_keys: list[int] = []
        self.redelivered_keys: list[int] = []
        self.reordered_keys: list[int] = []
        self.all_redelivered: list[np.ndarray] = []
        self.all_reordered: list[np.ndarray] = []
        self.publishers = [PublisherState(p, cfg, self) for p in cfg.publishers]
        self.consumers = [ConsumerState(c, cfg, self) for c in cfg.consumers]
        self.duration = max(1, math.ceil(cfg.timeline.duration_s))
        self.scheduled = np.zeros(self.duration + 1, dtype=np.int64)
        self.start_mono: float | None = None
        self.start_epoch = 0.0
        self.second = 0
        self.processing_s = 0.0
        self.stopping = False
        self.cpu_mark = time.process_time()
        self.last_behind_event = -math.inf
        self.next_tick = 0.0
        self.phase_number = 0  # the phase whose client settings are in force
        self.next_boundary_s = 0.0
        clients = len(self.publishers) + len(self.consumers)
        self.connections: Connections = (connections(self) if connections is not None
                                          else PikaConnector(cfg, self.ioloop, self, clients))

    # -- clock
    @property
    def started(self) -> bool:
        return self.start_mono is not None

    def now_s(self) -> float:
        return self.clock() - self.start_mono if self.start_mono is not None else 0.0

    def now_us(self) -> int:
        return int((self.clock() - self.start_mono) * 1e6) if self.start_mono is not None else 0

    def add_scheduled(self, due: np.ndarray) -> None:
        self.scheduled += per_second_counts(due, self.duration + 1)

    # -- messages to the runner
    def send(self, message: WorkerMessage) -> None:
        self.out.put(message)

    def event(self, kind: str, node: str | None = None, at_s: float | None = None, **detail: Any) -> None:
        """An event now, or (`at_s`) about the second that began then: its phase is that second's."""
        second = self.now_s() if at_s is None else at_s
        phase = self.cfg.timeline.phase_at(second) if self.start_mono is not None else None
        self.send(Event(self.cfg.worker, {
            "ts": self.start_epoch + second if self.start_mono else time.time(), "second": second,
            "phase": phase.number if phase else 0, "kind": kind, "fault_id": None, "fault_kind": None, "node": node,
            "detail": json.dumps({"worker": self.cfg.worker, **detail}, sort_keys=True)}))

    # -- the tick
    def start(self, start_mono: float, start_epoch: float) -> None:
        self.start_mono = start_mono
        self.start_epoch = start_epoch
        self.second = 0
        self.cpu_mark = time.process_time()
        self._enter_phase(0.0)
        for pub in self.publishers:
            if not pub.max_mode:
                pub.ensure_due(1.0)
        for client in [*self.publishers, *self.consumers]:
            if client.ready:
                self.connections.poll_reads(client.link)
        self.next_tick = max(0.0, self.now_s())
        self.ioloop.call_later(max(0.0, start_mono - self.clock()), self.tick)

    def tick(self) -> None:
        if self.stopping:
            return
        now = self.now_s()
        stats = self.stats
        lag = now - self.next_tick
        if lag > stats.tick_lag_max_s:
            stats.tick_lag_max_s = lag
        self.connections.read_all()
        while now >= self.second + 1:
            self.close_second()
        if now >= self.next_boundary_s:
            self._enter_phase(now)
        self.processing_s = self.cfg.timeline.processing_ms_at(now) / 1000.0
        for pub in self.publishers:
            pub.publish_due(now, stats)
        for con in self.consumers:
            if con.segments or con.processed > con.acked:
                con.advance(now)
        self.next_tick += self.cfg.tick_s
        if self.next_tick < now:
            self.next_tick = now  # never try to catch up a backlog of ticks: the schedule already did
        self.ioloop.call_later(max(0.0, self.next_tick - self.now_s()), self.tick)

    def _enter_phase(self, now: float) -> None:
        """Step boundary: apply the new phase's client settings (window, rate mode, ack interval, prefetch)."""
        phase = self.cfg.timeline.phase_at(now)
        if phase is None:
            self.next_boundary_s = math.inf
            return
        self.next_boundary_s = phase.end_s
        if phase.number == self.phase_number:
            return
        self.phase_number = phase.number
        for client in [*self.publishers, *self.consumers]:
            client.apply_phase(phase)

    def close_second(self, final: bool = False) -> None:
        """Emit the row of `self.second` and move on (also called for seconds a stalled tick skipped)."""
        s = self.second
        stats = self.stats
        now = self.now_s()
        end = min(now, s + 1)
        for pub in self.publishers:
            if not pub.max_mode:
                pub.ensure_due(s + 2)
            stats.blocked_ms += pub.blocked_ms_in(s, end)
        self._flush_keys()
        cpu = time.process_time()
        cpu_s, self.cpu_mark = cpu - self.cpu_mark, cpu
        delay_us = seconds_to_us([sent - due for sent, due in stats.delay_parts])
        delay_hist, delay_max = hist_bytes(delay_us)
        e2e_hist, e2e_max = hist_bytes(np.asarray(stats.e2e_us, dtype=np.float64))
        confirm_hist, _ = hist_bytes(seconds_to_us(stats.confirm_parts, stats.confirm_single))
        timeline = self.cfg.timeline
        phase = timeline.phase_at(s)
        is_max = bool(phase and phase.rate_mode == RATE_MAX)
        settings = phase.settings if phase else None
        workload = self.cfg.workload
        in_flight_max = max((p.in_flight_peak for p in self.publishers), default=0)
        for pub in self.publishers:
            pub.in_flight_peak = pub.in_flight
        warmup = bool(phase and s < phase.steady_start_s)
        row = {
            "worker": self.cfg.worker, "second": s, "ts": self.start_epoch + s,
            "phase": phase.number if phase else 0,
            "warmup": warmup,
            # Max mode has no target: its ramp is only a ceiling (sizing.planning.timeline.Phase.rate).
            "target_rate": 0.0 if is_max else timeline.scheduled(s, s + 1),
            "scheduled": 0 if is_max or s >= len(self.scheduled) else int(self.scheduled[s]),
            "processing_ms": timeline.processing_ms_at(s + 0.5),
            "published": stats.published, "confirmed": stats.confirmed, "nacked": stats.nacked,
            "returned": stats.returned, "consumed": stats.consumed, "redelivered": stats.redelivered,
            "acked": stats.acked, "foreign": stats.foreign, "in_flight": sum(p.in_flight for p in self.publishers),
            "publish_delay_max_us": delay_max, "publish_delay_hist": delay_hist, "e2e_hist": e2e_hist,
            "e2e_max_us": e2e_max if stats.e2e_us else None,
            "confirm_hist": confirm_hist, "blocked_ms": stats.blocked_ms, "cpu_s": cpu_s,
            "publishers": len(self.publishers), "consumers": len(self.consumers),
            # The client settings in force this second (issue 13) and what e2e latency is measured from.
            "rate_mode": phase.rate_mode if phase else "scheduled",
            "latency_basis": phase.latency_basis if phase else "intended",
            "confirms_in_flight": settings.confirms_in_flight if settings else workload.publishers.confirms_in_flight,
            "prefetch": settings.prefetch if settings else workload.consumers.prefetch,
            "multi_ack_every": settings.multi_ack_every if settings else workload.consumers.multi_ack_every,
            "in_flight_max": in_flight_max,
            "ack_hold_us": stats.ack_hold_us, "ack_holds": stats.ack_holds, "refill_us": stats.refill_us,
            "refills": stats.refills,
        }
        late_s = max((p.lateness_s(now) for p in self.publishers), default=0.0)
        # About second s, stamped and phased as s (closing it is already the next second, maybe the next phase's).
        # Not in a warm-up: those seconds are no figure of their phase, and a new step's settings taking hold lag
        # there (flow-control-rtt-scale: one lagging second at the start of each new confirm window).
        if not warmup and worker_behind(cpu_s, stats.tick_lag_max_s) and s - self.last_behind_event >= 10:
            self.last_behind_event = s
            self.event("worker_behind", at_s=float(s), cpu_s=round(cpu_s, 3),
                       tick_lag_ms=round(stats.tick_lag_max_s * 1000, 1),
                       publish_delay_max_ms=round(delay_max / 1000, 1))
        self.send(Row(self.cfg.worker, row, late_s=late_s, final=final))
        stats.reset()
        self.second = s + 1

    def _flush_keys(self) -> None:
        if self.fresh_keys:
            np.add.at(self.fresh_counts, np.asarray(self.fresh_keys, dtype=np.int64), 1)
            self.fresh_keys.clear()
        if self.redelivered_keys:
            self.all_redelivered.append(np.asarray(self.redelivered_keys, dtype=np.int64))
            self.redelivered_keys.clear()
        if self.reordered_keys:
            self.all_reordered.append(np.asarray(self.reordered_keys, dtype=np.int64))
            self.reordered_keys.clear()

    # -- commands from the runner
    def poll_ctl(self) -> None:
        try:
            while self.ctl.poll():
                command = self.ctl.recv()
                if isinstance(command, Start):
                    self.start(command.start_mono, command.start_epoch)
                elif isinstance(command, Stop):
                    self.stop()
                    return
        except (EOFError, OSError):
            self.stop()  # the runner is gone
            return
        self.ioloop.call_later(0.05, self.poll_ctl)

    def stop(self) -> None:
        if self.stopping:
            return
        now = self.now_s()
        for con in self.consumers:
            con.advance(now)
            con.maybe_ack(now, force=True)
        if self.start_mono is not None:
            self.close_second(final=True)
        self.stopping = True
        path = self.save_accounting()
        times = os.times()
        self.send(Done(self.cfg.worker, path, times.user, times.system,
                       published=sum(p.sent_total for p in self.publishers)))
        self.connections.close()
        self.ioloop.call_later(1.0, self.ioloop.stop)  # let the close frames go out, then end the loop

    def save_accounting(self) -> str:
        self._flush_keys()
        books = accounting.WorkerBooks(
            self.fresh_counts,
            np.concatenate(self.all_redelivered) if self.all_redelivered else np.zeros(0, np.int64),
            np.concatenate(self.all_reordered) if self.all_reordered else np.zeros(0, np.int64),
            published={p.plan.index: p.books()[0] for p in self.publishers},
            states={p.plan.index: p.books()[1] for p in self.publishers})
        return accounting.save(accounting.worker_path(self.cfg.out_dir, self.cfg.worker), books)

    def run(self) -> None:
        self.connections.open_all([*self.publishers, *self.consumers])
        self.ioloop.call_later(0.05, self.poll_ctl)
        self.ioloop.start()


def worker_main(cfg: WorkerConfig, ctl: Any, out: Any) -> None:
    """Entry point of a worker process."""
    logging.basicConfig(level=os.environ.get("LOADGEN_LOG_LEVEL", "WARNING"))
    profile_dir = os.environ.get("LOADGEN_PROFILE")  # cProfile each worker (benchmarks/loadgen_cpu.py --profile)
    try:
        if profile_dir:
            import cProfile

            profiler = cProfile.Profile(time.process_time)  # CPU, not wall: the host is shared
            profiler.runcall(Worker(cfg, ctl, out).run)
            profiler.dump_stats(os.path.join(profile_dir, f"worker-{cfg.worker}.prof"))
        else:
            Worker(cfg, ctl, out).run()
    except BaseException:  # report anything to the runner, which records the failure
        out.put(WorkerError(cfg.worker, traceback.format_exc()))
        raise


def _blocked_reason(frame: Any) -> str | None:
    """connection.blocked's reason field (pika hands the Method frame to the callback)."""
    reason = getattr(getattr(frame, "method", None), "reason", None)
    return reason.decode() if isinstance(reason, bytes) else reason
