"""Two concurrent workload groups against a real 1-node local cluster (issue 14 acceptance; port slot 66).

A quorum foreground at scheduled steps (300 then 600 msg/s) next to a lazy classic background held at 8 publishers
x 10 msg/s. Independent counter: the broker's own per-queue publish counts (management API, adapters.management)
for each group's queues. Known answer: the background's schedule, 80 msg/s in every phase. The per-group rates and
latencies come from phase_summary's own client functions (`fold_client_seconds` / `_final_client`, the Arrow code the
Spark job runs per group) applied to the recorded records, without starting Spark.
"""

from __future__ import annotations

import copy
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from adapters import brokercounters
from adapters.management import ManagementClient
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.phase_summary.client_stats import _final_client

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CONFIG = "n1-c5.2xlarge-gp2"
STEP_S, WARMUP_S, BACKGROUND_RATE = 12, 2, 80.0
SPEC = {
    "name": "groups", "catalog": "aws-us-east-1-2020", "target": {"rate": 600, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 2, "name_pattern": "fg-qq-{n}", "type": "quorum"},
        "message": {"size_bytes": 1000, "persistent": True},
        "publishers": {"count": 2, "confirms_in_flight": 100},
        "consumers": {"count": 2, "prefetch": 100, "multi_ack_every": 1},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [{
        "name": "mixed", "warmup_s": WARMUP_S, "steps": {"rates": [300, 600], "duration_s": STEP_S},
        "groups": [
            {"name": "quorum"},
            {"name": "lazy", "rate": 10, "per_publisher": True,
             "workload": {"queues": {"count": 8, "name_pattern": "bg-lazy-{n}", "type": "classic",
                                     "arguments": {"x-queue-mode": "lazy"}},
                          "message": {"size_bytes": 64},
                          "publishers": {"count": 8, "confirms_in_flight": 0},
                          "consumers": {"count": 8, "prefetch": 50}}},
        ],
    }],
}


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    return local_cluster_factory(slot=66, nodes=1, broker_config={"collect_statistics_interval": 250}).cluster


def read(store_dir, runner, record_type) -> pa.Table:
    files = sorted((store_dir / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def broker_publishes(cluster, prefix: str, want: int) -> int:
    """Messages the broker counted into the queues named prefix* (its stats lag: poll until they settle)."""
    client = ManagementClient(cluster, timeout_s=5.0)
    deadline, total = time.monotonic() + 15, -1
    while time.monotonic() < deadline:
        total = sum((q.get("message_stats") or {}).get("publish", 0)
                    for q in client.queues("name,message_stats") if q["name"].startswith(prefix))
        if total == want:
            return total
        time.sleep(0.5)
    return total


def test_two_groups_run_concurrently_each_with_its_own_figures(cluster, tmp_path):
    campaign = parse_campaign(copy.deepcopy(SPEC))
    runner = Runner(campaign, CONFIG, "mixed", f"g{int(time.time() * 1000)}", cluster,
                    options=RunOptions(workers=2, out_dir=tmp_path, upload=False, drain_timeout_s=15,
                                       sample_interval_s=2, progress_interval_s=60), echo=lambda line: None)
    before = brokercounters.cluster_counts(cluster)
    assert runner.run() == 0, runner.errors
    counted = brokercounters.counted_between(before, brokercounters.cluster_counts(cluster))
    seconds = read(tmp_path, runner, "client_seconds")
    by_group = {g: seconds.filter(pc.equal(seconds["group"], g)) for g in ("quorum", "lazy")}
    assert sum(t.num_rows for t in by_group.values()) == seconds.num_rows  # every row carries its group
    published = {g: int(pc.sum(t["published"]).as_py()) for g, t in by_group.items()}
    assert counted is not None and counted.received == sum(published.values())  # exact, at once
    # Independent counter: the broker's publish counts per group's queues equal each group's own records.
    assert broker_publishes(cluster, "bg-lazy-", published["lazy"]) == published["lazy"]
    assert broker_publishes(cluster, "fg-qq-", published["quorum"]) == published["quorum"]
    lazy = ManagementClient(cluster).queue("bg-lazy-1")
    assert lazy["arguments"].get("x-queue-mode") == "lazy" and lazy["type"] == "classic"
    # The background kept its schedule over the whole run (2 x 12 s at 80 msg/s), counted by the broker: 2 %.
    scheduled = BACKGROUND_RATE * 2 * STEP_S
    assert abs(published["lazy"] - scheduled) <= 0.02 * scheduled, published

    # phase_summary's client figures, one row per (phase, group), from the job's own per-group functions.
    folded = pa.Table.from_batches(list(ps.fold_client_seconds(iter(seconds.to_batches()))))
    # the fold's other rows are the per-second series (as blocks) and the raw gate's checks
    partial = folded.filter(pc.equal(folded["kind"], ps.PARTIAL))
    series = ps.series_rows(folded.filter(pc.equal(folded["kind"], ps.SERIES)).to_pandas())
    for group, count in published.items():  # the series sums the same records, warm-up included
        assert series.loc[series["group"] == group, "published"].sum() == count, group
    rows = {}
    for key in {(r["phase"], r["group"]) for r in partial.select(["phase", "group"]).to_pylist()}:
        part = partial.filter(pc.and_(pc.equal(partial["phase"], key[0]), pc.equal(partial["group"], key[1])))
        rows[key] = _final_client(part).to_pylist()[0]
    assert sorted(rows) == [(0, "lazy"), (0, "quorum"), (1, "lazy"), (1, "quorum"), (2, "lazy"), (2, "quorum")]
    steady_s = STEP_S - WARMUP_S
    for phase, fg_rate in ((1, 300.0), (2, 600.0)):
        bg, fg = rows[(phase, "lazy")], rows[(phase, "quorum")]
        assert abs(bg["published"] / steady_s - BACKGROUND_RATE) <= 0.02 * BACKGROUND_RATE, (phase, bg)
        assert abs(fg["published"] / steady_s - fg_rate) <= 0.05 * fg_rate, (phase, fg)
        assert bg["scheduled"] == BACKGROUND_RATE * steady_s and fg["scheduled"] == fg_rate * steady_s
        assert bg["e2e_samples"] > 0 and fg["e2e_samples"] > 0 and fg["confirmed"] > 0 and bg["confirmed"] == 0
        assert bg["workers"] == 1 and fg["workers"] == 1  # each group on a worker process of its own
    phases = read(tmp_path, runner, "phases").to_pylist()
    assert sorted((p["group"], p["phase"], p["target_rate"], p["foreground"]) for p in phases) == [
        ("lazy", 1, 80.0, False), ("lazy", 2, 80.0, False), ("quorum", 1, 300.0, True), ("quorum", 2, 600.0, True)]
    books = read(tmp_path, runner, "accounting").to_pylist()
    assert {b["group"] for b in books} == {"lazy", "quorum"}
    assert sum(b["published"] for b in books if b["group"] == "lazy") == published["lazy"]
    assert sum(b["lost"] for b in books) == 0
