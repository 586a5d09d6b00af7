"""A latency-injecting TCP proxy: a known round-trip time between the load generator and a broker node.

Each direction of each connection is a FIFO of (arrival time, chunk): a chunk is written `delay` after it was read,
so a delay d adds d to every byte's trip without serialising the stream on it (chunks that arrive 1 ms apart leave
1 ms apart, d later). The delays can change while connections are open (the `client_latency` fault sets them at
inject and zeroes them at heal); a chunk takes the delay in force when the writer reaches it, and never overtakes an
earlier one, so the byte order is TCP's.

`ProxySet` runs one proxy per broker node in a process of its own beside the generator's workers, and measures that
process's CPU: the proxy's work is the generator's (it runs on the generator's host), so it is counted with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
        except asyncio.CancelledError:
            # Closed by close(): end normally, since asyncio's stream callback logs a handler task that ends cancelled.
            pass
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
    """One LatencyProxy per upstream, served by a process of its own (spawned, as the generator's workers are):
    neither the runner's threads nor its GIL delay a chunk, and the proxy's CPU is that process's, measured like a
    worker's.

        with ProxySet([("127.0.0.1", 5672)]) as proxies:
            port = proxies.ports[0]; proxies.set_delay(0.010, 0.010); ...
        proxies.summary()  # ports, connections, bytes and chunks each way, cpu_s and life_s of the proxy process
    """

    def __init__(self, upstreams: Sequence[tuple[str, int]], listen_host: str = "127.0.0.1",
                 start_timeout_s: float = 30.0) -> None:
        self.upstreams = [(str(h), int(p)) for h, p in upstreams]
        self.listen_host = listen_host
        self.start_timeout_s = start_timeout_s
        self.ports: list[int] = []
        self.delay_s = {TO_UPSTREAM: 0.0, TO_CLIENT: 0.0}
        self._stopped: dict[str, Any] | None = None
        self._lock = threading.Lock()  # one command and its reply at a time (the nemesis thread and the runner's)
        self._conn: Any = None
        self._process: Any = None

    @property
    def cpu_s(self) -> float:
        return float(self._stopped["cpu_s"]) if self._stopped else 0.0

    def start(self) -> ProxySet:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=serve, args=(child, self.upstreams, self.listen_host),
                                    name="latency-proxy", daemon=True)
        self._process.start()
        child.close()
        if not self._conn.poll(self.start_timeout_s):
            self._process.kill()
            raise RuntimeError(f"the latency proxy did not start in {self.start_timeout_s:g} s")
        kind, value = self._conn.recv()
        if kind != "ready":
            self._process.join(5)
            raise RuntimeError(f"the latency proxy did not start: {value}")
        self.ports = list(value)
        return self

    def set_delay(self, to_upstream_s: float, to_client_s: float) -> None:
        """New one-way delays for every proxy, in force when this returns."""
        if to_upstream_s < 0 or to_client_s < 0:
            raise ValueError(f"a delay cannot be negative: {to_upstream_s}, {to_client_s}")
        self._ask(("delay", float(to_upstream_s), float(to_client_s)))
        self.delay_s = {TO_UPSTREAM: float(to_upstream_s), TO_CLIENT: float(to_client_s)}

    def stop(self) -> None:
        if self._process is None or self._stopped is not None:
            return
        try:
            self._stopped = self._ask(("stop",))
        except (OSError, EOFError, RuntimeError) as err:
            self._stopped = {"cpu_s": 0.0, "life_s": 0.0, "proxies": [], "error": repr(err)}
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()

    def summary(self) -> dict[str, Any]:
        """What the proxies did (for the run manifest); complete once stopped."""
        return {"delay_s": dict(self.delay_s), "ports": list(self.ports), **(self._stopped or {})}

    def __enter__(self) -> ProxySet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ask(self, command: tuple) -> Any:
        with self._lock:
            self._conn.send(command)
            if not self._conn.poll(30):
                raise RuntimeError(f"the latency proxy did not answer {command[0]!r} in 30 s")
            kind, value = self._conn.recv()
        if kind != "ok":
            raise RuntimeError(f"the latency proxy refused {command[0]!r}: {value}")
        return value


def serve(conn: Any, upstreams: Sequence[tuple[str, int]], listen_host: str) -> None:
    """The proxy process: start the proxies, say `ready` with their ports, then obey `delay` and `stop`."""
    try:
        asyncio.run(_serve(conn, upstreams, listen_host))
    except BaseException as err:
        with contextlib.suppress(OSError):
            conn.send(("error", repr(err)))
        raise


async def _serve(conn: Any, upstreams: Sequence[tuple[str, int]], listen_host: str) -> None:
    loop = asyncio.get_running_loop()
    proxies = [await LatencyProxy(host, port, listen_host).start() for host, port in upstreams]
    stopping = asyncio.Event()
    cpu0, t0 = time.process_time(), time.monotonic()

    def command() -> None:
        try:
            message = conn.recv()
        except EOFError:  # the runner went away: stop serving
            stopping.set()
            return
        if message[0] == "delay":
            for proxy in proxies:
                proxy.set_delay(message[1], message[2])
            conn.send(("ok", None))
        elif message[0] == "stop":
            stopping.set()
        else:
            conn.send(("error", f"unknown command {message[0]!r}"))

    loop.add_reader(conn.fileno(), command)
    conn.send(("ready", [p.port for p in proxies]))
    await stopping.wait()
    loop.remove_reader(conn.fileno())
    for proxy in proxies:
        await proxy.close()
    with contextlib.suppress(OSError):
        conn.send(("ok", {
            "cpu_s": round(time.process_time() - cpu0, 4), "life_s": round(time.monotonic() - t0, 3),
            "proxies": [{"upstream": f"{p.upstream[0]}:{p.upstream[1]}", "port": p.listening_port,
                         "connections": p.connections,
                         **{f"{d}_{k}": getattr(p.stats[d], k) for d in (TO_UPSTREAM, TO_CLIENT)
                            for k in ("bytes", "chunks")}} for p in proxies]}))
