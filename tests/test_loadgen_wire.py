"""Hot-path bytes: publish templates and acks equal pika's own marshalling; the receive fast path decodes
deliveries and confirms split at any byte boundary; simulated consumer processing respects its rate."""

from __future__ import annotations

import numpy as np
import pytest
from pika import frame, spec

from loadgen import wire
from loadgen.client import FastConnection
from loadgen.drivers import ConsumerState, SecondStats


def test_publish_template_is_what_pika_marshals():
    template = wire.PublishTemplate(3, "perf-test-7", 1024, persistent=True, mandatory=True)
    batch = template.batch(nonce=9, publisher=5, first_seq=100, intended_us=[1_000, 2_000, 3_000])
    assert len(batch) == 3 * template.size
    for j in range(3):
        one = bytes(batch[j * template.size:(j + 1) * template.size])
        used, method = frame.decode_frame(one)
        assert method.method.routing_key == "perf-test-7" and method.method.mandatory and method.channel_number == 3
        used2, header = frame.decode_frame(one[used:])
        assert header.body_size == 1024 and header.properties.delivery_mode == 2
        _, body = frame.decode_frame(one[used + used2:])
        assert len(body.fragment) == 1024
        assert wire.parse_body_header(body.fragment) == (9, 5, 100 + j, 1_000 * (j + 1))


def test_large_bodies_are_split_at_frame_max():
    template = wire.PublishTemplate(1, "q", 10_000, persistent=False, mandatory=False, frame_max=4096)
    data, pos, body = template.data, 0, b""
    frames = []
    while pos < len(data):
        used, f = frame.decode_frame(data[pos:])
        frames.append(f)
        pos += used
    assert [type(f).__name__ for f in frames] == ["Method", "Header", "Body", "Body", "Body"]
    body = b"".join(f.fragment for f in frames[2:])
    assert len(body) == 10_000 and frames[1].properties.delivery_mode == 1


def test_ack_frame_is_what_pika_marshals():
    assert wire.ack_frame(2, 12345, True) == frame.Method(2, spec.Basic.Ack(12345, True)).marshal()
    assert wire.ack_frame(1, 7, False) == frame.Method(1, spec.Basic.Ack(7, False)).marshal()


# ------------------------------------------------------------------------------ receive fast path


def delivery(channel, tag, nonce, pub, seq, intended_us, redelivered=False, size=300):
    method = frame.Method(channel, spec.Basic.Deliver(consumer_tag="ctag1.abc", delivery_tag=tag,
                                                       redelivered=redelivered, exchange="", routing_key="q-1"))
    body = bytearray(size)
    wire.BODY_HEADER.pack_into(body, 0, nonce, pub, seq, intended_us)
    return (method.marshal() + frame.Header(channel, size, spec.BasicProperties(delivery_mode=2)).marshal()
            + frame.Body(channel, bytes(body)).marshal())


class RecordingConsumer(ConsumerState):
    """The real delivery accounting (`on_deliveries`); only the ack decision is replaced by a record of tags."""

    def __init__(self, worker, publishers):  # no plan or connection: only the receive path is exercised
        self.worker = worker
        self.last_seq = [-1] * publishers
        self.batches = []
        self.prefetch, self.auto_ack = 0, False  # no prefetch: no refill pairing

    def after_batch(self, tag, now_s, processing_s):
        self.batches.append(tag)


class StubWorker:
    nonce = 77
    processing_s = 0.0

    def __init__(self):
        self.offsets = [0, 1000, 2000]
        self.stats = SecondStats()
        self.fresh_keys, self.redelivered_keys, self.reordered_keys = [], [], []

    def now_us(self):
        return 5_000_000


def bare_connection(consumers=None, publishers=None):
    conn = object.__new__(FastConnection)  # no socket: only the frame loop is exercised
    conn._lg_connector, conn._lg_rx = None, bytearray()
    conn.fast_consumers, conn.fast_publishers = consumers or {}, publishers or {}
    conn.bytes_received = conn.frames_received = 0
    conn._heartbeat_checker, conn._frame_buffer = None, b""
    return conn


@pytest.mark.parametrize("split", [1, 7, 64, 333, 100_000])
def test_deliveries_are_decoded_whatever_the_read_boundaries(split):
    worker = StubWorker()
    consumer = RecordingConsumer(worker, 2)
    conn = bare_connection(consumers={1: consumer})
    stream = b"".join([
        delivery(1, 1, 77, 0, 0, 4_000_000),
        delivery(1, 2, 77, 1, 0, 4_500_000),
        delivery(1, 3, 77, 0, 2, 4_900_000),
        delivery(1, 4, 77, 0, 1, 4_950_000),  # older than seq 2 of publisher 0: reordered
        delivery(1, 5, 77, 0, 1, 4_950_000, redelivered=True),  # flagged: a redelivery, not a duplicate
        frame.Heartbeat().marshal(),  # anything else goes to pika's own path
        delivery(1, 6, 12345, 0, 3, 1),  # another run's message
        delivery(1, 7, 77, 1, 1, 4_990_000),
    ])
    for i in range(0, len(stream), split):
        conn._on_data_available(stream[i:i + split])
    stats = worker.stats
    assert stats.consumed == 7 and stats.redelivered == 1 and stats.foreign == 1
    assert sorted(stats.e2e_us) == sorted([1_000_000, 500_000, 100_000, 50_000, 50_000, 10_000])
    assert worker.fresh_keys == [0, 1000, 2, 1, 1001]
    assert worker.redelivered_keys == [1]
    assert worker.reordered_keys == [1]
    assert consumer.batches[-1] == 7 and conn._lg_rx == bytearray()
    assert conn.bytes_received == len(stream)


def test_confirms_are_routed_to_their_publisher():
    calls = []

    class Pub:
        def on_confirm(self, tag, multiple, positive):
            calls.append((tag, multiple, positive))

    conn = bare_connection(publishers={2: Pub()})
    stream = b"".join(frame.Method(2, m).marshal() for m in
                      (spec.Basic.Ack(10, True), spec.Basic.Nack(11, False), spec.Basic.Ack(12, False)))
    conn._on_data_available(stream[:20])
    conn._on_data_available(stream[20:])
    assert calls == [(10, 1, True), (11, 0, False), (12, 0, True)]


# ------------------------------------------------------------------------------ simulated processing


class AckSink:
    """A loadgen.protocol.Link that keeps the consumer's acks."""

    def __init__(self):
        self.acks = []

    def ack(self, delivery_tag, multiple):
        self.acks.append((delivery_tag, multiple))


class ConsumerWorker:
    """The worker fields a consumer reads (`loadgen.protocol.DriverHost`), on a clock the test sets."""

    def __init__(self):
        self.stats = SecondStats()
        self.nonce, self.offsets, self.processing_s, self.clock_us = 7, [0, 1_000_000], 0.0, 0
        self.fresh_keys, self.redelivered_keys, self.reordered_keys = [], [], []

    def now_us(self) -> int:
        return self.clock_us


def make_consumer(multi_ack, prefetch=1000):
    consumer = object.__new__(ConsumerState)
    consumer.worker = ConsumerWorker()
    consumer.prefetch, consumer.multi_ack, consumer.auto_ack = prefetch, multi_ack, False
    consumer.on_open(AckSink())
    consumer.ready = True
    consumer.last_seq = [-1]
    return consumer


def deliver(consumer, tags, at_s: float, intended_s: float) -> None:
    """One read of deliveries `tags` arriving at `at_s`, their messages intended for `intended_s`."""
    consumer.worker.clock_us = int(at_s * 1e6)
    consumer.on_deliveries([(1, tag, 0, 7, 0, tag, int(intended_s * 1e6)) for tag in tags])


def test_ten_ms_processing_handles_at_most_a_hundred_messages_a_second():
    consumer = make_consumer(multi_ack=5)
    consumer.after_batch(500, now_s=0.0, processing_s=0.010)  # 500 deliveries arrive at once
    for step in range(1, 301):  # 3 s of 10 ms ticks
        consumer.advance(step * 0.01 + 1e-9)
        if step == 100:
            assert consumer.processed == 100  # one second: 100 processed, no more
    assert consumer.processed == 300
    assert consumer.acked == 300
    tags = [tag for tag, multiple in consumer.link.acks]
    assert all(m for _, m in consumer.link.acks) and all(t % 5 == 0 for t in tags)
    assert tags == sorted(tags) and consumer.worker.stats.acked == 300


def test_processing_queues_behind_earlier_deliveries_and_idle_acks_are_flushed():
    consumer = make_consumer(multi_ack=10)
    consumer.after_batch(3, now_s=0.0, processing_s=0.1)
    consumer.after_batch(4, now_s=0.05, processing_s=0.1)  # waits for the first three: done at 0.4 s
    consumer.advance(0.39)
    assert consumer.processed == 3 and consumer.acked == 0  # below multi_ack_every: held back
    consumer.advance(0.41)
    assert consumer.processed == 4
    consumer.advance(2.0)  # nothing new for more than a second: flush the held-back acks
    assert consumer.acked == 4 and consumer.link.acks == [(4, True)]


def test_zero_processing_acks_every_n_with_multiple():
    consumer = make_consumer(multi_ack=3)
    consumer.after_batch(7, now_s=1.0, processing_s=0.0)
    assert consumer.link.acks == [(6, True)] and consumer.acked == 6
    consumer.after_batch(9, now_s=1.1, processing_s=0.0)
    assert consumer.link.acks[-1] == (9, True)
    assert np.sum([t for t, _ in consumer.link.acks]) == 15


def test_a_full_prefetch_window_times_each_slots_hold_and_refill():
    """Known answer (sizing.criteria.rules.prefetch_ceiling's two parts): prefetch 4, 10 ms processing, acks every
    message. Four deliveries at 0 s fill the window; each is acked as its processing ends (10, 20, 30, 40 ms: holds
    summing 100 ms). Delivery 5 takes the slot the ack of tag 1 (10 ms) freed and arrives at 25 ms: a refill of 15 ms.
    Delivery 6's message was intended at 28 ms, after the ack of tag 2 (20 ms) had freed its slot: it waited for the
    publisher, not for the slot, and is no refill."""
    consumer = make_consumer(multi_ack=1, prefetch=4)
    consumer.worker.processing_s = 0.010
    deliver(consumer, [1, 2, 3, 4], at_s=0.0, intended_s=0.0)
    for step in range(1, 5):
        consumer.advance(step * 0.010 + 1e-9)
    stats = consumer.worker.stats
    assert consumer.acked == 4 and stats.ack_holds == 4
    assert stats.ack_hold_us == pytest.approx(100_000, abs=10)
    assert stats.refills == 0  # no delivery since
    deliver(consumer, [5], at_s=0.025, intended_s=0.001)
    assert stats.refills == 1 and stats.refill_us == pytest.approx(15_000, abs=2)
    deliver(consumer, [6], at_s=0.029, intended_s=0.028)
    assert stats.refills == 1


def test_refills_pair_by_tag_though_a_refill_arrives_over_several_reads():
    """The case CI measured (issue 44): behind a proxy the broker's deliveries after one multiple ack arrive over
    several reads, so the client never holds a full window at once, yet each delivery n still took the slot of the
    ack covering n - prefetch. Prefetch 10, acks every 5: the ack of tag 5 at 100 ms frees slots for 11-15, which
    arrive 20 ms (11-12) and 22 ms (13-15) later: five refills summing 2 x 20 + 3 x 22 = 106 ms."""
    consumer = make_consumer(multi_ack=5, prefetch=10)
    deliver(consumer, range(1, 6), at_s=0.100, intended_s=0.0)  # acked at once as tag 5 (no processing)
    deliver(consumer, range(6, 11), at_s=0.110, intended_s=0.0)  # acked as tag 10 at 110 ms
    stats = consumer.worker.stats
    assert consumer.link.acks == [(5, True), (10, True)] and stats.refills == 0
    deliver(consumer, [11, 12], at_s=0.120, intended_s=0.0)
    deliver(consumer, [13, 14, 15], at_s=0.122, intended_s=0.0)
    assert stats.refills == 5 and stats.refill_us == pytest.approx(106_000, abs=5)
    deliver(consumer, [16], at_s=0.140, intended_s=0.0)  # the ack of tag 10 (110 ms) freed its slot: 30 ms
    assert stats.refills == 6 and stats.refill_us == pytest.approx(136_000, abs=6)


def test_a_multiple_ack_splits_a_batchs_holds_at_its_tag():
    """Three deliveries at 0 s and two at 0.5 s, acked every 2 with no processing: the batch of three is acked as
    tag 2 at 0 s (holds 0) and its third message with the fourth at 0.5 s (holds 0.5 s + 0 s)."""
    consumer = make_consumer(multi_ack=2, prefetch=1000)
    consumer.after_batch(3, now_s=0.0, processing_s=0.0)
    consumer.after_batch(5, now_s=0.5, processing_s=0.0)
    stats = consumer.worker.stats
    assert consumer.link.acks == [(2, True), (4, True)]
    assert stats.ack_holds == 4 and stats.ack_hold_us == pytest.approx(500_000, abs=1)
