"""A killed node has missing node_seconds rows during its outage and rows again after it rejoins (real 3-node
local cluster, slot 56). Known answer: the outage window the test itself makes (SIGKILL at ~3 s, start at ~7 s):
while no process of the node runs, every row is missing; once its new process runs (booting, before its endpoint
answers) the operating system's figures stand again (the sampler reads /proc before the node's endpoint); the
other nodes keep their rows throughout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request

import pytest

from loadgen.nodes import NodeSampler

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    made = local_cluster_factory(slot=56, nodes=3)
    yield made.cluster
    made.destroy()


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def test_a_killed_node_has_missing_seconds_then_rows_after_it_rejoins(cluster):
    rows: list[dict] = []
    start = time.monotonic()
    sampler = NodeSampler(cluster, rows.append, start, time.time())
    victim = cluster.nodes[2]
    url = f"http://{victim.host}:{victim.prometheus_port}/metrics"
    sampler.start()
    try:
        time.sleep(3)
        with open(victim.pid_file) as f:  # type: ignore[arg-type]
            os.kill(int(f.read().strip()), signal.SIGKILL)
        killed_at = time.monotonic() - start
        time.sleep(4)
        restarted_at = time.monotonic() - start  # no process of the node ran before this
        subprocess.run(victim.start_cmd, check=True, timeout=120, env={**os.environ, **cluster.ctl_env})
        deadline = time.monotonic() + 120
        while not answers(url) and time.monotonic() < deadline:
            time.sleep(0.5)
        back_at = time.monotonic() - start
        time.sleep(5)
    finally:
        sampler.stop()
        sampler.join(timeout=30)
    print(f"killed at {killed_at:.1f}s, answering again at {back_at:.1f}s, failures {sampler.failures}")
    mine = sorted((r for r in rows if r["node"] == victim.name), key=lambda r: r["second"])
    seconds = [r["second"] for r in mine]
    assert seconds == list(range(seconds[0], seconds[-1] + 1))  # every second once, none skipped
    outage = [r for r in mine if killed_at + 1 <= r["second"] < restarted_at - 1]
    assert outage and all(r["missing"] and r["cpu_busy"] is None for r in outage)
    after = [r for r in mine if r["second"] >= back_at + 1]
    assert after and not all(r["missing"] for r in after)
    assert any(r["cpu_s"] is not None for r in after)
    others = [r for r in rows if r["node"] != victim.name and 1 <= r["second"] < back_at]
    assert sum(not r["missing"] for r in others) >= 0.8 * len(others)
