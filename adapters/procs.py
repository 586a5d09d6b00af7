"""OS process helpers shared by the fault injector, the demo's process management and the load-generator
hook (edge module)."""

from __future__ import annotations

import contextlib
import os
import signal
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
