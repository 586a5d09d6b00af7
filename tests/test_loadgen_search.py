"""The online capacity search (loadgen.search) through `Runner.drive` with the fake pool on the fake clock: a
simulated system whose consumers carry at most CAPACITY msg/s (above it the backlog grows and latency jumps).
Known answers: the capacity (the search must bracket it within its resolution), which probe rates must pass
(rate <= CAPACITY), and the record layout every probe leaves (one phase each, on the scenario clock)."""

from __future__ import annotations

import copy
import json

import numpy as np

from loadgen.drivers import hist_bytes
from loadgen.messages import Row, WorkerConfig
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from tests.test_loadgen_runner import CLUSTER, SPEC, FakeClock, FakePool, read

CAPACITY = 230.0  # msg/s the simulated consumers carry
SEARCH = {"start_rate": 100, "upper_rate": 800, "growth": 2, "resolution": "5%", "warmup_s": 1, "measure_s": 4,
          "drain_s": 2, "slo": {"p99_ms": 50}}


class CappedPool(FakePool):
    """Consumers carry at most CAPACITY msg/s; a probe above it sees its backlog grow and 500 ms latencies.
    A pool made with `saturated=True` reports a worker at 99 % CPU every second (the generator fell behind)."""

    saturated = False

    def _row(self, cfg: WorkerConfig, second: int, final: bool = False) -> Row:
        row = super()._row(cfg, second, final)
        record = row.record
        if self.saturated:
            record["cpu_s"] = 0.99
        phase = cfg.timeline.phase_at(second)
        over = phase is not None and phase.target_rate > CAPACITY
        if over:
            carried = int(CAPACITY)
            record.update(consumed=carried, acked=carried,
                          e2e_hist=hist_bytes(np.full(carried, 500_000.0))[0])
        return row


def run_search(tmp_path, search=SEARCH, saturated_pools=()):
    spec = copy.deepcopy(SPEC)
    spec["scenarios"] = [{"name": "search", "search": search}]
    campaign = parse_campaign(spec)
    clock = FakeClock()
    lines: list[str] = []
    runner = Runner(campaign, "n3-c5.2xlarge-gp2", "search", "fake-run", CLUSTER,
                    options=RunOptions(workers=1, out_dir=tmp_path, upload=False, progress_interval_s=100.0,
                                       drain_idle_s=1.0),
                    echo=lines.append, clock=clock)
    pools: list[CappedPool] = []
    purges: list[int] = []

    def make_pool(configs):
        pools.append(CappedPool(configs, clock))
        pools[-1].saturated = len(pools) in saturated_pools  # 1-based: which attempts the generator lags in
        return pools[-1]

    def between_probes() -> int:
        purges.append(len(pools))
        return 0

    code = runner.drive(make_pool, between_probes=between_probes)
    return runner, code, pools, purges, lines


def test_the_online_search_brackets_a_known_capacity(tmp_path):
    runner, code, pools, purges, lines = run_search(tmp_path)
    assert code == 0, (runner.errors, lines)
    result = runner.search_result
    spec = runner.scenario.search
    # known answer: the simulated capacity lies in the bracket, which is within the resolution
    assert result.status == "converged"
    assert result.last_pass <= CAPACITY < result.first_fail
    assert result.first_fail - result.last_pass <= spec.resolution_at(result.last_pass)
    assert result.sustainable_rate == result.last_pass
    assert CAPACITY * (1 - 0.05) <= result.sustainable_rate <= CAPACITY
    assert result.probes_used == len(pools) <= spec.worst_case_probes()  # one pool (worker set) per probe
    # every verdict agrees with the independent rule of the simulated system: pass iff rate <= capacity
    for outcome in result.outcomes:
        assert outcome.passed == (outcome.rate <= CAPACITY), outcome
    # the ladder first (100, 200, 400), then bisection and one confirmation
    assert [o.result.probe.rate for o in result.outcomes[:3]] == [100, 200, 400]
    assert [o.result.probe.stage for o in result.outcomes][-1] == "confirm"
    # only failing probes leave a backlog the drain cannot empty: those are purged before the next probe
    fails = [i + 1 for i, o in enumerate(result.outcomes) if not o.passed]
    assert purges == fails


def test_every_probe_is_a_phase_on_the_scenario_clock_with_its_decision_recorded(tmp_path):
    runner, code, _pools, _purges, _lines = run_search(tmp_path)
    assert code == 0
    result = runner.search_result
    phases = read(tmp_path, runner, "phases").sort_values("phase")
    assert phases["phase"].tolist() == list(range(1, result.probes_used + 1))  # no inconclusive attempt here
    assert phases["target_rate"].tolist() == [o.rate for o in result.outcomes]
    ends = (phases["start_s"] + phases["duration_s"]).tolist()
    assert all(nxt >= end for end, nxt in zip(ends, phases["start_s"].tolist()[1:], strict=False))  # no overlap
    seconds = read(tmp_path, runner, "client_seconds")
    for phase in phases.itertuples():  # the workers' own seconds were moved onto the scenario clock
        rows = seconds[seconds.phase == phase.phase]
        assert rows["second"].min() == phase.start_s and rows["second"].max() == phase.start_s + phase.duration_s - 1
    events = read(tmp_path, runner, "events")
    probes = events[events.kind == "search_probe"].sort_values("phase")
    details = [json.loads(d) for d in probes["detail"]]
    assert [d["passed"] for d in details] == [o.passed for o in result.outcomes]
    assert [d["rate"] for d in details] == [o.rate for o in result.outcomes]
    # the figures behind a pass: the probe's rate carried over the 4 s window (the fake delivers what it sends)
    first = details[0]
    assert abs(first["confirm_rate"] - 100) <= 100 * 0.01 and abs(first["backlog_slope"]) < 1.0
    failing = next(d for d in details if not d["passed"])
    assert failing["consume_rate"] == CAPACITY and failing["p99_ms"] > 50
    assert failing["backlog_slope"] > 0  # the backlog grows at rate - capacity msg/s per second
    assert details[-1]["last_pass"] == result.last_pass and details[-1]["first_fail"] == result.first_fail
    final = json.loads(events[events.kind == "search_result"]["detail"].iloc[0])
    assert final["sustainable_rate"] == result.sustainable_rate and final["probes_used"] == result.probes_used
    accounting = read(tmp_path, runner, "accounting").sort_values("phase")
    assert accounting["phase"].tolist() == phases["phase"].tolist()
    assert runner.manifest["search"]["sustainable_rate"] == result.sustainable_rate


def test_an_attempt_the_generator_fell_behind_in_is_re_run_not_judged(tmp_path):
    """The second attempt (the 200 msg/s ladder rung) runs with a saturated worker: inconclusive, re-run."""
    runner, code, pools, _purges, lines = run_search(tmp_path, saturated_pools=(2,))
    assert code == 0, runner.errors
    result = runner.search_result
    reference = run_search(tmp_path / "reference")[0].search_result
    # the same answer as without the lagging attempt, one attempt more
    assert (result.sustainable_rate, result.last_pass, result.first_fail, result.probes_used) == (
        reference.sustainable_rate, reference.last_pass, reference.first_fail, reference.probes_used)
    assert len(pools) == result.probes_used + 1
    assert any("INCONCLUSIVE" in line for line in lines)
    events = read(tmp_path, runner, "events")
    details = [json.loads(d) for d in events[events.kind == "search_probe"].sort_values("phase")["detail"]]
    assert [d["inconclusive"] for d in details] == [False, True] + [False] * (len(details) - 2)
    assert details[1]["rate"] == details[2]["rate"] == 200 and details[1]["valid"] is False
    assert json.loads(events[events.kind == "search_result"]["detail"].iloc[0])["inconclusive_attempts"] == 1
