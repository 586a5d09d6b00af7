"""Seed 003's in-flight curve at a known round-trip time (issue 32), against a real 1-node local cluster.

The generator reaches the node through the latency proxy (fault kind client_latency, 20 ms each way: RTT r = 40 ms).
A publisher with confirm window w can have at most w messages unconfirmed, each confirmed no sooner than one round
trip after it was sent, so its publish rate is at most w / r; below the broker's own capacity it is close to that
(the broker's service time and the worker's 5 ms tick add to the round trip). Checked per step:

- the bound itself: published/s <= w / r x 1.03 (a proxy that did not delay would let w = 1 publish thousands/s);
- the tolerance below it, for steps well under the broker's capacity: published/s >= 0.80 x w / r;
- the knee: at the widest window the bound (409 600/s) is far above what one local node, this generator and the proxy
  reach together (about 60 000/s measured here without a delay, at a 60 000/s ceiling), so the rate falls below half
  of it: the curve left w / r between the last two steps;
- independently of the generator: the broker's own count of messages received (Prometheus
  rabbitmq_global_messages_received_total, sampled every 0.25 s) between its first and last sample inside each
  step's steady seconds agrees with the generator's published rate within 10 %.

A classic, non-persistent queue keeps the broker's service time well under the round trip, so that what is measured
is the window against the RTT (the shipped campaign flow-control-rtt-local runs the quorum version for the report).
Port slot 96 (its own: slot 90 is the 4.0 runtime's 3-node cluster in test_terraform_local_cluster, 97 the host
calibration's node, and the session-wide cluster factory keeps one cluster per slot).
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters import brokercounters
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CONFIG = "n1-c5.2xlarge-gp2"
ONE_WAY_MS = 20
RTT_S = 2 * ONE_WAY_MS / 1000
WINDOWS = (1, 4, 16, 64, 16384)
BOUND_TOLERANCE = 1.03  # above w / r: the per-second counts' edges (a confirm counted in the next second)
BELOW_TOLERANCE = 0.80  # below w / r: broker service time and the worker's tick on a shared 2-core host
SPEC = {
    "name": "rtt", "catalog": "aws-us-east-1-2020", "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 1, "name_pattern": "rtt-{n}", "type": "classic", "durable": False},
        "message": {"size_bytes": 256, "persistent": False},
        "publishers": {"count": 1, "confirms_in_flight": 1},
        "consumers": {"count": 1, "prefetch": 1000, "multi_ack_every": 1},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [
        {"name": "inflight", "warmup_s": 1,
         "steps": {"vary": "confirms_in_flight", "values": list(WINDOWS), "duration_s": 4, "rate": "max",
                   "max_rate": 400000},
         "faults": [{"kind": "client_latency", "phases": [1], "at_s": 0,
                     "params": {"to_broker_ms": ONE_WAY_MS, "to_client_ms": ONE_WAY_MS}}]},
    ],
}


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    return local_cluster_factory(slot=96, nodes=1).cluster


class BrokerReceived:
    """The broker's received counter, sampled on a thread: (monotonic mid-time of the scrape, count)."""

    def __init__(self, cluster, interval_s: float = 0.25) -> None:
        self.cluster, self.interval_s = cluster, interval_s
        self.samples: list[tuple[float, int]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            t0 = time.monotonic()
            received = brokercounters.total(brokercounters.cluster_counts(self.cluster)).received
            self.samples.append(((t0 + time.monotonic()) / 2, received))
            self.stopping.wait(self.interval_s)

    def rate(self, start: float, end: float) -> float:
        """msg/s between the first and the last sample inside [start, end]: samples only from inside the window,
        since a step boundary is a jump (the next window's burst must not be smeared into this one)."""
        inside = [(t, c) for t, c in self.samples if start <= t <= end]
        assert len(inside) >= 2 and inside[-1][0] - inside[0][0] >= 1.0, (start, end, inside)
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return (c1 - c0) / (t1 - t0)


def read(store_dir, runner, record_type):
    files = sorted((store_dir / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()


def test_the_publish_rate_follows_the_window_over_the_round_trip_until_the_broker_caps_it(cluster, tmp_path):
    campaign = parse_campaign(SPEC)
    options = RunOptions(workers=1, out_dir=tmp_path, upload=False, drain_timeout_s=10, sample_interval_s=2,
                         progress_interval_s=60)
    runner = Runner(campaign, CONFIG, "inflight", f"t{int(time.time() * 1000)}", cluster, options=options,
                    echo=lambda line: None)
    broker = BrokerReceived(cluster)
    broker.thread.start()
    try:
        assert runner.run() == 0, runner.errors
    finally:
        broker.stopping.set()
        broker.thread.join(10)
    seconds = read(tmp_path, runner, "client_seconds")
    steady = seconds[(seconds.phase > 0) & ~seconds.warmup]
    measured, counted = {}, {}
    for phase, window in enumerate(WINDOWS, start=1):
        rows = steady[steady.phase == phase]
        first, last = int(rows.second.min()), int(rows.second.max())
        n = last - first + 1
        measured[window] = rows.published.sum() / n
        counted[window] = broker.rate(runner.start_mono + first, runner.start_mono + last + 1)
    bound = {w: w / RTT_S for w in WINDOWS}
    print({w: (round(measured[w]), round(counted[w]), round(bound[w])) for w in WINDOWS})  # -s: the curve
    for w in WINDOWS:
        assert measured[w] <= bound[w] * BOUND_TOLERANCE, (w, measured, bound)
        assert abs(counted[w] - measured[w]) <= 0.10 * measured[w], (w, measured, counted)
    for w in WINDOWS[:-1]:
        assert measured[w] >= bound[w] * BELOW_TOLERANCE, (w, measured, bound)
    assert measured[WINDOWS[-1]] < 0.5 * bound[WINDOWS[-1]], (measured, bound)
    assert measured[WINDOWS[-1]] > measured[WINDOWS[-2]]  # still the highest: capped, not broken
    # The proxy was on the path all along, and its CPU (the generator's host's) stayed below saturation.
    proxy = runner.manifest["latency_proxy"]
    assert proxy["proxies"][0]["connections"] >= 1 and not proxy["cpu_saturated"], proxy
    assert proxy["proxies"][0]["to_upstream_bytes"] > 256 * sum(measured.values()), proxy
    events = read(tmp_path, runner, "events")
    started = events[events.kind == "fault_start"]
    assert started.fault_kind.tolist() == ["client_latency"] and started.second.iloc[0] < 0.5
    healed = events[events.kind == "fault_heal"]
    assert healed.fault_kind.tolist() == ["client_latency"] and healed.second.iloc[0] >= 4 * len(WINDOWS)  # at the stop
    assert runner.manifest["broker_counts"]["agrees"] is True, runner.manifest["broker_counts"]
