"""Cluster slots in the object store (adapters/storeleases.py) against a real S3 endpoint (moto's server): the cap
holds across processes that share nothing but the bucket, as Celery workers on several hosts do, and a dead
holder's slot is reclaimed. The witness is the object store itself: the lease objects and their owners."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from adapters.objectstore import S3Store, StoreSpec
from adapters.storeleases import StoreLeaseBoard, keep_alive, lease_ttl_s
from sizing.contract.layout import lease_key

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[1]

HOLDER = r"""
import sys, time
from adapters.objectstore import S3Store, StoreSpec
from adapters.storeleases import StoreLeaseBoard, keep_alive
board = StoreLeaseBoard(S3Store(StoreSpec.from_json(sys.argv[1])), "existing", ttl_s=float(sys.argv[2]))
lease = board.try_acquire("dag/run-1/n1-r1", 1)
print("held" if lease else "refused", flush=True)
with keep_alive(board, "dag/run-1/n1-r1", interval_s=0.3):
    time.sleep(600)
"""


@pytest.fixture
def store(s3) -> S3Store:
    return S3Store(StoreSpec("s3", s3.bucket, s3.endpoint_url, s3.region))


def test_one_slot_one_holder_even_when_racing(store):
    boards = [StoreLeaseBoard(store, "aws", ttl_s=60) for _ in range(8)]
    won: list[str] = []
    barrier = threading.Barrier(len(boards))

    def race(i: int) -> None:
        barrier.wait()
        if boards[i].try_acquire(f"run/trial-{i}", 1) is not None:
            won.append(f"run/trial-{i}")

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(boards))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert boards[0].holders() == {0: won[0]}  # the bucket names the winner
    # Re-entrant for the holder, refused for anyone else; a second slot admits a second trial.
    assert boards[1].try_acquire(won[0], 1).slot == 0
    assert boards[2].try_acquire("run/other", 1) is None
    assert boards[2].try_acquire("run/other", 2).slot == 1
    # Giving back: only the owner's lease goes.
    assert boards[3].release("run/other") and not boards[3].release("run/nobody")
    assert boards[4].holders() == {0: won[0]}
    assert boards[5].clear() == 1 and store.list("leases/aws/") == []


def test_a_dead_holders_slot_is_reclaimed_after_its_ttl_and_not_before(store, s3):
    """A holder renews its lease while it runs (keep_alive, as a trial's tasks do). Kill it with SIGKILL: no
    goodbye, the object stays. A waiter gets the slot once the lease has gone unrenewed for its TTL, and not
    while the holder was alive (although that took longer than the TTL)."""
    ttl = 3.0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, StoreSpec("s3", s3.bucket, s3.endpoint_url,
                                                                       s3.region).to_json(), str(ttl)],
                              env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = StoreLeaseBoard(store, "existing", ttl_s=ttl)
        alive_until = time.monotonic() + 2 * ttl  # the holder outlives its TTL, renewing
        while time.monotonic() < alive_until:
            assert waiter.try_acquire("dag/run-2/n1-r1", 1) is None, "taken from a live holder"
            time.sleep(0.5)
        assert waiter.holders() == {0: "dag/run-1/n1-r1"}
        os.killpg(holder.pid, signal.SIGKILL)
        killed = time.monotonic()
        holder.wait(timeout=10)
        lease = None
        while lease is None and time.monotonic() - killed < 4 * ttl:
            lease = waiter.try_acquire("dag/run-2/n1-r1", 1)
            if lease is None:
                time.sleep(0.2)
        waited = time.monotonic() - killed
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(timeout=10)
    assert lease is not None and lease.slot == 0
    # Not before the TTL ran out (the server's clock has 1 s resolution), well before four.
    assert ttl - 1.5 <= waited <= 4 * ttl, waited
    doc = json.loads(store.get(lease_key("existing", 0)))
    assert doc["owner"] == "dag/run-2/n1-r1" and doc["ttl_s"] == ttl


def test_keep_alive_renews_and_notices_a_lost_lease(store, caplog):
    board = StoreLeaseBoard(store, "aws", ttl_s=2.0)
    assert board.try_acquire("run/a", 1) is not None
    with keep_alive(board, "run/a", interval_s=0.2):
        time.sleep(3.0)  # longer than the TTL: renewals keep it alive
        assert StoreLeaseBoard(store, "aws", ttl_s=2.0).try_acquire("run/b", 1) is None
    assert board.renew("run/a") and board.release("run/a") and not board.renew("run/a")
    with caplog.at_level("WARNING"), keep_alive(board, "run/a", interval_s=5):
        pass
    assert "holds no lease to renew" in caplog.text


def test_ttl_setting():
    assert lease_ttl_s({}) == 1800.0 and lease_ttl_s({"SIZING_LEASE_TTL_S": "30"}) == 30.0
    with pytest.raises(ValueError, match="SIZING_LEASE_TTL_S"):
        lease_ttl_s({"SIZING_LEASE_TTL_S": "soon"})
