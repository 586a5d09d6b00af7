"""Issue 44 on a real 1-node local cluster: a publisher whose confirm window over a known round trip bounds it below
the offered rate is named `publisher_window` by the bottleneck rule (sizing.criteria.rules.bottleneck).

The generator reaches the node through the latency proxy (client_latency, 50 ms each way: RTT 100 ms, the issue's
measured confirm latency). One publisher with w = 20 confirms in flight can publish at most w / RTT = 200 msg/s;
300 msg/s is offered (open loop). The phase's figures come from phase_summary's own pure client code
(fold_client_seconds / _final_client: the mean confirm latency and publisher_window_ceiling) and the node's from its
node_seconds rows, as the analysis reads them. Known answers:

- the measured ceiling (publishers x w / mean confirm latency) is at most w / RTT (+3 %: the histogram's 1 % and the
  per-second edges): the confirm latency is at least the injected round trip;
- the carried rate is short of the target and within NEAR_LIMIT of that ceiling: the window was full (Little's law);
- the node is nowhere near its CPU quota (a classic transient queue at 200 msg/s), so the label is `publisher_window`
  where the rule said `none` before; on a machine saturated by other work (the node shares its cores) it is `cpu`.

Port slot 44 (its own).
"""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout
from sizing.criteria import rules
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.phase_summary.client_stats import _final_client

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CONFIG = "n1-c5.2xlarge-gp2"
ONE_WAY_MS = 50
WINDOW = 20
OFFERED = 300.0
DURATION_S, WARMUP_S = 12, 4
SPEC = {
    "name": "window", "catalog": "aws-us-east-1-2020", "target": {"rate": 300, "p99_latency_ms": 5000},
    "workload": {
        "queues": {"count": 1, "name_pattern": "window-{n}", "type": "classic", "durable": False},
        "message": {"size_bytes": 256, "persistent": False},
        "publishers": {"count": 1, "confirms_in_flight": WINDOW},
        "consumers": {"count": 1, "prefetch": 1000, "multi_ack_every": 1},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [
        {"name": "window", "warmup_s": WARMUP_S, "steps": {"rates": [OFFERED], "duration_s": DURATION_S},
         "faults": [{"kind": "client_latency", "phases": [1], "at_s": 0,
                     "params": {"to_broker_ms": ONE_WAY_MS, "to_client_ms": ONE_WAY_MS}}]},
    ],
}


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    return local_cluster_factory(slot=44, nodes=1).cluster


def read(out, runner, record_type) -> pa.Table:
    files = sorted((out / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def test_a_window_over_a_known_round_trip_is_named_publisher_window(cluster, tmp_path):
    campaign = parse_campaign(SPEC)
    assert rules.client_rtt_ms(campaign.scenarios[0]) == 2 * ONE_WAY_MS
    runner = Runner(campaign, CONFIG, "window", f"t{int(time.time() * 1000)}", cluster,
                    options=RunOptions(workers=1, out_dir=tmp_path, upload=False, drain_timeout_s=30,
                                       sample_interval_s=2, progress_interval_s=60), echo=lambda _line: None)
    assert runner.run() == 0, runner.errors
    # the phase's client figures, by the analysis' own fold
    folded = pa.Table.from_batches(list(ps.fold_client_seconds(iter(read(tmp_path, runner, "client_seconds")
                                                                    .to_batches()))))
    partial = folded.filter(pc.and_(pc.equal(folded["kind"], ps.PARTIAL), pc.equal(folded["phase"], 1)))
    row = _final_client(partial).to_pylist()[0]
    steady_s = DURATION_S - WARMUP_S
    confirm_rate, consume_rate = row["confirmed"] / steady_s, row["consumed"] / steady_s
    carried = rules.carried_rate(confirm_rate, consume_rate)
    # the node's figures over the same steady seconds
    nodes = read(tmp_path, runner, "node_seconds").to_pandas()
    start = runner.timeline.phases[0].start_s + WARMUP_S
    window = nodes[(nodes.phase == 1) & (nodes.second >= start) & ~nodes.missing]
    busiest = window.groupby("node").cpu_busy.mean().max()
    machine = (window.machine_cpu_busy_s / window.machine_cores).mean()
    events = read(tmp_path, runner, "events").to_pandas()
    behind = bool(((events.kind == "worker_behind") & (events.phase == 1)).any())
    valid = not rules.cpu_saturated(row["worker_cpu_max"]) and not behind
    label = rules.bottleneck(valid=valid, alarm=False, mem_max_fraction=None, busiest_cpu_mean=busiest,
                             machine_cpu_mean=machine, volume_load_share=None, ebs_load_share=None, net_mbit_s=None,
                             mbit_s_limit=None, target_rate=OFFERED, carried=carried, consume_rate=consume_rate,
                             publisher_window_ceiling=row["publisher_window_ceiling"],
                             consumer_ceiling=row["consumer_ceiling"])
    bound = rules.window_bound(WINDOW, 2 * ONE_WAY_MS)
    print(f"confirm mean {row['confirm_mean_ms']:.1f} ms, p50 {row['confirm_p50_ms']:.1f} ms; ceiling "
          f"{row['publisher_window_ceiling']:.0f} (w / RTT {bound:.0f}); confirmed {confirm_rate:.0f}/s, consumed "
          f"{consume_rate:.0f}/s of {OFFERED:.0f}; node cpu {busiest:.2f}, machine {machine:.2f}; valid {valid} "
          f"-> {label}")
    assert row["confirm_mean_ms"] >= 2 * ONE_WAY_MS * 0.99  # never sooner than the round trip
    assert row["publisher_window_ceiling"] <= bound * 1.03
    assert carried < rules.MATCH_FRACTION * OFFERED
    assert carried >= rules.NEAR_LIMIT * row["publisher_window_ceiling"]
    assert row["consumer_ceiling"] is None  # no processing time: the consumers have no ceiling
    assert valid and busiest < rules.NODE_CPU_SATURATION
    # The node shares this machine's cores (no envelope here), so a machine saturated by other work is `cpu`, first
    # in the order, and rightly: a node short of cores fills its publishers' windows too. Measured on the first run:
    # the machine at 2.0 of its 2 cores every second, before the run too (another session's work), the node at 0.02.
    if machine < rules.NODE_CPU_SATURATION:
        assert label == "publisher_window"
    else:
        assert label == "cpu"
