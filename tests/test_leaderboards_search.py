"""Leaderboard ranks from capacity searches (pure driver-side code of spark_jobs.lib.leaderboards; no Spark session).
Known answers: hand-computed cost per 1000 msg/s per month and the ranks they imply."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizing.campaign import load_campaign
from sizing.planning.plan import plan_configs
from spark_jobs.lib.leaderboards import add_search_ranks, rank_configs

CAMPAIGN = load_campaign(Path(__file__).resolve().parents[1] / "campaigns" / "quorum-search-2020.yaml")


def capacity_row(config_id: str, mean: float | None) -> dict:
    return {"config_id": config_id, "scenario": "capacity-search", "sustainable_median": mean}


def test_configs_rank_by_sustainable_rate_and_cost_at_it_and_meeting_the_target_counts():
    plans = plan_configs(CAMPAIGN)[:3]
    a, b, c = (p.config_id for p in plans)
    cost = {p.config_id: p.monthly_cost for p in plans}
    target = CAMPAIGN.target.rate
    board = rank_configs({}, plans, "quorum", target)  # no ladder: nothing met the target yet
    assert not any(r["met_target"] for r in board)
    rows = [capacity_row(a, 2.0 * target), capacity_row(b, 0.5 * target), capacity_row(c, None)]
    ranked = {r["config_id"]: r for r in add_search_ranks(board, rows, plans)}
    assert ranked[a]["cost_per_1k_at_sustainable"] == pytest.approx(cost[a] / (2.0 * target / 1000))
    assert ranked[b]["cost_per_1k_at_sustainable"] == pytest.approx(cost[b] / (0.5 * target / 1000))
    assert (ranked[a]["sustainable_rank"], ranked[b]["sustainable_rank"], ranked[c]["sustainable_rank"]) == (1, 2, None)
    cheaper = a if ranked[a]["cost_per_1k_at_sustainable"] < ranked[b]["cost_per_1k_at_sustainable"] else b
    assert ranked[cheaper]["rank_at_sustainable"] == 1 and ranked[c]["rank_at_sustainable"] is None
    # only the config whose search sustained the target met it, priced at the target
    assert (ranked[a]["met_target"], ranked[b]["met_target"], ranked[c]["met_target"]) == (True, False, False)
    assert ranked[a]["cost_per_1k_at_target"] == pytest.approx(cost[a] / (target / 1000))
    assert ranked[a]["rank_at_target"] == 1 and ranked[b]["rank_at_target"] is None
    # the board is ordered by cost at the sustainable rate
    assert next(r["config_id"] for r in add_search_ranks(board, rows, plans)) == cheaper


def test_without_searches_the_board_is_unchanged_but_carries_the_columns():
    plans = plan_configs(CAMPAIGN)[:2]
    board = rank_configs({}, plans, "quorum", CAMPAIGN.target.rate)
    order = [r["config_id"] for r in board]
    out = add_search_ranks(board, [], plans)
    assert [r["config_id"] for r in out] == order
    assert all(r["sustainable_rate"] is None and r["rank_at_sustainable"] is None for r in out)


def test_a_search_bounded_by_a_probe_the_generator_fell_behind_in_says_its_rate_is_only_a_floor():
    """The search counts an attempt the generator fell behind in as a fail once its re-runs ran out (loadgen.search);
    that fail is evidence neither way (sizing.criteria.rules.conclusive). Known answer: a simulated broker that carries
    up to 5000 msg/s; with every probe valid the replay converges, with the first probe above it invalid the same probes
    replay to the same bracket, but the capacity row says generator_bound."""
    from sizing.criteria.search import CapacitySearch, ProbeResult, SearchSpec
    from spark_jobs.lib.leaderboards import GENERATOR_BOUND, capacity_rows

    spec = SearchSpec(start_rate=1000.0, upper_rate=16000.0, resolution=0.1, resolution_relative=True, warmup_s=1.0,
                      measure_s=5.0, drain_s=1.0, slo_p99_ms=1000.0)

    def probes(invalid_first_fail: bool) -> list[dict]:
        search, rows, failed = CapacitySearch(spec), [], False
        while (probe := search.next_probe()) is not None:
            carried = probe.rate if probe.rate <= 5000.0 else 5000.0
            valid = not (invalid_first_fail and not failed and probe.rate > 5000.0)
            failed = failed or probe.rate > 5000.0
            outcome = search.record(ProbeResult(probe, carried, carried, 0.0, 10.0, None, valid))
            rows.append({"campaign": "c", "config_id": "k", "scenario": "search", "run_id": "R", "repeat": 1,
                         "phase": probe.index + 1, "target_rate": probe.rate, "warmup_s": 1.0, "duration_s": 6.0,
                         "confirm_rate": carried, "consume_rate": carried, "backlog_slope": 0.0, "e2e_p99_ms": 10.0,
                         "e2e_p999_ms": None, "valid": valid, "probe_stage": probe.stage,
                         "probe_passed": outcome.passed, "probe_online_passed": outcome.passed,
                         "probe_inconclusive": False, "bottleneck": None})
        return rows

    clean = capacity_rows(probes(False), {"search": spec})[0]
    assert clean["status"] == "converged" and clean["last_pass"] <= 5000.0 < clean["first_fail"]
    bounded = capacity_rows(probes(True), {"search": spec})[0]
    assert bounded["status"] == GENERATOR_BOUND
    assert (bounded["sustainable_rate"], bounded["first_fail"]) == (clean["sustainable_rate"], clean["first_fail"])
