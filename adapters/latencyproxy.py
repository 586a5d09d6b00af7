"""A latency-injecting TCP proxy: a known round-trip time between the load generator and a broker node.

Each direction of each connection is a FIFO of (arrival time, chunk): a chunk is written `delay` after it was read,
so a delay d adds d to every byte's trip without serialising the stream on it (chunks that arrive 1 ms apart leave
1 ms apart, d later). The delays can change while connections are open (the `client_latency` fault sets them at
inject and zeroes them at heal); a chunk takes the delay in force when the writer reaches it, and never overtakes an
earlier one, so the byte order is TCP's.

`ProxySet` runs one proxy per broker node on its own event-loop thread in the generator's process, and measures that
thread's CPU: the proxy's work is the generator's (it runs on the generator's host), so it is counted with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

TO_UPSTREAM, TO_CLIENT = "to_upstream", "to_client"
CHUNK_BYTES = 65536
# Chunks read but not yet written, per direction: past this the reader waits (TCP back-pressure reaches the sender)
# instead of buffering without bound.
MAX_QUEUED_CHUNKS = 4096


@dataclass
class DirectionStats:
    chunks: int = 0
    bytes: int = 0


class LatencyProxy:
    """Listens on `listen_host:listen_port` (0: any free port) and forwards each connection to `upstream`."""

    def __init__(self, upstream_host: str, upstream_port: int, listen_host: str = "127.0.0.1",
                 listen_port: int = 0, to_upstream_s: float = 0.0, to_client_s: float = 0.0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listen = (listen_host, listen_port)
        self.delay = {TO_UPSTREAM: 0.0, TO_CLIENT: 0.0}
        self.set_delay(to_upstream_s, to_client_s)
        self.stats = {TO_UPSTREAM: DirectionStats(), TO_CLIENT: DirectionStats()}
        self.connections = 0
        self.listening_port: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    def set_delay(self, to_upstream_s: float, to_client_s: float) -> None:
        """New one-way delays, in seconds; safe from any thread (two float stores, read per chunk)."""
        if to_upstream_s < 0 or to_client_s < 0:
            raise ValueError(f"a delay cannot be negative: {to_upstream_s}, {to_client_s}")
        self.delay = {TO_UPSTREAM: float(to_upstream_s), TO_CLIENT: float(to_client_s)}

    @property
    def port(self) -> int:
        if self.listening_port is None:
            raise RuntimeError("the proxy is not listening")
        return self.listening_port

    async def start(self) -> LatencyProxy:
        self._server = await asyncio.start_server(self._accept, *self.listen)
        self.listening_port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                client_writer.close()
                return
            self.connections += 1
            pumps = [asyncio.ensure_future(self._pump(client_reader, up_writer, TO_UPSTREAM)),
                     asyncio.ensure_future(self._pump(up_reader, client_writer, TO_CLIENT))]
            try:
                # One side failing (a reset) ends the connection both ways, as it would without the proxy.
                done, pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
                if any(t.exception() for t in done if not t.cancelled()):
                    for t in pending:
                        t.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
            finally:
                for t in pumps:
                    t.cancel()
                for writer in (up_writer, client_writer):
                    writer.close()
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(MAX_QUEUED_CHUNKS)
        stats = self.stats[direction]

        async def read() -> None:
            while True:
                data = await reader.read(CHUNK_BYTES)
                await queue.put((loop.time(), data))
                if not data:
                    return

        reading = asyncio.ensure_future(read())
        try:
            while True:
                arrived, data = await queue.get()
                # The delay from the chunk's arrival, not from when the previous write finished: no serialising.
                wait = arrived + self.delay[direction] - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                stats.chunks += 1
                stats.bytes += len(data)
                await writer.drain()
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, ConnectionError):
                await reading


class ProxySet:
    """One LatencyProxy per upstream, on an event loop in a thread of its own.

        with ProxySet([("127.0.0.1", 5672)]) as proxies:
            port = proxies.ports[0]; proxies.set_delay(0.010, 0.010); ...
        proxies.cpu_s  # the loop thread's CPU over its life
    """

    def __init__(self, upstreams: Sequence[tuple[str, int]], listen_host: str = "127.0.0.1") -> None:
        self.upstreams = list(upstreams)
        self.listen_host = listen_host
        self.proxies: list[LatencyProxy] = []
        self.cpu_s = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def ports(self) -> list[int]:
        return [p.port for p in self.proxies]

    def start(self) -> ProxySet:
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the latency proxy did not start in 10 s")
        if self._error is not None:
            raise RuntimeError(f"the latency proxy did not start: {self._error!r}") from self._error
        return self

    def set_delay(self, to_upstream_s: float, to_client_s: float) -> None:
        for proxy in self.proxies:
            proxy.set_delay(to_upstream_s, to_client_s)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(10)

    def summary(self) -> dict[str, object]:
        """What the proxies did (for the run manifest): ports, connections, bytes and chunks each way, CPU."""
        return {"cpu_s": round(self.cpu_s, 3), "delay_s": dict(self.proxies[0].delay) if self.proxies else {},
                "proxies": [{"upstream": f"{p.upstream[0]}:{p.upstream[1]}", "port": p.listening_port,
                             "connections": p.connections,
                             **{f"{d}_{k}": getattr(p.stats[d], k) for d in (TO_UPSTREAM, TO_CLIENT)
                                for k in ("bytes", "chunks")}} for p in self.proxies]}

    def __enter__(self) -> ProxySet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        cpu0 = time.thread_time()
        try:
            asyncio.run(self._main())
        except BaseException as err:  # reported by start() when it happens before ready
            self._error = err
            self._ready.set()
        finally:
            self.cpu_s = time.thread_time() - cpu0

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            for host, port in self.upstreams:
                self.proxies.append(await LatencyProxy(host, port, self.listen_host).start())
            self._ready.set()
            await self._stopping.wait()
        finally:
            for proxy in self.proxies:
                await proxy.close()
