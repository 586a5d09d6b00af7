"""OS process helpers shared by the fault injector, the demo's process management and the load-generator
hook, and the port check of the tests and the fault matrix (edge module)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a zombie holds no ports and no files)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_process_group(pid: int, grace_s: float = 20.0) -> None:
    """SIGTERM the process group led by `pid`, SIGKILL it if it outlives `grace_s`; reaps it if it is our child."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not pid_alive(pid):
                return
            time.sleep(0.2)


def busy_ports(port_base: int, count: int = 50) -> list[int]:
    """Ports of a slot's block (sizing.planning.plan.local_port_base) that something already holds on 127.0.0.1 (another
    helper, a leftover node)."""
    busy = []
    for port in range(port_base, port_base + count):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                busy.append(port)
    return busy
