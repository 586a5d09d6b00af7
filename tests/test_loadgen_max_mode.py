"""Closed-loop max mode and live client-setting steps (issue 13, seed 003) against a real 1-node local cluster.

Port slot 50 (this area's 50-54). Each run is a few seconds per step. Independent checks: the confirm window is
checked against the per-second in-flight peak the publisher records; the live prefetch against the consumer's
prefetch_count as the queue itself holds it (`rabbitmqctl eval` on the node, sampled every 50 ms: the management
API lists consumers 2-3 s late on 3.10.8); throughput against the broker-confirmed counts.
"""

from __future__ import annotations

import copy
import itertools
import os
import signal
import subprocess
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CONFIG = "n1-c5.2xlarge-gp2"
LIVE_STEP_S = 5.0
SPEC = {
    "name": "maxmode", "catalog": "aws-us-east-1-2020", "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 1, "name_pattern": "maxmode-{n}", "type": "quorum"},
        "message": {"size_bytes": 1000, "persistent": True},
        "publishers": {"count": 1, "confirms_in_flight": 1000},
        "consumers": {"count": 1, "prefetch": 1000, "multi_ack_every": 1},
    },
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [
        {"name": "inflight", "warmup_s": 1,
         "steps": {"vary": "confirms_in_flight", "values": [1, 5, 20, 200], "duration_s": 4, "rate": "max"}},
        {"name": "live-consumer", "warmup_s": 1,
         "steps": {"sequence": [{"prefetch": 10, "multi_ack_every": 1}, {"prefetch": 100, "multi_ack_every": 10}],
                   "duration_s": LIVE_STEP_S, "rate": 2000}},
        {"name": "no-confirms", "warmup_s": 1,
         "steps": {"sequence": [{"confirms_in_flight": 0, "auto_ack": True}], "duration_s": 4, "rate": "max",
                   "max_rate": 3000}},
        {"name": "prefetch", "warmup_s": 1,
         "steps": {"vary": "prefetch", "values": [1, 1000], "duration_s": 4, "rate": "max", "isolate": True}},
    ],
}


@pytest.fixture(scope="module")
def cluster(local_cluster_factory):
    return local_cluster_factory(slot=50, nodes=1).cluster


def run(cluster, scenario: str, tmp_path):
    campaign = parse_campaign(copy.deepcopy(SPEC))
    options = RunOptions(workers=1, out_dir=tmp_path, upload=False, drain_timeout_s=15, sample_interval_s=2,
                         progress_interval_s=60)
    runner = Runner(campaign, CONFIG, scenario, f"t{int(time.time() * 1000)}", cluster, options=options,
                    echo=lambda line: None)
    code = runner.run()
    assert code == 0, runner.errors
    return runner


def read(store_dir, runner, record_type):
    files = sorted((store_dir / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()


def steady(seconds):
    return seconds[(seconds.phase > 0) & ~seconds.warmup]


def test_max_mode_throughput_rises_with_the_confirm_window_which_is_never_exceeded(cluster, tmp_path):
    runner = run(cluster, "inflight", tmp_path)
    seconds = read(tmp_path, runner, "client_seconds")
    rows = steady(seconds)
    # Seed 003 benchmark 1's trend: each larger window confirms measurably more per second (>= 15 % more).
    rates = [rows[rows.phase == p].confirmed.sum() / rows[rows.phase == p].second.nunique() for p in (1, 2, 3, 4)]
    for lower, higher in itertools.pairwise(rates):
        assert higher > 1.15 * lower, rates
    # The window is never exceeded: the highest unconfirmed count of any second is within that second's limit.
    live = seconds[seconds.phase > 0]
    assert (live.in_flight_max <= live.confirms_in_flight).all()
    assert live.groupby("phase").confirms_in_flight.first().tolist() == [1, 5, 20, 200]
    assert live.in_flight_max.max() == 200  # the widest window was actually filled (not a vacuous bound)
    assert set(live.rate_mode) == {"max"} and set(live.latency_basis) == {"sent"}
    phases = read(tmp_path, runner, "phases")
    assert set(phases.latency_basis) == {"sent"} and (phases.target_rate == 0).all()
    assert phases.phase_name.tolist() == [f"confirms_in_flight={n}" for n in (1, 5, 20, 200)]
    accounting = read(tmp_path, runner, "accounting").sort_values("phase")
    # Unused ceiling credit is not counted as published; everything published was confirmed and consumed.
    assert accounting.published.sum() == seconds.published.sum()
    assert (accounting.lost == 0).all() and (accounting.consumed_unique == accounting.published).all()


# Runs inside the node: every 50 ms, the node's clock (ms since the epoch) and the prefetch_count of each consumer
# the queue holds (rabbit_amqqueue:consumers_all: what `rabbitmqctl list_consumers queue_name prefetch_count`
# lists, without a CLI start-up of 1.5-2 s per sample).
PREFETCH_SAMPLER = """
End = os:system_time(millisecond) + {ms},
Loop = fun L() ->
    Now = os:system_time(millisecond),
    P = [proplists:get_value(prefetch_count, C) || C <- rabbit_amqqueue:consumers_all(<<"{vhost}">>),
         element(4, proplists:get_value(queue_name, C)) =:= <<"{queue}">>],
    io:format("~b ~w~n", [Now, P]), timer:sleep(50),
    case Now < End of true -> L(); false -> ok end end,
Loop()."""


def sample_broker_prefetch(cluster, queue: str, seconds: float) -> tuple[subprocess.Popen, list[tuple[float, list]]]:
    """Start the sampler on node 1; returns the CLI process and the (epoch s, [prefetch_count, ...]) samples it
    appends as they stream in. Returns once the first sample is in (the CLI is up)."""
    node = cluster.nodes[0]
    code = PREFETCH_SAMPLER.format(ms=int(seconds * 1000), vhost=cluster.vhost, queue=queue)
    proc = subprocess.Popen([*node.ctl_cmd, "-t", str(int(seconds) + 30), "eval", code],
                            env={**os.environ, **cluster.ctl_env}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    samples: list[tuple[float, list]] = []
    first = threading.Event()

    def read_lines() -> None:
        for line in proc.stdout:
            stamp, _, listed = line.strip().partition(" ")
            if stamp.isdigit():
                samples.append((int(stamp) / 1000, [int(v) for v in listed.strip("[]").split(",") if v]))
                first.set()

    threading.Thread(target=read_lines, daemon=True).start()
    assert first.wait(30), "rabbitmqctl eval gave no sample"
    return proc, samples


def test_live_prefetch_and_ack_interval_change_at_the_step_boundary(cluster, tmp_path):
    proc, seen = sample_broker_prefetch(cluster, "maxmode-1", seconds=60)
    try:
        runner = run(cluster, "live-consumer", tmp_path)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the CLI and what it started (its own session)
        proc.wait(10)
    boundary = runner.start_epoch + LIVE_STEP_S  # node and runner read the same machine clock
    # The queue itself holds the new prefetch for the run's consumer within 1 s of the step boundary: the first
    # sample listing 100 is no later than boundary + 1 s. Before the boundary only the old value (or, while the
    # consumer subscribes at the start, none); after the first 100, never 10 again (the old consumer is gone).
    assert any(p == [10] for t, p in seen if t < boundary), seen
    assert all(set(p) <= {10} for t, p in seen if t < boundary), seen
    first_new = next(t for t, p in seen if 100 in p)
    assert boundary <= first_new <= boundary + 1.0, (first_new - boundary, seen)
    assert all(10 not in p for t, p in seen if t >= first_new), seen
    # The generator saw it too: basic.consume-ok for the re-subscription came within the same second.
    events = read(tmp_path, runner, "events")
    resubscribed = events[events.kind == "consumer_resubscribed"]
    assert len(resubscribed) == 1 and LIVE_STEP_S <= resubscribed.second.iloc[0] <= LIVE_STEP_S + 1, resubscribed
    seconds = read(tmp_path, runner, "client_seconds")
    live = seconds[seconds.phase > 0].groupby("second").first()
    assert (live[live.phase == 1].multi_ack_every == 1).all() and (live[live.phase == 2].multi_ack_every == 10).all()
    assert (live[live.phase == 1].prefetch == 10).all() and (live[live.phase == 2].prefetch == 100).all()
    assert set(live.latency_basis) == {"intended"}  # a scheduled rate keeps the open-loop basis
    accounting = read(tmp_path, runner, "accounting")
    assert (accounting.lost == 0).all() and (accounting.consumed_unique == accounting.published).all()


def test_isolated_prefetch_runs_differ_in_consume_rate(cluster, tmp_path):
    rates = {}
    for prefetch in (1, 1000):
        runner = run(cluster, f"prefetch-prefetch-{prefetch}", tmp_path / str(prefetch))
        rows = steady(read(tmp_path / str(prefetch), runner, "client_seconds"))
        rates[prefetch] = rows.consumed.sum() / rows.second.nunique()
    # Seed 003 benchmark 2: prefetch 1 makes the consumer block on every ack round trip.
    assert rates[1000] > 1.3 * rates[1], rates


def test_max_mode_without_confirms_holds_the_stated_cap(cluster, tmp_path):
    runner = run(cluster, "no-confirms", tmp_path)
    rows = steady(read(tmp_path, runner, "client_seconds"))
    per_second = rows.groupby("second").published.sum()
    # No window: the cap (3000 msg/s, well below what the socket takes) is what bounds the publisher.
    assert per_second.between(0.8 * 3000, 1.05 * 3000).all(), per_second.tolist()
    assert (rows.confirms_in_flight == 0).all() and (rows.in_flight_max == 0).all()
    assert set(rows.latency_basis) == {"sent"}
    accounting = read(tmp_path, runner, "accounting")
    assert accounting.published.sum() == read(tmp_path, runner, "client_seconds").published.sum()
