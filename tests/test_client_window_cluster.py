"""Issue 44 on a real 1-node local cluster: a publisher whose confirm window over a known round trip bounds it below
the offered rate is named `publisher_window` by the bottleneck rule (sizing.criteria.rules.bottleneck), and a consumer
whose prefetch window over a known round trip does is named `consumer_prefetch`.

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

The consumer's known answers (test_a_prefetch_window_...): one consumer with 10 slots behind 10 ms each way (RTT
20 ms) can consume at most 10 / RTT = 500 msg/s; 800 msg/s is offered. Each refill (an ack freeing a full window ->
the next delivery) is at least the round trip, so the measured ceiling is at most 500 (+3 %), the consume rate is
within NEAR_LIMIT of it, and the label is `consumer_prefetch`.

Port slot 44 (its own); the two tests share its cluster.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import pytest

from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.criteria import rules
from tests.loadgen_records import client_phase_row, read_records

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


def spec_with(**changes) -> dict:
    """SPEC with some of its workload's clients and its scenario's round trip changed (a test's own question)."""
    spec = copy.deepcopy(SPEC)
    workload, scenario = spec["workload"], spec["scenarios"][0]
    for key in ("publishers", "consumers"):
        workload[key].update(changes.get(key, {}))
    if "rate" in changes:
        spec["target"]["rate"] = changes["rate"]
        scenario["steps"]["rates"] = [changes["rate"]]
    if "one_way_ms" in changes:
        scenario["faults"][0]["params"] = {"to_broker_ms": changes["one_way_ms"], "to_client_ms": changes["one_way_ms"]}
    return spec


@dataclass
class PhaseFigures:
    row: dict  # the phase's client figures, by phase_summary's own fold
    confirm_rate: float
    consume_rate: float
    carried: float
    busiest: float  # the node's mean CPU, of its cores
    machine: float  # the machine's mean busy share
    valid: bool
    label: str | None


def run_phase(cluster, tmp_path, spec: dict) -> PhaseFigures:
    """One run of `spec`'s single phase, and its figures as the analysis reads them."""
    campaign = parse_campaign(spec)
    target = float(spec["scenarios"][0]["steps"]["rates"][0])
    runner = Runner(campaign, CONFIG, "window", f"t{int(time.time() * 1000)}", cluster,
                    options=RunOptions(workers=1, out_dir=tmp_path, upload=False, drain_timeout_s=30,
                                       sample_interval_s=2, progress_interval_s=60), echo=lambda _line: None)
    assert runner.run() == 0, runner.errors
    row = client_phase_row(tmp_path, runner)
    steady_s = DURATION_S - WARMUP_S
    confirm_rate, consume_rate = row["confirmed"] / steady_s, row["consumed"] / steady_s
    carried = rules.carried_rate(confirm_rate, consume_rate)
    # the node's figures over the same steady seconds
    nodes = read_records(tmp_path, runner, "node_seconds").to_pandas()
    start = runner.timeline.phases[0].start_s + WARMUP_S
    window = nodes[(nodes.phase == 1) & (nodes.second >= start) & ~nodes.missing]
    busiest = window.groupby("node").cpu_busy.mean().max()
    machine = (window.machine_cpu_busy_s / window.machine_cores).mean()
    events = read_records(tmp_path, runner, "events").to_pandas()
    behind = bool(((events.kind == "worker_behind") & (events.phase == 1)).any())
    valid = not rules.cpu_saturated(row["worker_cpu_max"]) and not behind
    label = rules.phase_bottleneck({**row, "valid": valid, "cpu_busiest_mean": busiest,
                                    "machine_cpu_busy_mean": machine,
                                    "resource_nodes": 1, "target_rate": target, "confirm_rate": confirm_rate,
                                    "consume_rate": consume_rate})
    return PhaseFigures(row, confirm_rate, consume_rate, carried, busiest, machine, valid, label)


def expect_label(figures: PhaseFigures, label: str) -> None:
    """The node shares this machine's cores (no envelope here), so a machine saturated by other work is `cpu`, first
    in the order, and rightly: a node short of cores fills its clients' windows too. Measured on the first run: the
    machine at 2.0 of its 2 cores every second, before the run too (another session's work), the node at 0.02."""
    assert figures.valid and figures.busiest < rules.NODE_CPU_SATURATION
    if figures.machine < rules.NODE_CPU_SATURATION:
        assert figures.label == label
    else:
        assert figures.label == "cpu"


def test_a_window_over_a_known_round_trip_is_named_publisher_window(cluster, tmp_path):
    assert rules.client_rtt_ms(parse_campaign(SPEC).scenarios[0]) == 2 * ONE_WAY_MS
    figures = run_phase(cluster, tmp_path, SPEC)
    row = figures.row
    bound = rules.window_bound(WINDOW, 2 * ONE_WAY_MS)
    print(f"confirm mean {row['confirm_mean_ms']:.1f} ms, p50 {row['confirm_p50_ms']:.1f} ms; ceiling "
          f"{row['publisher_window_ceiling']:.0f} (w / RTT {bound:.0f}); confirmed {figures.confirm_rate:.0f}/s, "
          f"consumed {figures.consume_rate:.0f}/s of {OFFERED:.0f}; node cpu {figures.busiest:.2f}, machine "
          f"{figures.machine:.2f}; valid {figures.valid} -> {figures.label}")
    assert row["confirm_mean_ms"] >= 2 * ONE_WAY_MS * 0.99  # never sooner than the round trip
    assert row["publisher_window_ceiling"] <= bound * 1.03
    assert figures.carried < rules.MATCH_FRACTION * OFFERED
    assert figures.carried >= rules.NEAR_LIMIT * row["publisher_window_ceiling"]
    assert row["consumer_ceiling"] is None  # no processing time: the consumers have no ceiling
    expect_label(figures, "publisher_window")


PREFETCH, PREFETCH_ONE_WAY_MS, PREFETCH_OFFERED = 10, 10, 800.0


def test_a_prefetch_window_over_a_known_round_trip_is_named_consumer_prefetch(cluster, tmp_path):
    spec = spec_with(publishers={"confirms_in_flight": 2000}, consumers={"prefetch": PREFETCH},
                     rate=PREFETCH_OFFERED, one_way_ms=PREFETCH_ONE_WAY_MS)
    figures = run_phase(cluster, tmp_path, spec)
    row = figures.row
    bound = rules.window_ceiling(PREFETCH, 2 * PREFETCH_ONE_WAY_MS / 1000)  # 500 msg/s
    print(f"hold {row['consumer_hold_mean_ms']:.2f} ms + refill {row['consumer_refill_mean_ms']:.2f} ms: ceiling "
          f"{row['prefetch_ceiling']:.0f} (prefetch / RTT {bound:.0f}); consumed {figures.consume_rate:.0f}/s of "
          f"{PREFETCH_OFFERED:.0f}, confirmed {figures.confirm_rate:.0f}/s; node cpu {figures.busiest:.2f}, machine "
          f"{figures.machine:.2f}; valid {figures.valid} -> {figures.label}")
    assert row["consumer_refill_mean_ms"] >= 2 * PREFETCH_ONE_WAY_MS * 0.99  # an ack's flight and a delivery's
    assert row["prefetch_ceiling"] <= bound * 1.03
    assert figures.consume_rate < rules.MATCH_FRACTION * PREFETCH_OFFERED
    assert figures.consume_rate >= rules.NEAR_LIMIT * row["prefetch_ceiling"]  # the window was full: Little's law
    assert figures.confirm_rate >= rules.MATCH_FRACTION * PREFETCH_OFFERED  # the publisher was not held
    expect_label(figures, "consumer_prefetch")
