"""Adverse scenarios judged by their own criterion (sizing.judgement.adverse, pure): per-second figures on series whose
answer is known by construction, the drain composed from phases, and the verdict of each kind of scenario."""

from __future__ import annotations

import numpy as np
import pytest

from sizing.campaign import parse_campaign
from sizing.criteria import rules
from sizing.documents.fields import SpecError
from sizing.judgement import adverse

BASE = {
    "name": "adverse-unit", "deployment": "local", "catalog": "aws-us-east-1-2020",
    "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {"queues": {"count": 2, "type": "classic"}, "message": {"size_bytes": 256},
                 "publishers": {"count": 2, "confirms_in_flight": 100}, "consumers": {"count": 2, "prefetch": 100}},
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
}
SLOWDOWN = {"name": "slowdown", "warmup_s": 5, "publish_rate": [{"hold": 400, "for_s": 60}],
            "consumer_processing_ms": [{"hold": 1, "for_s": 20}, {"ramp": [1, 8], "for_s": 20},
                                       {"hold": 1, "for_s": 20}]}
PEAK = {"name": "peak", "warmup_s": 5, "publish_rate": [{"hold": 400, "for_s": 20}, {"ramp": [400, 900], "for_s": 20},
                                                        {"hold": 400, "for_s": 20}]}
KILL = {"name": "kill", "warmup_s": 2, "steps": {"rates": [500, 1000, 2000], "duration_s": 20},
        "faults": [{"kind": "kill_node", "at": 0.5, "target": {"node": 1}, "heal_after_s": 5}]}


def campaign(*scenarios: dict):
    return parse_campaign({**BASE, "scenarios": list(scenarios)})


def test_scenario_kinds_follow_the_study_criterion() -> None:
    c = campaign(SLOWDOWN, PEAK, KILL, {"name": "ideal", "steps": {"rates": [500], "duration_s": 10}})
    assert [rules.scenario_kind(s) for s in c.scenarios] == [rules.BACKLOG_ADVERSE, rules.BACKLOG_ADVERSE,
                                                             rules.FAULT_ADVERSE, rules.CAPACITY]


def test_a_tolerance_is_a_backlog_scenario_field_only() -> None:
    assert campaign({**PEAK, "publish_tolerance_s": 30}).scenarios[0].publish_tolerance_s == 30
    with pytest.raises(SpecError, match=r"scenarios\[0\]\.publish_tolerance_s: applies to backlog scenarios only"):
        campaign({**KILL, "publish_tolerance_s": 30})


def test_reduced_seconds_are_counted_over_a_five_second_window() -> None:
    offered = np.full(40, 100.0)
    accepted = offered.copy()
    accepted[10] = 40.0  # one slow second: the 5 s windows holding it carry 440 of 500 (88 %)
    accepted[11] = 160.0  # and a catch-up second right after: from second 11 on the windows hold 500 of 500 again
    assert np.flatnonzero(adverse.reduced_publish(offered, accepted)).tolist() == [10]
    # ten seconds at 90 %: a window is reduced once it holds two of them (480 of 500; one gives exactly 98 %) and
    # until it holds only one: seconds 21 .. 32, the dip as a 5 s mean sees it
    accepted[20:30] = 90.0
    assert np.flatnonzero(adverse.reduced_publish(offered, accepted)).tolist() == [10, *range(21, 33)]
    # a 1 % shortfall is within MATCH_FRACTION: not reduced
    assert not adverse.reduced_publish(offered, offered * 0.99).any()
    # nothing offered, nothing reduced
    assert not adverse.reduced_publish(np.zeros(10), np.zeros(10)).any()


def test_a_phase_backlog_knows_its_peak_end_and_last_second_above_the_level() -> None:
    seconds = np.arange(100, 110)
    backlog = np.array([0, 50, 300, 900, 700, 400, 200, 90, 10, 5])
    figures = adverse.phase_backlog(seconds, backlog, level=100.0)
    assert figures == adverse.PhaseBacklog(peak=900, peak_s=103.0, end=5, last_above_s=106.0)
    assert adverse.phase_backlog(seconds, np.zeros(10, dtype=int), 100.0).last_above_s is None


def phase_row(phase: int, peak: int, peak_s: float, end: int, last_above: float | None, level: float = 100.0) -> dict:
    return {"phase": phase, "backlog_max_client": peak, "backlog_peak_s": peak_s, "backlog_end_client": end,
            "backlog_last_above_s": last_above, "drain_level_msgs": level}


def test_a_runs_drain_composes_from_its_phases() -> None:
    # backlog builds in phase 2 (peak 5,000 at second 35), drains through phase 3, under the level from second 52 on
    phases = [phase_row(1, 40, 3.0, 20, None), phase_row(2, 5000, 35.0, 4200, 39.0),
              phase_row(3, 4200, 40.0, 30, 51.0), phase_row(4, 60, 60.0, 10, None)]
    assert adverse.run_drain(phases) == adverse.Drain(peak=5000, drained=True, drain_s=17.0)  # 51 + 1 - 35
    assert adverse.run_drain(list(reversed(phases))) == adverse.Drain(5000, True, 17.0)  # in phase order, always
    not_drained = [*phases[:3], phase_row(4, 4200, 60.0, 3000, 79.0)]
    assert adverse.run_drain(not_drained) == adverse.Drain(5000, False, None)
    never_above = [phase_row(1, 40, 3.0, 20, None), phase_row(2, 60, 30.0, 10, None)]
    assert adverse.run_drain(never_above) == adverse.Drain(60, True, 0.0)


def backlog_rows(repeat: int, reduced: list[float], end: int = 10, lost: int = 0, blocked: float = 0.0) -> list[dict]:
    rows = []
    for i, r in enumerate(reduced, start=1):
        last = i == len(reduced)
        rows.append({"run_id": "r", "repeat": repeat, "phase": i, "target_rate": 400.0, "matched_target": False,
                     "lost": lost if last else 0, "duplicates": 0, "confirm_rate": 400.0, "e2e_p99_ms": 4000.0,
                     "reduced_publish_s": r, "publishers_blocked_s": blocked, "backlog_max": 20_000 * i,
                     "broker_mem_max_fraction": 0.2 * i,
                     **phase_row(i, 20_000 if i == 2 else 100, 30.0 if i == 2 else 20.0 * i, end if last else 900,
                                 45.0 if i <= 2 else None, level=400.0)})
    return rows


def test_a_backlog_scenario_holds_when_publishers_carried_on_and_the_backlog_drained() -> None:
    peak = campaign(PEAK).scenarios[0]
    verdict = adverse.judge(peak, backlog_rows(1, [0, 0, 0]) + backlog_rows(2, [0, 0, 0]), 1000.0)
    # every phase missed its rate/SLO (matched_target false: messages waited in the backlog): not what is judged
    assert (verdict["criterion"], verdict["held"], verdict["reason"]) == ("backlog", True, None)
    assert (verdict["repeats"], verdict["drained"], verdict["drain_s"]) == (2, True, 16.0)  # 45 + 1 - 30
    assert verdict["peak_backlog_msgs"] == 60_000 and verdict["peak_memory_share"] == pytest.approx(0.6)
    assert verdict["max_e2e_p99_ms"] == 4000.0  # reported, not judged


def test_a_backlog_scenario_fails_on_reduced_publishing_loss_or_no_drain_and_says_why() -> None:
    peak = campaign(PEAK).scenarios[0]
    reduced = adverse.judge(peak, backlog_rows(1, [0, 12, 3]) + backlog_rows(2, [0, 4, 0]), 1000.0)
    assert (reduced["held"], reduced["reduced_publish_s"]) == (False, 15.0)  # the worst repeat
    assert reduced["reason"] == "publish rate reduced for 15 s (tolerance 0 s)"
    tolerant = campaign({**PEAK, "publish_tolerance_s": 20}).scenarios[0]
    assert adverse.judge(tolerant, backlog_rows(1, [0, 12, 3]), 1000.0)["held"] is True
    stuck = adverse.judge(peak, backlog_rows(1, [0, 0, 0], end=5_000, lost=3), 1000.0)
    assert (stuck["held"], stuck["drained"], stuck["drain_s"], stuck["lost"]) == (False, False, None, 3)
    assert stuck["reason"] == "3 confirmed messages lost; the backlog had not drained by the end"
    blocked = adverse.judge(peak, backlog_rows(1, [0, 0, 0], blocked=7.5), 1000.0)
    assert blocked["publishers_blocked_s"] == 22.5  # summed over the run's phases, reported beside the verdict


def test_a_fault_scenario_on_steps_is_judged_up_to_the_campaign_target() -> None:
    kill = campaign(KILL).scenarios[0]
    rows = [{"run_id": "r", "repeat": 1, "phase": i, "target_rate": rate, "matched_target": ok, "lost": 0,
             "duplicates": 0, "confirm_rate": rate * (1 if ok else 0.5), "e2e_p99_ms": 30.0,
             "time_to_recover_s": 4.0 * i, "recovered": True, "worst_dip_ratio": 0.5, "unavailable_s": 2.0}
            for i, (rate, ok) in enumerate([(500.0, True), (1000.0, True), (2000.0, False)], start=1)]
    verdict = adverse.judge(kill, rows, campaign_target_rate=1000.0)
    # the 2000 msg/s step lies above the target: it is not judged, so its miss does not count
    assert (verdict["criterion"], verdict["held"], verdict["phases_judged"], verdict["phases_held"]) == (
        "fault", True, 2, 2)
    assert verdict["max_time_to_recover_s"] == 8.0 and verdict["unavailable_s"] == 4.0
    assert adverse.judge(kill, rows, campaign_target_rate=2000.0)["held"] is False
    lost = [{**r, "lost": 5} if r["phase"] == 1 else r for r in rows]
    failed = adverse.judge(kill, lost, campaign_target_rate=1000.0)
    assert failed["held"] is False
    assert failed["reason"] == "1 of 2 judged phases missed their target rate or the SLO; 5 confirmed messages lost"


def kill_row(phase: int, rate: float, ok: bool, repeat: int = 1, valid: bool = True, lost: int = 0) -> dict:
    return {"run_id": "r", "repeat": repeat, "phase": phase, "phase_name": f"rate-{rate:g}", "target_rate": rate,
            "valid": valid, "invalid_reason": None if valid else "loadgen_behind", "matched_target": ok,
            "lost": lost, "duplicates": 0, "confirm_rate": rate * (1 if ok else 0.5), "e2e_p99_ms": 30.0,
            "time_to_recover_s": 4.0, "recovered": True, "worst_dip_ratio": 0.5, "unavailable_s": 2.0}


def test_a_fault_phase_the_generator_fell_behind_in_is_evidence_neither_way() -> None:
    """Known answers (issue 32 item 0: the demo's broker-kill held on its one phase, flagged loadgen_behind)."""
    kill = campaign({**KILL, "steps": {"rates": [1000], "duration_s": 30}}).scenarios[0]
    # the only judged phase is invalid: matched or missed, the scenario is not judged, and the reason names it
    for ok in (True, False):
        verdict = adverse.judge(kill, [kill_row(1, 1000.0, ok, valid=False)], 1000.0)
        assert (verdict["held"], verdict["phases_judged"], verdict["phases_held"]) == (None, 0, 0)
        assert verdict["reason"] == ("not judged: no conclusive repeat of judged phase(s) rate-1000; 1 phase flagged "
                                     "invalid, evidence neither way: rate-1000 (run r, repeat 1: loadgen_behind)")
    # a second, valid repeat of that phase remains: judged on it alone, either way
    held = adverse.judge(kill, [kill_row(1, 1000.0, False, valid=False), kill_row(1, 1000.0, True, repeat=2)],
                         1000.0)
    assert (held["held"], held["phases_judged"], held["phases_held"]) == (True, 1, 1)
    assert held["worst_confirm_ratio"] == 1.0  # the invalid repeat's 0.5 is not a figure of the verdict
    assert held["reason"].startswith("1 phase flagged invalid")  # held, and says what did not count
    missed = adverse.judge(kill, [kill_row(1, 1000.0, True, valid=False), kill_row(1, 1000.0, False, repeat=2)],
                           1000.0)
    assert (missed["held"], missed["phases_judged"], missed["phases_held"]) == (False, 1, 0)
    assert missed["reason"].startswith("1 of 1 judged phases missed their target rate or the SLO; 1 phase flagged")


def test_a_fault_verdict_names_every_node_the_broker_saw_down_and_the_slowest_return_to_a_whole_cluster() -> None:
    """Known answers on the broker's own figures (phase_summary.broker_nodes_down, broker_whole_after_heal_s):
    the union of the nodes seen down over the judged phases and repeats, the worst time back to a whole cluster,
    counted in a phase the generator fell behind in too (the broker's figures are its own)."""
    kill = campaign({**KILL, "steps": {"rates": [1000], "duration_s": 30}}).scenarios[0]
    rows = [{**kill_row(1, 1000.0, True), "broker_nodes_down": "rabbit-3", "broker_whole_after_heal_s": 4.0},
            {**kill_row(1, 1000.0, True, repeat=2, valid=False), "broker_nodes_down": "rabbit-1,rabbit-3",
             "broker_whole_after_heal_s": 9.0},
            {**kill_row(1, 1000.0, True, repeat=3), "broker_nodes_down": None, "broker_whole_after_heal_s": None}]
    verdict = adverse.judge(kill, rows, 1000.0)
    assert (verdict["nodes_down"], verdict["max_whole_after_heal_s"]) == ("rabbit-1,rabbit-3", 9.0)
    assert (adverse.judge(kill, rows[2:], 1000.0)["nodes_down"],
            adverse.judge(kill, rows[2:], 1000.0)["max_whole_after_heal_s"]) == (None, None)


def test_a_fault_scenario_needs_a_conclusive_repeat_of_every_judged_phase_but_fails_on_any_conclusive_miss() -> None:
    kill = campaign(KILL).scenarios[0]  # 500, 1000 (judged: at most the 1000 msg/s target) and 2000 msg/s steps
    rows = [kill_row(1, 500.0, True), kill_row(2, 1000.0, True, valid=False), kill_row(3, 2000.0, False)]
    gap = adverse.judge(kill, rows, 1000.0)
    assert (gap["held"], gap["phases_judged"]) == (None, 1)  # the 1000 msg/s step has no conclusive repeat
    assert gap["reason"].startswith("not judged: no conclusive repeat of judged phase(s) rate-1000;")
    # an invalid step above the target is not judged anyway: it leaves the verdict alone
    above = adverse.judge(kill, [kill_row(1, 500.0, True), kill_row(2, 1000.0, True),
                                 kill_row(3, 2000.0, True, valid=False)], 1000.0)
    assert (above["held"], above["phases_judged"]) == (True, 2)
    # a conclusive miss (here: confirmed messages lost) fails it, whatever else was invalid
    lost = adverse.judge(kill, [kill_row(1, 500.0, True, lost=5), *rows[1:]], 1000.0)
    assert lost["held"] is False and "5 confirmed messages lost" in lost["reason"]


def test_a_backlog_scenario_counts_only_runs_whose_every_phase_is_conclusive() -> None:
    peak = campaign(PEAK).scenarios[0]

    def invalid(rows: list[dict], phase: int) -> list[dict]:
        return [{**r, "valid": False, "invalid_reason": "loadgen_cpu_saturated"} if r["phase"] == phase else r
                for r in rows]

    # repeat 1 reduced publishing for 15 s while its generator was saturated: not counted; repeat 2 held
    verdict = adverse.judge(peak, invalid(backlog_rows(1, [0, 12, 3]), 2) + backlog_rows(2, [0, 0, 0]), 1000.0)
    assert (verdict["held"], verdict["reduced_publish_s"]) == (True, 0.0)
    assert verdict["reason"] == ("1 phase flagged invalid, evidence neither way: phase 2 (run r, repeat 1: "
                                 "loadgen_cpu_saturated)")
    alone = adverse.judge(peak, invalid(backlog_rows(1, [0, 12, 3]), 2), 1000.0)
    assert alone["held"] is None and alone["reason"].startswith("not judged: no run with every phase conclusive;")


def test_the_reports_criterion_text_words_the_thresholds_of_sizing_rules(monkeypatch) -> None:
    """The words follow the rules: with other thresholds the text changes with them and no old figure remains."""
    from app.report.sections import adverse as section

    c = campaign(SLOWDOWN, KILL)
    backlog, fault = (section.criterion_text(s, 1000) for s in c.scenarios)
    assert f"below {rules.MATCH_FRACTION * 100:g} % of the offered rate" in backlog
    assert f"whose {rules.REDUCED_PUBLISH_WINDOW_S:g} s confirm rate" in backlog
    assert f"back under {rules.DRAINED_BACKLOG_S:g} s of the final offered rate" in backlog
    assert f"at least {rules.MATCH_FRACTION * 100:g} % of it" in fault
    for name, value in (("MATCH_FRACTION", 0.9), ("REDUCED_PUBLISH_WINDOW_S", 7), ("DRAINED_BACKLOG_S", 3.0)):
        monkeypatch.setattr(section, name, value)
    backlog, fault = (section.criterion_text(s, 1000) for s in c.scenarios)
    assert "below 90 %" in backlog and "whose 7 s" in backlog and "under 3 s" in backlog and "least 90 %" in fault
    assert not any(old in text for old in ("98", "5 s", "1 s") for text in (backlog, fault))


def test_publishers_the_broker_blocked_fail_a_backlog_scenario_even_in_a_run_the_generator_fell_behind_in():
    """Known answers (issue 32 item 0): connection.blocked is the broker's own figure, so blocking beyond the
    tolerance fails the scenario whatever the generator's lag; the lag never makes a phase evidence that it held."""
    peak = campaign(PEAK).scenarios[0]

    def lagging(rows: list[dict]) -> list[dict]:
        return [{**r, "valid": False, "invalid_reason": "loadgen_behind"} if r["phase"] == 2 else r for r in rows]

    blocked = adverse.judge(peak, lagging(backlog_rows(1, [0, 0, 0], blocked=4.0)), 1000.0)
    assert (blocked["held"], blocked["publishers_blocked_s"]) == (False, 12.0)  # 3 phases x 4 s, the broker's count
    assert blocked["reason"] == ("the broker blocked publishers for 12.0 s (tolerance 0 s; its own connection.blocked, "
                                 "evidence whatever the generator did); 1 phase flagged invalid, evidence neither "
                                 "way: phase 2 (run r, repeat 1: loadgen_behind)")
    # the same lag without blocking, or blocking within the tolerance: not judged either way
    assert adverse.judge(peak, lagging(backlog_rows(1, [0, 0, 0])), 1000.0)["held"] is None
    tolerant = campaign({**PEAK, "publish_tolerance_s": 20}).scenarios[0]
    assert adverse.judge(tolerant, lagging(backlog_rows(1, [0, 0, 0], blocked=4.0)), 1000.0)["held"] is None
    # a conclusive repeat that held does not outweigh the broker blocking another repeat's publishers
    mixed = adverse.judge(peak, lagging(backlog_rows(1, [0, 0, 0], blocked=4.0)) + backlog_rows(2, [0, 0, 0]),
                          1000.0)
    assert mixed["held"] is False and mixed["reason"].startswith("the broker blocked publishers for 12.0 s")
    # a conclusive failure keeps its own reason
    failed = adverse.judge(peak, lagging(backlog_rows(1, [0, 0, 0], blocked=4.0)) + backlog_rows(2, [0, 9, 0]),
                           1000.0)
    assert failed["held"] is False and failed["reason"].startswith("publish rate reduced for 9 s")
    # and no phase row is made conclusive by blocking (the leaderboards, findings and repeats read conclusive_row)
    assert not rules.conclusive_row({"valid": False, "invalid_reason": "loadgen_behind", "publishers_blocked_s": 12.0})
    assert rules.conclusive_row({"valid": True}) and rules.conclusive_row({})
