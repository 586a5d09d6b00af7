"""Cluster slots in the object store: the cap on clusters up at once, held across Airflow workers and hosts.

adapters/leases.py keeps slots as O_EXCL files: enough on one host (the local target, whose clusters are
processes of that host anyway). With several workers (Celery, Kubernetes) the tasks of one trial run on
different hosts, so the slots live where all of them reach: one object per slot,
`leases/<target>/slot-N.json` (sizing.contract.layout.lease_key) = {owner, holder, ttl_s}.

- take: a conditional PUT that succeeds only when no such object exists (If-None-Match: *): of two workers
  racing for a slot exactly one wins (S3 since 2024, MinIO, moto);
- renew / reclaim / give back: PUT or DELETE with If-Match on the ETag read (compare-and-swap);
- a dead holder: a cluster lives across several tasks (apply .. destroy), so no one process holds its slot; the
  trial's tasks renew it while they run (`keep_alive`) and its destroy gives it back. A lease nobody renewed for
  `ttl_s` (judged on the object store's clock: LastModified against the answer's Date) is a dead holder's,
  e.g. a run whose workers were killed before its teardown could run; the next waiter reclaims it, and says so.

The TTL must outlast the longest gap between two tasks of a trial (a queue of waiting tasks on busy workers):
SIZING_LEASE_TTL_S, 1800 s by default.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from adapters.leases import Lease
from adapters.objectstore import S3Store, VersionedObject
from sizing.contract.layout import lease_key, lease_prefix, lease_slot_of

DEFAULT_TTL_S = 1800.0
log = logging.getLogger(__name__)


def lease_ttl_s(env: Mapping[str, str] | None = None) -> float:
    env = os.environ if env is None else env
    raw = env.get("SIZING_LEASE_TTL_S") or str(DEFAULT_TTL_S)
    try:
        ttl = float(raw)
    except ValueError as err:
        raise ValueError(f"SIZING_LEASE_TTL_S must be a number of seconds, got {raw!r}") from err
    if ttl <= 0:
        raise ValueError(f"SIZING_LEASE_TTL_S must be > 0, got {ttl}")
    return ttl


@dataclass(frozen=True)
class Held:
    slot: int
    owner: str
    holder: str  # host:pid of the last process that took or renewed it (for the log)
    ttl_s: float
    age_s: float
    etag: str

    @property
    def expired(self) -> bool:
        return self.age_s > self.ttl_s


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class StoreLeaseBoard:
    """The same interface as adapters.leases.LeaseBoard (try_acquire, release, holders, clear), plus renew."""

    def __init__(self, store: S3Store, target: str, ttl_s: float = DEFAULT_TTL_S,
                 logger: logging.Logger | None = None) -> None:
        self.store = store
        self.target = target
        self.ttl_s = ttl_s
        self.log = logger or log

    def _body(self, owner: str) -> bytes:
        return json.dumps({"owner": owner, "holder": _holder(), "ttl_s": self.ttl_s}).encode()

    def _parse(self, slot: int, found: VersionedObject) -> Held | None:
        try:
            doc = json.loads(found.data)
            return Held(slot, str(doc["owner"]), str(doc.get("holder", "?")), float(doc.get("ttl_s", self.ttl_s)),
                        found.age_s, found.etag)
        except (ValueError, KeyError, TypeError):
            return None  # not ours to judge: never reclaimed, never counted free

    def held(self) -> list[Held]:
        out = []
        for key in self.store.list(lease_prefix(self.target)):
            slot = lease_slot_of(key)
            if slot is None:
                continue
            found = self.store.read_versioned(key)
            lease = self._parse(slot, found) if found is not None else None
            if lease is not None:
                out.append(lease)
        return sorted(out, key=lambda h: h.slot)

    def holders(self) -> dict[int, str]:
        return {h.slot: h.owner for h in self.held()}

    def try_acquire(self, owner: str, slots: int) -> Lease | None:
        """A free slot among the first `slots`, or a dead holder's; re-entrant (an owner that holds one renews
        and gets it back); None when every slot is held by a live holder."""
        current = {h.slot: h for h in self.held()}
        for lease in current.values():
            if lease.owner == owner and self._renew(lease):
                return Lease(lease.slot, owner)
        for slot in range(slots):
            key = lease_key(self.target, slot)
            if slot not in current and self.store.put_if_absent(key, self._body(owner)):
                return Lease(slot, owner)
            found = self.store.read_versioned(key)
            if found is None:  # given back between our list and now: one more try
                if self.store.put_if_absent(key, self._body(owner)):
                    return Lease(slot, owner)
                continue
            lease = self._parse(slot, found)
            if lease is not None and lease.expired and self.store.put_if_match(key, self._body(owner), lease.etag):
                self.log.warning("cluster slot %d of %s: reclaimed from %s (held by %s, not renewed for %.0f s, "
                                 "ttl %.0f s): its holder is dead", slot, self.target, lease.owner, lease.holder,
                                 lease.age_s, lease.ttl_s)
                return Lease(slot, owner)
        return None

    def _renew(self, lease: Held) -> bool:
        return self.store.put_if_match(lease_key(self.target, lease.slot), self._body(lease.owner), lease.etag)

    def renew(self, owner: str) -> bool:
        """Refresh the owner's lease; False when it holds none (given back, or reclaimed after it expired)."""
        return any(self._renew(h) for h in self.held() if h.owner == owner)

    def release(self, owner: str) -> bool:
        released = False
        for lease in self.held():
            if lease.owner == owner:
                released |= self.store.delete_if_match(lease_key(self.target, lease.slot), lease.etag)
        return released

    def clear(self) -> int:
        held = self.held()
        self.store.delete([lease_key(self.target, h.slot) for h in held])
        return len(held)


@contextmanager
def keep_alive(board: StoreLeaseBoard, owner: str, interval_s: float | None = None) -> Iterator[None]:
    """Renew `owner`'s lease now and every `interval_s` (a third of the TTL) while the block runs: a long task
    (a load run, an apply) keeps its trial's slot; if the process dies, the renewals stop with it."""
    interval = interval_s if interval_s is not None else board.ttl_s / 3
    if not board.renew(owner):
        board.log.warning("cluster slot of %s: %s holds no lease to renew (given back or reclaimed)",
                          board.target, owner)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            try:
                if not board.renew(owner):
                    board.log.warning("cluster slot of %s: the lease of %s is gone", board.target, owner)
            except Exception as err:  # a passing store error must not kill the task; the next round retries
                board.log.warning("cluster slot of %s: renewing the lease of %s failed: %s", board.target, owner, err)

    thread = threading.Thread(target=loop, name=f"lease-{owner}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
