"""Exact broker-side counts across a broker stall (issue 25, item 3), on a real 1-node local cluster (port slot 67;
on the 4.0 runtime, slot 93: the freeze, the node sampler and the Prometheus counters the platform reads, on the
other version's broker).

The load generator publishes 2,000 msg/s for 20 s while the test freezes the node for 3 s (SIGSTOP, then SIGCONT) in
the middle. Independent counters: the generator's own accounting (every message carries its publisher and sequence
number) against the node's Prometheus rabbitmq_global_messages_*_total, read by the test itself before and after,
and by the platform (the run manifest's broker_counts, the broker_samples rows). The management API's overview for
the same window is printed next to them: it is the source that lost counts (STACK-NOTES, "Broker counters under a
stall"), which is why nothing compares against it any more.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters import brokercounters, nodestats
from adapters.management import ManagementClient
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout

pytestmark = pytest.mark.cluster

CONFIG = "n1-c5.2xlarge-gp2"
RATE, STEP_S, FREEZE_AT_S, FREEZE_S = 2000, 20, 8.0, 3.0
SPEC = {
    "name": "stall", "catalog": "aws-us-east-1-2020", "target": {"rate": RATE, "p99_latency_ms": 5000},
    "workload": {
        "queues": {"count": 2, "name_pattern": "stall-{n}", "type": "classic", "durable": True},
        "message": {"size_bytes": 256, "persistent": False},
        "publishers": {"count": 2, "confirms_in_flight": 500},
        "consumers": {"count": 2, "prefetch": 500, "multi_ack_every": 10},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [{"name": "freeze", "warmup_s": 2, "steps": {"rates": [RATE], "duration_s": STEP_S}}],
}


@pytest.fixture(scope="module", params=[None, "4.0"], ids=["host-3.10", "chroot-4.0"])
def cluster(local_cluster_factory, request):
    version = request.param
    return local_cluster_factory(slot=93 if version else 67, nodes=1, rabbitmq_version=version).cluster


def _overview(cluster) -> dict[str, int]:
    stats = ManagementClient(cluster, timeout_s=10).get("/api/overview").get("message_stats") or {}
    return {name: int(stats.get(name, 0)) for name in ("publish", "confirm", "deliver_get", "ack")}


def _freeze(runner: Runner, pid: int, log: list[str]) -> None:
    while not runner.start_mono:
        time.sleep(0.05)
    time.sleep(max(0.0, runner.start_mono + FREEZE_AT_S - time.monotonic()))
    os.kill(pid, signal.SIGSTOP)
    log.append(f"SIGSTOP at scenario second {time.monotonic() - runner.start_mono:.1f}")
    time.sleep(FREEZE_S)
    os.kill(pid, signal.SIGCONT)
    log.append(f"SIGCONT at scenario second {time.monotonic() - runner.start_mono:.1f}")


def test_exact_counters_match_the_generator_across_a_freeze(cluster, tmp_path):
    node = cluster.nodes[0]
    pid = int(Path(node.pid_file).read_text().strip())
    campaign = parse_campaign(copy.deepcopy(SPEC))
    runner = Runner(campaign, CONFIG, "freeze", f"s{int(time.time() * 1000)}", cluster,
                    options=RunOptions(workers=2, out_dir=tmp_path, upload=False, drain_timeout_s=60,
                                       sample_interval_s=1, progress_interval_s=60), echo=lambda line: None)
    before, overview_before = brokercounters.cluster_counts(cluster), _overview(cluster)
    freezes: list[str] = []
    freezer = threading.Thread(target=_freeze, args=(runner, pid, freezes), daemon=True)
    freezer.start()
    try:
        assert runner.run() == 0, runner.errors
    finally:
        freezer.join(timeout=60)
        os.kill(pid, signal.SIGCONT)  # never leave the node frozen
    assert len(freezes) == 2, freezes
    after, overview_at_end = brokercounters.cluster_counts(cluster), _overview(cluster)
    time.sleep(6)  # one collect_statistics_interval (5 s): the management API's last chance to catch up
    overview_after = _overview(cluster)

    books = pa.concat_tables([pq.read_table(f) for f in sorted(
        (tmp_path / raw_layout.raw_run_prefix(runner.key) / "accounting").rglob("*.parquet"))]).to_pylist()
    published = sum(b["published"] for b in books)
    confirmed = sum(b["confirmed"] for b in books)
    consumed = runner.totals["consumed"]
    assert published >= 0.9 * RATE * STEP_S and sum(b["lost"] for b in books) == 0

    counted = brokercounters.counted_between(before, after)
    assert counted is not None
    assert (counted.received, counted.confirmed, counted.delivered, counted.acknowledged) == (
        published, confirmed, consumed, consumed)

    # The platform's own check, in the run manifest: the same exact counts, agreeing with the generator.
    manifest = json.loads((tmp_path / raw_layout.manifest_key(runner.key)).read_text())
    check = manifest["broker_counts"]
    assert check["agrees"] is True and check["differ"] == [], check
    assert check["broker"]["received"] == published and check["broker"]["delivered"] == consumed

    # broker_samples: exact cumulative counters per row; during the freeze the scrape fails and the row says
    # nothing (null), never a made-up figure; rates only between two answered samples.
    samples = pa.concat_tables([pq.read_table(f) for f in sorted(
        (tmp_path / raw_layout.raw_run_prefix(runner.key) / "broker_samples").rglob("*.parquet"))]).to_pandas()
    answered = samples[samples.messages_received.notna()].sort_values("second")
    assert answered.messages_received.is_monotonic_increasing
    assert before[node.name].received <= answered.messages_received.min()
    assert answered.messages_received.max() <= after[node.name].received
    rows = samples.sort_values("second").reset_index(drop=True)
    unanswered = rows.index[rows.messages_received.isna()].tolist()
    assert unanswered and pd.isna(rows.publish_rate[0]), rows  # the frozen node's; no rate before a previous sample
    assert all(pd.isna(rows.publish_rate[i + 1]) for i in unanswered if i + 1 < len(rows))  # no rate across a gap

    at_end = {name: overview_at_end[name] - overview_before[name] for name in overview_before}
    settled = {name: overview_after[name] - overview_before[name] for name in overview_before}
    print(f"\nfreeze: {freezes}; generator published {published}, confirmed {confirmed}, consumed {consumed}; "
          f"Prometheus counters {counted.to_dict()}; management API overview at the end of the run {at_end}, 6 s "
          f"later {settled}; broker_samples rows {len(samples)}, {len(unanswered)} without an answer")


def test_counts_from_a_real_nodes_metrics_sum_every_label(cluster):
    """Known answer: the counters one scrape serves, summed by hand from the text."""
    node = cluster.nodes[0]
    text = nodestats.http_scrape(f"http://{node.host}:{node.prometheus_port}/metrics", 5).text
    lines = [line for line in text.splitlines() if line.startswith("rabbitmq_global_messages_delivered_total")]
    assert len(lines) >= 2  # one series per queue type
    by_hand = sum(int(float(line.rsplit(" ", 1)[1])) for line in lines)
    counts = brokercounters.counts_from_metrics(nodestats.parse_prometheus(text))
    assert counts.delivered == by_hand
