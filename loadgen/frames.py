"""The receive side of AMQP 0-9-1 on the hot path, as a pure function: bytes -> deliveries, confirms, other frames.

pika decodes a Method, a Header with BasicProperties and a Body object for every delivery; the load generator
only needs a few integers of each. `decode` reads basic.deliver (with its content header and body frames),
basic.ack and basic.nack with `struct.unpack_from` straight off the receive buffer and stops at the first
frame it does not handle itself, returning that frame's byte range for pika's own path (so ordering between
fast and slow frames is kept). No sockets, no pika state: unit-tested on bytes built by pika's encoders.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import NamedTuple

from loadgen import wire

_unpack_hdr = wire.FRAME_HEADER.unpack_from
_unpack_cm = wire.CLASS_METHOD.unpack_from
_unpack_tf = wire.TAG_AND_FLAGS.unpack_from
_unpack_body = wire.BODY_HEADER.unpack_from
_unpack_size = wire.BODY_SIZE.unpack_from
_PROTOCOL_HEADER = 65  # b"A" of b"AMQP": the broker refused our protocol version and sent its own


class Delivery(NamedTuple):
    """One basic.deliver with its body header (`loadgen.wire.BODY_HEADER`); nonce = -1 when the body is too short
    to hold one (not a message of this generator)."""

    channel: int
    tag: int
    redelivered: int
    nonce: int
    publisher: int
    seq: int
    intended_us: int


class Confirm(NamedTuple):
    """basic.ack / basic.nack from the broker on a confirm-mode channel."""

    channel: int
    tag: int
    multiple: int
    positive: bool


@dataclass(slots=True)
class Decoded:
    end: int  # bytes of the buffer decoded (everything below is done with, including `other`)
    deliveries: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)  # Delivery fields
    confirms: list[tuple[int, int, int, bool]] = field(default_factory=list)  # Confirm fields
    other: tuple[int, int] | None = None  # [start, end) of one frame for pika, after the deliveries and confirms
    frames: int = 0  # frames decoded here (not counting `other`), for pika's frames_received counter


def decode(buf: bytes | bytearray, pos: int, delivery_channels: Container[int],
           confirm_channels: Container[int]) -> Decoded:
    """Decode complete frames of `buf` from `pos` until the data runs out or a frame needs pika.

    Deliveries on `delivery_channels` and confirms on `confirm_channels` are decoded here (plain tuples in the
    field order of `Delivery` / `Confirm`: the hot path builds no objects); any other frame is returned as
    `other` and ends the call. An incomplete frame or delivery (method without all its body frames) is left
    in the buffer: `end` stops before it.
    """
    n = len(buf)
    out = Decoded(pos)
    deliveries, confirms = out.deliveries, out.confirms
    frames = 0
    while n - pos >= 8:
        if buf[pos] == _PROTOCOL_HEADER:
            out.other = (pos, n)
            pos = n
            break
        _ftype, channel, size = _unpack_hdr(buf, pos)
        end = pos + size + 8
        if end > n:
            break
        if _ftype == wire.FRAME_METHOD and size >= 4:
            cm = _unpack_cm(buf, pos + 7)[0]
            if cm == wire.BASIC_DELIVER and channel in delivery_channels:
                # method: consumer tag (short string), delivery tag, redelivered, exchange, routing key
                p = pos + 11
                p += 1 + buf[p]
                tag, redelivered = _unpack_tf(buf, p)
                h = end
                if h + 8 > n:
                    break
                b = h + _unpack_hdr(buf, h)[2] + 8
                if b > n:
                    break
                remaining = _unpack_size(buf, h + 11)[0]
                body_start = b
                while remaining > 0:
                    if b + 8 > n:
                        break
                    body_size = _unpack_hdr(buf, b)[2]
                    if b + body_size + 8 > n:
                        break
                    remaining -= body_size
                    b += body_size + 8
                if remaining > 0:
                    break  # delivery not complete yet: wait for more bytes
                frames += 3
                pos = b
                if b - body_start >= wire.BODY_HEADER.size + 8:
                    deliveries.append((channel, tag, redelivered, *_unpack_body(buf, body_start + 7)))
                else:
                    deliveries.append((channel, tag, redelivered, -1, -1, -1, 0))
                continue
            if (cm == wire.BASIC_ACK or cm == wire.BASIC_NACK) and channel in confirm_channels:
                tag, flags = _unpack_tf(buf, pos + 11)
                confirms.append((channel, tag, flags & 1, cm == wire.BASIC_ACK))
                frames += 1
                pos = end
                continue
        out.other = (pos, end)
        pos = end
        break
    out.end = pos
    out.frames = frames
    return out
