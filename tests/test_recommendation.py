"""The size recommendation (sizing.recommendation, pure): the cheapest config on the cost-at-target board that holds
every required adverse scenario, each judged. Known answers by construction: hand-made boards and judgements whose
recommendation is stated before it is computed; the report's headline names the same config (tests/test_report_build,
tests/test_seed_conclusions: seed 002's two survivors)."""

from __future__ import annotations

from sizing.recommendation import BoardEntry, recommended, standings
from tests.test_adverse import KILL, PEAK, SLOWDOWN, campaign

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
    says not judged (held None, sizing.adverse.judge) and the recommendation passes the config over, quoting why."""
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
