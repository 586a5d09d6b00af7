"""OS process helpers shared by the fault injector and the demo's process management (edge module)."""

from __future__ import annotations

import os


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
