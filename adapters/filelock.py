"""A machine-wide lock over flock(2): one helper for every lock of ours between processes on one host (the network
bridge's build and teardown, the calibration store, the test lanes).

flock binds the lock to an open file description: it is released when the file is closed, also when its process
dies, so a crash never leaves a lock behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXCLUSIVE, SHARED = fcntl.LOCK_EX, fcntl.LOCK_SH


@contextmanager
def held(path: Path | str, mode: int = EXCLUSIVE) -> Iterator[int]:
    """Hold `path`'s lock (created if missing, world-writable so that any user's run can take it) for the block; the
    block gets the lock's file descriptor (flock(2) on it converts the lock between modes)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, mode)
        yield fd
    finally:
        os.close(fd)
