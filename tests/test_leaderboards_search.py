"""Leaderboard ranks from capacity searches (pure driver-side code of spark_jobs.lib.leaderboards; no Spark session).
Known answers: hand-computed cost per 1000 msg/s per month and the ranks they imply."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizing.plan import plan_configs
from sizing.spec import load_campaign
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
