"""The latency proxy (adapters.latencyproxy) against a local echo server: known answers, no broker.

The known answer is the delay set: the round trip through the proxy minus the round trip through it at zero delay
is the sum of the two one-way delays (within a stated tolerance for a loaded 2-core machine). The independent
measure is this test's own clock around a socket round trip, not anything the proxy reports.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import struct
import time

import pytest

from adapters.latencyproxy import TO_CLIENT, TO_UPSTREAM, LatencyProxy, ProxySet

# A ping through asyncio on a shared, niced 2-core host: the scheduler may add a few ms to any single sleep.
TOLERANCE_S = 0.012


async def echo_server() -> asyncio.AbstractServer:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(echo, "127.0.0.1", 0)


async def round_trips(port: int, n: int, size: int = 16) -> list[float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            writer.write(b"x" * size)
            await writer.drain()
            await reader.readexactly(size)
            out.append(time.perf_counter() - t0)
    finally:
        writer.close()
    return out


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_the_added_round_trip_is_the_sum_of_the_two_delays():
    async def main():
        server = await echo_server()
        proxy = await LatencyProxy("127.0.0.1", server.sockets[0].getsockname()[1]).start()
        try:
            base = statistics.median(await round_trips(proxy.port, 10))
            proxy.set_delay(0.030, 0.010)
            delayed = await round_trips(proxy.port, 10)
            proxy.set_delay(0.005, 0.0)  # live change on a new connection, and one direction alone
            small = await round_trips(proxy.port, 10)
        finally:
            await proxy.close()
            server.close()
        return base, delayed, small, proxy

    base, delayed, small, proxy = run(main())
    # No ping arrives before its delays have passed (asyncio never wakes early by more than its clock resolution).
    assert min(delayed) >= 0.040 - 0.001, delayed
    assert 0.040 - 0.001 <= statistics.median(delayed) - base <= 0.040 + TOLERANCE_S, (base, delayed)
    assert min(small) >= 0.005 - 0.001 and statistics.median(small) - base <= 0.005 + TOLERANCE_S, (base, small)
    assert proxy.connections == 3
    assert proxy.stats[TO_UPSTREAM].bytes == proxy.stats[TO_CLIENT].bytes == 30 * 16


def test_a_stream_is_delayed_not_serialised_and_keeps_its_order():
    # 100 numbered messages sent 2 ms apart through 50 ms each way: each returns ~100 ms after it was sent, in
    # order. A proxy that slept 50 ms per chunk before reading the next would take seconds (100 x 50 ms each way).
    count, gap_s, one_way_s = 100, 0.002, 0.050

    async def main():
        server = await echo_server()
        proxy = await LatencyProxy("127.0.0.1", server.sockets[0].getsockname()[1],
                                   to_upstream_s=one_way_s, to_client_s=one_way_s).start()
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        sent: dict[int, float] = {}
        back: list[tuple[int, float]] = []

        async def send():
            for i in range(count):
                sent[i] = time.perf_counter()
                writer.write(struct.pack("!Q", i))
                await writer.drain()
                await asyncio.sleep(gap_s)

        async def receive():
            while len(back) < count:
                (i,) = struct.unpack("!Q", await reader.readexactly(8))
                back.append((i, time.perf_counter()))

        t0 = time.perf_counter()
        try:
            await asyncio.gather(send(), receive())
        finally:
            writer.close()
            await proxy.close()
            server.close()
        return sent, back, time.perf_counter() - t0

    sent, back, elapsed = run(main())
    assert [i for i, _ in back] == list(range(count))
    trips = [t - sent[i] for i, t in back]
    assert min(trips) >= 2 * one_way_s - 0.001, min(trips)
    assert statistics.median(trips) <= 2 * one_way_s + TOLERANCE_S, statistics.median(trips)
    # The whole exchange: the sending time plus one round trip (and the tolerance), nowhere near count x delay.
    assert elapsed <= count * gap_s * 2 + 2 * one_way_s + 0.2, elapsed


def test_the_proxy_set_runs_in_a_process_of_its_own_and_counts_bytes_and_its_cpu():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        upstream_port = listener.getsockname()[1]
        with ProxySet([("127.0.0.1", upstream_port)]) as proxies:
            proxies.set_delay(0.020, 0.020)
            t0 = time.perf_counter()
            with socket.create_connection(("127.0.0.1", proxies.ports[0]), timeout=5) as client:
                conn, _ = listener.accept()
                with conn:
                    client.sendall(b"ping")
                    assert conn.recv(4) == b"ping"
                    one_way = time.perf_counter() - t0
                    conn.sendall(b"pong")
                    assert client.recv(4) == b"pong"
                    trip = time.perf_counter() - t0
        summary = proxies.summary()
    assert one_way >= 0.020 - 0.001 and trip >= 0.040 - 0.001, (one_way, trip)
    assert summary["proxies"][0]["to_upstream_bytes"] == 4 and summary["proxies"][0]["to_client_bytes"] == 4
    assert summary["proxies"][0]["connections"] == 1
    assert 0 < proxies.cpu_s <= summary["life_s"]  # the proxy process's own, after its start-up


def test_a_negative_delay_is_refused():
    with pytest.raises(ValueError, match="negative"):
        LatencyProxy("127.0.0.1", 1, to_upstream_s=-0.001)
