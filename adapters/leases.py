"""Cluster slots: how many clusters may be up at once, across task boundaries.

Airflow bounds running *task instances* (pools, max_active_tis_per_dagrun), but a cluster lives from
its Terraform apply (setup) to its destroy (teardown), across several tasks. A lease taken before the
apply and given back by the destroy bounds what actually matters: clusters up at the same time.
Leases are files created with O_EXCL in one directory, so they hold across processes and DAG runs on
one machine (the local target, and docker-compose's single LocalExecutor host).

A lease outlives the process that took it (the slot sensor's task ends once it holds one), so a holder is alive
while its DAG run is: `reclaim` drops the leases whose owner the caller says is gone (a run that failed, was
ended by the demo's clean-up, or no longer exists), so that a crash never blocks the slots for good.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Lease:
    slot: int
    owner: str


class LeaseBoard:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, slot: int) -> Path:
        return self.directory / f"slot-{slot}.lease"

    def holders(self) -> dict[int, str]:
        out: dict[int, str] = {}
        if not self.directory.exists():
            return out
        for path in sorted(self.directory.glob("slot-*.lease")):
            try:
                out[int(path.stem.split("-", 1)[1])] = json.loads(path.read_text())["owner"]
            except (OSError, ValueError, KeyError):
                continue  # being written or removed right now
        return out

    def try_acquire(self, owner: str, slots: int) -> Lease | None:
        """Take a free slot among the first `slots` (re-entrant: an owner that holds one gets it back)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for slot, holder in self.holders().items():
            if holder == owner:
                return Lease(slot, owner)
        for slot in range(slots):
            try:
                fd = os.open(self._path(slot), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump({"owner": owner, "since": time.time(), "pid": os.getpid()}, fh)
            return Lease(slot, owner)
        return None

    def release(self, owner: str) -> bool:
        released = False
        for slot, holder in self.holders().items():
            if holder == owner:
                self._path(slot).unlink(missing_ok=True)
                released = True
        return released

    def reclaim(self, alive: Callable[[str], bool]) -> list[Lease]:
        """Drop every lease whose owner `alive` says is gone; returns them. A lease whose file changed hands while
        this ran (its owner differs from what was read) is left alone."""
        dropped = []
        for slot, owner in self.holders().items():
            if alive(owner):
                continue
            path = self._path(slot)
            try:
                if json.loads(path.read_text())["owner"] != owner:
                    continue
                path.unlink()
            except (OSError, ValueError, KeyError):
                continue
            dropped.append(Lease(slot, owner))
        return dropped

    def clear(self) -> int:
        """Drop every lease (`sizing demo --stop`: nothing is up any more)."""
        holders = self.holders()
        for slot in holders:
            self._path(slot).unlink(missing_ok=True)
        return len(holders)
