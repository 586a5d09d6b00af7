"""The worker's tick loop apart from its connections: a fake clock, a fake IO loop and an in-memory loopback broker
stand in for pika and RabbitMQ, so the loop that publishes, consumes, acks and closes seconds is tested with no
socket. Known answer: the open-loop schedule itself (sizing.planning.timeline.OpenLoopSchedule, computed independently
of the worker's batch schedule) and every message delivered exactly once."""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

from loadgen import accounting, wire
from loadgen.client import Worker
from loadgen.messages import Done, Ready, Row, Start, Stop, WorkerConfig
from loadgen.schedule import plan_clients
from sizing.campaign import parse_campaign
from sizing.planning.timeline import OpenLoopSchedule, expand
from sizing.resources.cluster import ClusterInfo, NodeInfo

TICK_S = 0.005
SPEC = {
    "name": "t", "catalog": "aws-us-east-1-2020", "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 1, "name_pattern": "q-{n}", "type": "quorum"},
        "message": {"size_bytes": 64, "persistent": True},
        "publishers": {"count": 1, "confirms_in_flight": 50, "random_start_delay_s": 0},
        "consumers": {"count": 1, "prefetch": 100, "multi_ack_every": 10, "processing_ms": 0},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [{"name": "steps", "warmup_s": 1, "steps": {"rates": [100, 400, 1000], "duration_s": 2}}],
}


class FakeLoop:
    """The IO loop's call_later on a simulated clock: callbacks run in time order, the clock jumps to each."""

    def __init__(self) -> None:
        self.now = 100.0
        self.queue: list[tuple[float, int, object]] = []
        self.order = itertools.count()

    def call_later(self, delay: float, callback) -> None:
        heapq.heappush(self.queue, (self.now + delay, next(self.order), callback))

    def start(self) -> None:
        while self.queue:
            when, _, callback = heapq.heappop(self.queue)
            self.now = max(self.now, when)
            callback()

    def stop(self) -> None:
        self.queue.clear()


class LoopbackLink:
    """One client's channel on the loopback broker (a loadgen.protocol.Link)."""

    def __init__(self, broker: LoopbackBroker, driver) -> None:
        self.broker, self.driver = broker, driver
        self.template = wire.PublishTemplate(1, "q-1", 64, True, False)
        self.published = 0
        self.acks: list[tuple[int, bool]] = []

    def publish_batch(self, nonce, publisher, first_seq, intended_us) -> None:
        batch = self.template.batch(nonce, publisher, first_seq, intended_us)
        size, offset = self.template.size, self.template.body_header_offset
        self.broker.queued.extend(wire.parse_body_header(batch, i + offset) for i in range(0, len(batch), size))
        self.published += len(intended_us)
        self.broker.confirms.append((self.driver, self.published))

    def ack(self, delivery_tag: int, multiple: bool) -> None:
        self.acks.append((delivery_tag, multiple))

    def set_prefetch(self, prefetch: int) -> None:
        pass

    def backlog_bytes(self) -> int:
        return 0

    def close(self) -> None:
        pass


class LoopbackBroker:
    """The worker's `Connections`: every client opens at once; what is published is confirmed and delivered to the
    one consumer at the next read, as tick-mode reads see a real broker's answers (one tick later)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.queued: list[tuple[int, int, int, int]] = []
        self.confirms: list[tuple[object, int]] = []
        self.consumer = None
        self.delivery_tag = 0
        self.closed = False

    def open_all(self, clients) -> None:
        for client in clients:
            client.on_open(LoopbackLink(self, client))
            client.ready = True
            if client in self.worker.consumers:
                self.consumer = client
        self.worker.send(Ready(self.worker.cfg.worker))

    def poll_reads(self, conn) -> None:
        pass

    def read_all(self) -> None:
        for publisher, tag in self.confirms:
            publisher.on_confirm(tag, 1, True)
        self.confirms.clear()
        if self.queued:
            deliveries = []
            for nonce, publisher, seq, intended_us in self.queued:
                self.delivery_tag += 1
                deliveries.append((1, self.delivery_tag, 0, nonce, publisher, seq, intended_us))
            self.queued.clear()
            self.consumer.on_deliveries(deliveries)

    def close(self) -> None:
        self.closed = True


class Outbox(list):
    put = list.append


class Commands:
    """The runner's end of the control pipe: each command becomes readable at its time on the simulated clock."""

    def __init__(self, loop: FakeLoop, timed: list[tuple[float, object]]) -> None:
        self.loop, self.timed = loop, timed

    def poll(self) -> bool:
        return bool(self.timed) and self.timed[0][0] <= self.loop.now

    def recv(self) -> object:
        return self.timed.pop(0)[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    campaign = parse_campaign(SPEC)
    scenario = campaign.scenario("steps")
    timeline = expand(scenario, 1)
    pubs, cons = plan_clients(scenario.workload, 1, 1)
    cluster = ClusterInfo("local", "c", (NodeInfo(1, "n1", "127.0.0.1", 1, 2),))
    out_dir = str(tmp_path_factory.mktemp("books"))
    cfg = WorkerConfig(0, 1, cluster, scenario.workload, timeline, tuple(pubs), tuple(cons), (0, 10**6), 42, out_dir,
                       tick_s=TICK_S)
    loop, outbox = FakeLoop(), Outbox()
    start = loop.now + 0.5  # the runner's Start names a scenario second 0 a little ahead, as the runner does
    commands = Commands(loop, [(loop.now + 0.1, Start(start, 1_700_000_000.0)),
                               (start + timeline.duration_s + 0.5, Stop())])
    worker = Worker(cfg, commands, outbox, ioloop=loop, connections=LoopbackBroker, clock=lambda: loop.now)
    worker.run()  # returns when the loop has stopped: after Stop, the accounting, Done and the close
    expected = OpenLoopSchedule(timeline, 1.0, 0.0)
    due = []
    while (t := expected.next_due()) is not None:
        due.append(t)
    return worker, outbox, np.array(due)


def rows(outbox) -> list[dict]:
    return [m.record for m in outbox if isinstance(m, Row)]


def test_each_second_publishes_what_the_open_loop_schedule_made_due(run):
    _, outbox, due = run
    seconds = rows(outbox)
    assert [r["second"] for r in seconds] == list(range(len(seconds)))
    expected = np.bincount(np.floor(due).astype(int), minlength=len(seconds)).tolist()
    assert [r["scheduled"] for r in seconds[:len(expected)]] == expected[:len(seconds)]
    # Sent within one tick of its intended time: a second's sends are its due ones, give or take the last tick.
    for r, n in zip(seconds, expected, strict=False):
        assert abs(r["published"] - n) <= 1000 * TICK_S + 1
    assert sum(r["published"] for r in seconds) == len(due)
    assert [r["phase"] for r in seconds[:6]] == [1, 1, 2, 2, 3, 3]


def test_every_message_is_confirmed_consumed_once_and_acked(run):
    _, outbox, due = run
    seconds = rows(outbox)
    assert sum(r["confirmed"] for r in seconds) == len(due)
    assert sum(r["consumed"] for r in seconds) == len(due) and sum(r["redelivered"] for r in seconds) == 0
    assert sum(r["acked"] for r in seconds) == len(due)
    done = [m for m in outbox if isinstance(m, Done)]
    assert len(done) == 1 and done[0].published == len(due)
    books = accounting.load(done[0].path)
    assert books.fresh_counts[:len(due)].tolist() == [1] * len(due) and not books.fresh_counts[len(due):].any()
    assert books.published == {0: len(due)} and not books.reordered.size


def test_the_loop_hands_reads_and_closing_to_its_connections(run):
    worker, outbox, _ = run
    assert isinstance(outbox[0], Ready) and worker.connections.closed
    # Deliveries are seen at the next read, one tick after the publish: end-to-end latency within two ticks.
    assert max(r["e2e_max_us"] or 0 for r in rows(outbox)) <= 2 * TICK_S * 1e6 + 1
