"""The worker pool: N worker processes (`loadgen.client.worker_main`), typed messages in and out.

The runner sees a `Pool`: start every worker on one clock, receive what they report (`loadgen.messages`),
stop them. `ProcessPool` is the real one (spawned processes, a pipe each for commands, one queue back);
the runner's unit tests use an in-process fake that produces the same messages on a fake clock.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue as queue_module
from collections.abc import Sequence
from typing import Any, Protocol

from loadgen.messages import Start, Stop, WorkerConfig, WorkerMessage


class RunFailed(RuntimeError):
    pass


class Pool(Protocol):
    size: int

    def start(self, command: Start) -> None: ...

    def receive(self, timeout: float) -> list[WorkerMessage]:
        """What the workers reported: waits up to `timeout` for the first message, then takes what is queued."""

    def check_alive(self) -> None:
        """Raises RunFailed when a worker process has died."""

    def stop(self) -> None:
        """Asks every worker to stop (each then reports its last row and Done)."""

    def finished(self) -> bool:
        """Every worker process has exited and nothing is left to receive."""

    def join(self) -> None: ...


class ProcessPool:
    def __init__(self, configs: Sequence[WorkerConfig]) -> None:
        from loadgen.client import worker_main  # pika and its IO loop: only where processes are spawned

        ctx = mp.get_context("spawn")
        self.size = len(configs)
        self.out: Any = ctx.Queue()
        self.procs: list[Any] = []
        self.ctl: list[Any] = []
        for cfg in configs:
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(cfg, child_end, self.out), name=f"loadgen-w{cfg.worker}",
                               daemon=True)
            proc.start()
            self.procs.append(proc)
            self.ctl.append(parent_end)

    def start(self, command: Start) -> None:
        for end in self.ctl:
            end.send(command)

    def receive(self, timeout: float) -> list[WorkerMessage]:
        messages: list[WorkerMessage] = []
        try:
            messages.append(self.out.get(timeout=timeout))
            while True:
                messages.append(self.out.get_nowait())
        except queue_module.Empty:
            pass
        return messages

    def check_alive(self) -> None:
        for i, proc in enumerate(self.procs):
            if not proc.is_alive():
                raise RunFailed(f"worker {i} exited with code {proc.exitcode}")

    def stop(self) -> None:
        for end in self.ctl:
            with contextlib.suppress(OSError, BrokenPipeError):
                end.send(Stop())

    def finished(self) -> bool:
        if any(p.is_alive() for p in self.procs):
            return False
        try:
            return self.out.empty()
        except (OSError, ValueError):
            return True

    def join(self) -> None:
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
