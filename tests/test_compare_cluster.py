"""Issue 24's known answer on a real 1-node local cluster (port slot 75): `sizing compare` finds a capacity change
made by construction, and does not find one where there is none.

A consumer-bound config: 4 consumers, one per queue, each taking `processing_ms` of simulated processing per message
with a prefetch that keeps every one busy, carry at most 4 x 1000 / processing_ms msg/s (the broker does thousands
on these cores: tests/test_loadgen_max_mode.py). Offered 1,000 msg/s for 8 steady seconds, the cluster carries its
consumers' bound, which the leaderboards step records as each repeat's top throughput within the (generous) SLO.
Three runs of 3 repeats each, on one cluster (queues purged between load runs), repeat-major like the DAG so that
drift over the test spreads over every run:
- `base`: 5 ms, a bound of 800 msg/s;
- `slower`: 5.5 ms, 727 msg/s: the true change is 5 / 5.5 - 1 = -9.09 %, known without measuring anything;
- `again`: 5 ms again: no change.
Independent of the statistics: the bound comes from the spec's arithmetic; the measured top of `base` must lie
within 5 % of it (as the capacity search's acceptance test asks of the search)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from app import cli
from loadgen.runner import Runner, RunOptions
from sizing.campaign import load_campaign
from spark_jobs.jobs import analysis
from tests.fixtures.lanes import sharing

pytestmark = [pytest.mark.cluster, pytest.mark.alone, pytest.mark.spark]

SLOT = 75
CONSUMERS = 4
FAST_MS, SLOW_MS = 5.0, 5.5
TRUE_CHANGE = FAST_MS / SLOW_MS - 1  # -9.09 %: the consumers' bound scales with 1 / processing_ms
# The bound is the model's: each message also costs the consumer a little besides its processing_ms, which runs put
# at 0.01-0.02 % of the rate (800.1 and 727.2-727.4 msg/s against 800 and 727.3), so the real change is known to
# about +-0.05 percentage points, wider than the interval's own half-width at 3 repeats (~0.03).
MODEL_ERROR = 0.0005
RUNS = {"base": FAST_MS, "slower": SLOW_MS, "again": FAST_MS}


def spec(processing_ms: float) -> dict:
    return {
        "name": "known-answer", "description": "A consumer-bound config at a capacity known by construction.",
        "deployment": "local", "catalog": "aws-us-east-1-2020", "repeats": 3,
        "target": {"rate": 500, "p99_latency_ms": 60_000},  # not offered: only the capacity is compared
        "workload": {
            "queues": {"count": CONSUMERS, "name_pattern": "known-{n}", "type": "classic", "durable": True},
            "message": {"size_bytes": 256, "persistent": False},
            "publishers": {"count": CONSUMERS, "confirms_in_flight": 200, "random_start_delay_s": 0.5},
            "consumers": {"count": CONSUMERS, "prefetch": 50, "multi_ack_every": 1, "processing_ms": processing_ms}},
        "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
        "scenarios": [{"name": "saturation", "warmup_s": 2, "steps": {"rates": [1000], "duration_s": 10}}],
    }


def show(capsys, *lines: str) -> None:
    """Print past capsys (which compare() reads): what `pytest -s` shows of the run."""
    with capsys.disabled():
        print(*lines, sep="\n")


def compare(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(["compare", "--campaign", "known-answer", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compare_finds_the_known_capacity_change_and_none_between_equal_runs(local_cluster_factory, s3, spark,
                                                                             tmp_path: Path, capsys) -> None:
    paths = {}
    for processing_ms in (FAST_MS, SLOW_MS):
        paths[processing_ms] = tmp_path / f"known-answer-{processing_ms:g}ms.yaml"
        paths[processing_ms].write_text(yaml.safe_dump(spec(processing_ms)))
    campaigns = {ms: load_campaign(path) for ms, path in paths.items()}
    config_id = campaigns[FAST_MS].clusters[0].config_id
    with sharing():  # building the cluster measures nothing
        cluster = local_cluster_factory(slot=SLOT, nodes=1).cluster
    started = time.monotonic()
    for repeat in (1, 2, 3):
        for run_id, processing_ms in RUNS.items():
            lines: list[str] = []
            runner = Runner(campaigns[processing_ms], config_id, "saturation", run_id, cluster, repeat=repeat,
                            options=RunOptions(workers=2, out_dir=tmp_path / "out", upload=True, sample_interval_s=2,
                                               node_interval_s=0, progress_interval_s=60),
                            s3=s3, echo=lines.append)
            assert runner.run() == 0, (run_id, repeat, runner.errors, lines[-5:])
    load_s = time.monotonic() - started
    with sharing():  # the analysis of what was measured, and the comparisons of its tables, measure nothing
        for processing_ms, run_ids in ((FAST_MS, ["base", "again"]), (SLOW_MS, ["slower"])):
            assert analysis.main(["--spec", str(paths[processing_ms]), "--campaign", "known-answer", "--config",
                                  config_id, *[arg for r in run_ids for arg in ("--run-id", r)]]) == 0
        analysis_s = time.monotonic() - started - load_s
        show(capsys, f"9 load runs in {load_s:.0f} s, analysis of 3 runs in {analysis_s:.0f} s")
        check_the_comparisons(capsys)


def check_the_comparisons(capsys) -> None:
    """`sizing compare` on the three stored runs: the known change found, none between equal runs."""
    # Different specs (processing_ms) are refused unless asked for, with exit code 2 and the way out.
    code, _, err = compare(capsys, "--base", "base", "--head", "slower")
    assert code == 2 and "--allow-spec-change" in err and "workload.consumers.processing_ms" in err

    code, table_out, _ = compare(capsys, "--base", "base", "--head", "slower", "--allow-spec-change")
    show(capsys, table_out)
    assert code == 1 and "spec differences (1), base -> head:" in table_out
    code, out, _ = compare(capsys, "--base", "base", "--head", "slower", "--allow-spec-change", "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["regressed"] is True
    assert result["spec_differences"] == ["workload.consumers.processing_ms: 5.0 -> 5.5"]
    top = next(c for c in result["changes"] if c["metric"] == "top_throughput")
    show(capsys, f"slower vs base: top throughput {top['base']:.1f} -> {top['head']:.1f} msg/s, change "
                 f"{top['change']:+.2%} [{top['change_low']:+.2%}, {top['change_high']:+.2%}] ({top['level']:.0%}, "
                 f"n = {top['n_base']} vs {top['n_head']}), true {TRUE_CHANGE:+.2%}: {top['verdict']}")
    assert abs(top["base"] - CONSUMERS * 1000 / FAST_MS) <= 0.05 * CONSUMERS * 1000 / FAST_MS  # the known bound
    assert top["verdict"] == "regressed" and (top["n_base"], top["n_head"]) == (3, 3)
    assert top["change_low"] - MODEL_ERROR <= TRUE_CHANGE <= top["change_high"] + MODEL_ERROR
    cost = next(c for c in result["changes"] if c["metric"] == "cost_per_1k_at_top")
    assert cost["verdict"] == "regressed"  # the same money buys less throughput

    code, out, _ = compare(capsys, "--base", "base", "--head", "again", "--format", "json")
    same = json.loads(out)
    verdicts = [(c["metric"], f"{c['change']:+.2%}", c["verdict"]) for c in same["changes"]]
    show(capsys, f"again vs base: {verdicts}")
    assert code == 0 and same["spec_differences"] == [] and not same["regressed"]
    assert all(c["verdict"] in ("unchanged", "inconclusive") for c in same["changes"]), same["changes"]
