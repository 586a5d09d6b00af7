"""The pure AMQP frame decoder (loadgen.frames) on bytes built by pika's own encoders: deliveries with their
body header, confirms (single and multiple, ack and nack), other frames handed back in order, and frames split
at any byte boundary left in the buffer until complete."""

from __future__ import annotations

import pytest
from pika import frame, spec

from loadgen import wire
from loadgen.frames import Confirm, Delivery, decode


def delivery(channel, tag, nonce, pub, seq, intended_us, redelivered=False, size=300, frame_max=None):
    method = frame.Method(channel, spec.Basic.Deliver(consumer_tag="ctag1.abc", delivery_tag=tag,
                                                       redelivered=redelivered, exchange="", routing_key="q-1"))
    body = bytearray(size)
    if size >= wire.BODY_HEADER.size:
        wire.BODY_HEADER.pack_into(body, 0, nonce, pub, seq, intended_us)
    chunk = frame_max or size or 1
    bodies = b"".join(frame.Body(channel, bytes(body[i:i + chunk])).marshal() for i in range(0, size, chunk))
    return method.marshal() + frame.Header(channel, size, spec.BasicProperties(delivery_mode=2)).marshal() + bodies


def confirm(channel, method):
    return frame.Method(channel, method).marshal()


def decode_all(stream, split, deliveries_on=(1,), confirms_on=(2,)):
    """Feed `stream` in `split`-byte reads as the connection does; collect everything decoded."""
    buf, got_d, got_c, other = bytearray(), [], [], []
    for i in range(0, len(stream), split):
        buf += stream[i:i + split]
        pos = 0
        while True:
            out = decode(buf, pos, deliveries_on, confirms_on)
            got_d += [Delivery(*d) for d in out.deliveries]
            got_c += [Confirm(*c) for c in out.confirms]
            pos = out.end
            if out.other is None:
                break
            other.append(bytes(buf[out.other[0]:out.other[1]]))
        del buf[:pos]
    return got_d, got_c, other, buf


@pytest.mark.parametrize("split", [1, 5, 64, 333, 100_000])
def test_deliveries_confirms_and_other_frames_whatever_the_read_boundaries(split):
    heartbeat = frame.Heartbeat().marshal()
    stream = b"".join([
        delivery(1, 1, 77, 0, 0, 4_000_000),
        confirm(2, spec.Basic.Ack(10, True)),
        delivery(1, 2, 77, 1, 5, 4_500_000, redelivered=True),
        heartbeat,
        confirm(2, spec.Basic.Nack(11, False)),
        delivery(1, 3, 77, 0, 2, 4_900_000, size=5000, frame_max=1000),  # body split over five frames
        delivery(1, 4, 0, 0, 0, 0, size=10),  # too short for a body header: not one of ours
        delivery(3, 1, 77, 0, 9, 1),  # a channel the caller did not ask for: handed back like any other frame
        confirm(2, spec.Basic.Ack(12, False)),
    ])
    deliveries, confirms, other, rest = decode_all(stream, split)
    # known answers: what the fixtures above encode
    assert deliveries == [Delivery(1, 1, 0, 77, 0, 0, 4_000_000), Delivery(1, 2, 1, 77, 1, 5, 4_500_000),
                          Delivery(1, 3, 0, 77, 0, 2, 4_900_000), Delivery(1, 4, 0, -1, -1, -1, 0)]
    assert confirms == [Confirm(2, 10, 1, True), Confirm(2, 11, 0, False), Confirm(2, 12, 0, True)]
    assert other[0] == heartbeat and len(other) == 4  # heartbeat + channel 3's method, header and body frames
    assert rest == bytearray()


def test_an_incomplete_delivery_is_left_in_the_buffer():
    one = delivery(1, 1, 77, 0, 0, 1_000)
    for cut in (3, 20, len(one) - 1):
        out = decode(one[:cut], 0, (1,), ())
        assert out.end == 0 and out.deliveries == [] and out.other is None


def test_decoding_stops_after_the_first_other_frame_to_keep_order():
    close = frame.Method(1, spec.Channel.Close(200, "bye", 0, 0)).marshal()
    stream = confirm(2, spec.Basic.Ack(1, False)) + close + confirm(2, spec.Basic.Ack(2, False))
    out = decode(stream, 0, (), (2,))
    assert out.confirms == [(2, 1, 0, True)] and out.other == (21, 21 + len(close)) and out.end == out.other[1]
    out = decode(stream, out.end, (), (2,))
    assert out.confirms == [(2, 2, 0, True)] and out.other is None and out.end == len(stream)


def test_a_protocol_header_from_the_broker_goes_to_pika_whole():
    data = b"AMQP\x00\x00\x09\x01"
    out = decode(data, 0, (1,), (1,))
    assert out.other == (0, len(data)) and out.end == len(data)
