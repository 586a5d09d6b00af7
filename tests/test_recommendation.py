"""The size recommendation (sizing.judgement.recommendation, pure): the cheapest config on the cost-at-target board that
holds every required adverse scenario, each judged. Known answers by construction: hand-made boards and judgements whose
recommendation is stated before it is computed; the report's headline names the same config (tests/test_report_build,
tests/test_seed_conclusions: seed 002's two survivors)."""

from __future__ import annotations

import math

import pandas as pd

from sizing.campaign import parse_campaign
from sizing.contract import records
from sizing.judgement.recommendation import (
    BoardEntry,
    ConfigVerdict,
    from_tables,
    recommended,
    recommended_config,
    recommended_per_version,
    standings,
    table_rows,
    version_changes,
)
from tests.test_adverse import BASE, KILL, PEAK, SLOWDOWN, campaign

IDEAL = {"name": "ideal", "steps": {"rates": [500, 1000], "duration_s": 10}}

SIZING = campaign(IDEAL, KILL, SLOWDOWN, {**PEAK, "required": False})
MONTHLY = {"a": 100.0, "b": 200.0, "c": 300.0, "d": 50.0}
# Cost at target: a cheapest, then b, then c; d never met the target under ideal conditions.
BOARD = [BoardEntry("a", 1, 10.0), BoardEntry("b", 2, 20.0), BoardEntry("c", 3, 30.0)]


def held(**by_config: tuple[bool | None, bool | None, bool | None]) -> dict[tuple[str, str], bool]:
    """(kill, slowdown, peak) per config; None: the adverse table has no judgement."""
    out = {}
    for config, verdicts in by_config.items():
        for scenario, verdict in zip(("kill", "slowdown", "peak"), verdicts, strict=True):
            if verdict is not None:
                out[(config, scenario)] = verdict
    return out


def test_the_cheapest_config_that_holds_every_required_scenario_is_recommended() -> None:
    # a fails the kill; b holds the required two but not the optional peak; c holds everything; d holds all but is
    # off the board.
    judged = held(a=(False, True, True), b=(True, True, False), c=(True, True, True), d=(True, True, True))
    rows = standings(SIZING, MONTHLY, BOARD, judged, {"a": 0, "b": 2})
    assert [v.config_id for v in rows] == ["a", "b", "c", "d"]  # board order, then off the board by monthly cost
    best = recommended(rows)
    assert best is not None and best.config_id == "b" and best.cost_at_target == 20.0
    assert best.optional_failed == ("peak",) and best.adverse_passed == ("kill", "slowdown")
    assert best.invalid_phases == 2  # reported, not a veto: the analysis judged its phases
    by_id = {v.config_id: v for v in rows}
    assert by_id["a"].adverse_failed == ("kill",) and not by_id["a"].passes_all
    assert not by_id["d"].meets_ideal and by_id["d"].target_rank is None and not by_id["d"].passes_all


def test_a_required_scenario_without_a_judgement_is_no_pass() -> None:
    rows = standings(SIZING, MONTHLY, BOARD, held(a=(True, None, True), b=(True, True, None)), {})
    assert rows[0].adverse_unjudged == ("slowdown",) and not rows[0].passes_all
    assert recommended(rows).config_id == "b"  # its unjudged scenario is the optional one
    assert recommended(standings(SIZING, MONTHLY, BOARD, {}, {})) is None  # nothing judged: nothing recommended


def test_without_adverse_scenarios_the_cheapest_at_target_is_recommended_whatever_the_input_order() -> None:
    ideal_only = campaign(IDEAL)
    rows = standings(ideal_only, MONTHLY, list(reversed(BOARD)), {}, {})
    assert recommended(rows).config_id == "a" and recommended(list(reversed(rows))).config_id == "a"
    assert recommended(standings(ideal_only, MONTHLY, [], {}, {})) is None  # nobody met the target


def test_a_required_scenario_not_judged_for_invalid_phases_keeps_the_config_out_and_says_why() -> None:
    """Issue 32 item 0: the demo's n3 held broker-kill on its one phase, flagged loadgen_behind. Now the adverse table
    says not judged (held None, sizing.judgement.adverse.judge) and the recommendation passes the config over, quoting
    why."""
    why = ("not judged: no conclusive repeat of judged phase(s) rate-1000; 1 phase flagged invalid, evidence neither "
           "way: rate-1000 (run R1, repeat 1: loadgen_behind)")
    judged = {**held(a=(True, True, True), b=(True, True, True)), ("a", "kill"): None}
    rows = standings(SIZING, MONTHLY, BOARD, judged, {"a": 1}, {("a", "kill"): why})
    a = rows[0]
    assert (a.adverse_passed, a.adverse_failed, a.adverse_unjudged) == (("slowdown",), (), ("kill",))
    assert not a.passes_all and recommended(rows).config_id == "b"
    assert a.not_judged_text() == ("kill (no conclusive repeat of judged phase(s) rate-1000; 1 phase flagged invalid, "
                                   "evidence neither way: rate-1000 (run R1, repeat 1: loadgen_behind))")
    # a scenario with no row at all says that instead
    bare = standings(SIZING, MONTHLY, BOARD, held(a=(None, True, True)), {})[0]
    assert bare.not_judged_text() == "kill (no judgement in the adverse table)"


def test_the_table_rows_read_back_to_the_same_verdicts_and_mark_only_the_recommendation() -> None:
    """The `recommendation` table is the only place the report, compare and trend learn the answer: its rows must
    carry every verdict whole (a pandas round trip included: NaN for null, numpy scalars) and mark one config."""
    why = "not judged: no conclusive repeat of judged phase(s) rate-1000"
    judged = {**held(a=(True, True, True), b=(True, True, False), c=(False, True, True)), ("a", "kill"): None}
    rows = standings(SIZING, MONTHLY, BOARD, judged, {"a": 1}, {("a", "kill"): why})
    table = table_rows(rows)
    assert set(table[0]) == set(records.table_columns("recommendation")) - {"campaign", "run_id"}
    assert [r["config_id"] for r in table if r["recommended"]] == ["b"] == [recommended(rows).config_id]
    assert [r["standing"] for r in table] == [1, 2, 3, 4]
    assert table[0]["adverse_not_judged"] == "kill" and table[3]["cost_per_1k_at_target"] is None
    assert [ConfigVerdict.from_row(r) for r in table] == rows
    through_pandas = pd.DataFrame(table).to_dict("records")
    assert math.isnan(through_pandas[3]["cost_per_1k_at_target"])
    assert [ConfigVerdict.from_row(r) for r in through_pandas] == rows
    assert recommended_config(through_pandas) == "b" and recommended_config(table_rows(rows[:1])) is None


def test_from_tables_reads_the_leaderboard_adverse_and_phase_rows_as_the_analysis_writes_them() -> None:
    """The leaderboards step's input to the recommendation: a wide leaderboard row per config (off the cost-at-target
    board: null rank and cost), adverse rows with a null `held` for no judgement, phase rows' `valid` flags."""
    leaderboard = [{"config_id": c, "monthly_cost": m, "rank_at_target": None, "cost_per_1k_at_target": None}
                   for c, m in MONTHLY.items()]
    for entry in BOARD:
        leaderboard[list(MONTHLY).index(entry.config_id)].update(rank_at_target=entry.rank,
                                                                  cost_per_1k_at_target=entry.cost_at_target)
    adverse = [{"config_id": c, "scenario": s, "held": h, "reason": None if h else f"{s} failed"}
               for (c, s), h in held(a=(False, True, True), b=(True, True, True), c=(True, None, True)).items()]
    adverse.append({"config_id": "c", "scenario": "slowdown", "held": float("nan"), "reason": "not judged: few"})
    phases = [{"config_id": "b", "valid": False}, {"config_id": "b", "valid": True}, {"config_id": "a", "valid": None}]
    got = from_tables(SIZING, leaderboard, adverse, phases)
    judged = {(r["config_id"], r["scenario"]): (None if r["held"] != r["held"] else r["held"]) for r in adverse}
    want = standings(SIZING, MONTHLY, BOARD, judged, {"b": 1},
                     {(r["config_id"], r["scenario"]): r["reason"] for r in adverse if r["reason"]})
    assert got == want and recommended(got).config_id == "b"
    assert {v.config_id: v.invalid_phases for v in got} == {"a": 0, "b": 1, "c": 0, "d": 0}
    assert got[2].not_judged_text() == "slowdown (few)"


def test_a_campaign_over_two_rabbitmq_versions_recommends_for_each_and_names_what_the_version_changes() -> None:
    """Issue 33 item 4: the studies on 4.0 beside 3.10. Two shapes on each version; on 3.10 the small shape fails the
    kill and the large one is recommended, on 4.0 the small one holds and is recommended (cheaper), and the large one
    is not judged on 4.0. Known answer by construction: each version's pick and the three conclusions that differ."""
    shapes = [{"nodes": n, "instance_type": "c5.2xlarge", "volume": "gp2", "rabbitmq_version": v}
              for v in ("3.10", "4.0") for n in (1, 3)]
    versions = parse_campaign({**BASE, "clusters": {"list": shapes}, "scenarios": [IDEAL, KILL]})
    ids = [shape.config_id for shape in versions.clusters]
    small_3, large_3, small_4, large_4 = ids
    assert small_3 == "n1-c5.2xlarge-gp2-rmq3.10" and large_4 == "n3-c5.2xlarge-gp2-rmq4.0"
    monthly = dict(zip(ids, (100.0, 300.0, 100.0, 300.0), strict=True))
    board = [BoardEntry(c, rank, cost) for rank, (c, cost) in enumerate(
        zip((small_3, small_4, large_3, large_4), (10.0, 11.0, 30.0, 31.0), strict=True), start=1)]
    judged = {(small_3, "kill"): False, (large_3, "kill"): True, (small_4, "kill"): True}
    rows = standings(versions, monthly, board, judged, {})
    assert {v.config_id: (v.shape_id, v.rabbitmq_version) for v in rows}[small_4] == ("n1-c5.2xlarge-gp2", "4.0")
    picks = recommended_per_version(rows)
    assert {version: best.config_id for version, best in picks.items()} == {"3.10": large_3, "4.0": small_4}
    table = table_rows(rows)
    assert sorted(r["config_id"] for r in table if r["recommended"]) == sorted([large_3, small_4])
    assert recommended_config(table) == f"{small_4}, {large_3}"  # in standing order
    assert [ConfigVerdict.from_row(r) for r in table] == rows
    changes = [c.words() for c in version_changes(rows)]
    assert changes == ["n1-c5.2xlarge-gp2: recommended: no on 3.10, yes on 4.0",
                       "n1-c5.2xlarge-gp2: holds kill: no on 3.10, yes on 4.0",
                       "n3-c5.2xlarge-gp2: recommended: yes on 3.10, no on 4.0",
                       "n3-c5.2xlarge-gp2: holds kill: yes on 3.10, not judged on 4.0"]
    # one version: one recommendation, and nothing changes with the version
    single = standings(SIZING, MONTHLY, BOARD, held(a=(True, True, True)), {})
    assert list(recommended_per_version(single)) == [None] and version_changes(single) == []
