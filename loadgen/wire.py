"""AMQP 0-9-1 bytes on the hot path, built once and patched per message (pure; no sockets).

pika builds three frame objects and marshals them for every basic.publish, and decodes a Method, a Header
with BasicProperties and a Body object for every delivery. That is most of the ~45 us a naive pika loop
spends per message. The load generator instead:

* publishes from a template: the method + content-header + body frames of one message, marshalled once by
  pika itself (so they are exactly what pika would send); per message only the 24-byte body header changes,
  patched in place with `struct.pack_into`, and a batch of messages is one `template * n` bytes object;
* parses basic.deliver / basic.ack / basic.nack frames with `struct.unpack_from` straight off the receive
  buffer (the connection subclass in `client.py`), handing every other frame to pika unchanged.

Every message body starts with `BODY_HEADER`: run nonce, publisher id, sequence number, intended send time
(microseconds since scenario start), then zero padding up to the configured size.
"""

from __future__ import annotations

import struct

from pika import frame, spec

BODY_HEADER = struct.Struct("<IIQq")  # run nonce, publisher id, sequence number, intended send time (us)
FRAME_HEADER = struct.Struct(">BHI")  # frame type, channel, payload size
FRAME_END = 0xCE
FRAME_METHOD, FRAME_HEADER_TYPE, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
CLASS_METHOD = struct.Struct(">I")  # (class id << 16) | method id
BASIC_DELIVER = (60 << 16) | 60
BASIC_ACK = (60 << 16) | 80
BASIC_NACK = (60 << 16) | 120
TAG_AND_FLAGS = struct.Struct(">QB")  # delivery tag + the first bit octet (redelivered / multiple)
BODY_SIZE = struct.Struct(">Q")  # content header: body size (after class id and weight)
_ACK_FRAME = struct.Struct(">BHIIQBB")


def parse_body_header(body: bytes | bytearray | memoryview, offset: int = 0) -> tuple[int, int, int, int]:
    return BODY_HEADER.unpack_from(body, offset)


class PublishTemplate:
    """The marshalled frames of one basic.publish with a `size_bytes` body, and where its body header sits."""

    def __init__(self, channel: int, routing_key: str, size_bytes: int, persistent: bool, mandatory: bool,
                 frame_max: int = 131072, exchange: str = "") -> None:
        props = spec.BasicProperties(delivery_mode=2 if persistent else 1)
        method = frame.Method(channel, spec.Basic.Publish(exchange=exchange, routing_key=routing_key,
                                                          mandatory=mandatory)).marshal()
        header = frame.Header(channel, size_bytes, props).marshal()
        body_max = frame_max - 8  # frame header (7) + frame end (1)
        chunks, offset = [], 0
        while offset < size_bytes:
            n = min(body_max, size_bytes - offset)
            chunks.append(FRAME_HEADER.pack(FRAME_BODY, channel, n) + bytes(n) + bytes([FRAME_END]))
            offset += n
        self.data = bytes(method + header + b"".join(chunks))
        self.size = len(self.data)
        self.body_header_offset = len(method) + len(header) + FRAME_HEADER.size

    def batch(self, nonce: int, publisher: int, first_seq: int, intended_us: list[int]) -> bytearray:
        """n messages back to back, message j carrying sequence number first_seq + j."""
        n = len(intended_us)
        out = bytearray(self.data * n)
        pack, size, off = BODY_HEADER.pack_into, self.size, self.body_header_offset
        seq = first_seq
        for intended in intended_us:
            pack(out, off, nonce, publisher, seq, intended)
            off += size
            seq += 1
        return out


def ack_frame(channel: int, delivery_tag: int, multiple: bool) -> bytes:
    """basic.ack from the consumer side (what pika's channel.basic_ack would marshal)."""
    return _ACK_FRAME.pack(FRAME_METHOD, channel, 13, BASIC_ACK, delivery_tag, 1 if multiple else 0, FRAME_END)
