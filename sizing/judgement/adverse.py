"""Adverse scenarios judged by their study's own criterion (seed 002), pure: numpy and plain rows.

Two criteria (sizing.criteria.rules.scenario_kind; thresholds and predicates live in sizing.criteria.rules):

- fault scenarios (kill, stop, rolling restart, alarms): the judged phases hold the target
  (sizing.criteria.rules.held_target: rates and SLO matched, nothing confirmed lost); the time to recover is reported
  (sizing/criteria/recovery.py).
- backlog scenarios (consumer slowdown, publish peak): "the publishing should continue unaffected" while the
  backlog absorbs the difference. Measured per second and held by sizing.criteria.rules.backlog_held:
  `reduced_publish_s` (seconds after warm-up whose 5 s confirm rate fell below 98 % of the offered rate) within the
  scenario's `publish_tolerance_s`, nothing confirmed lost, and the backlog drained before the end. Reported beside
  it: the peak backlog, memory against its high watermark, seconds a memory or disk alarm blocked publishers, the
  seconds the backlog took to drain, and end-to-end latency (not judged: messages wait in a backlog by design).

Two layers: `phase_backlog` and `reduced_publish` turn one run's per-second series into per-phase figures (the
analysis' phase_summary columns); `judge` turns a config's phase_summary rows of one scenario, every repeat, into
its `adverse` table row. Both layers compose: a run's drain is found from its phases' figures alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sizing.campaign import Scenario
from sizing.criteria import rules
from sizing.criteria.stats import number


# ----------------------------------------------------------------------------- per second -> per phase
def reduced_publish(offered: np.ndarray, accepted: np.ndarray,
                    window_s: int = rules.REDUCED_PUBLISH_WINDOW_S) -> np.ndarray:
    """Per second of a dense series (index = second): whether the publish rate was reduced in the window of
    `window_s` seconds ending with it (sizing.criteria.rules.publish_reduced on the window's sums). A second whose
    window offered nothing is not reduced."""
    offered = np.asarray(offered, dtype=float)
    accepted = np.asarray(accepted, dtype=float)
    kernel = np.ones(window_s)
    offered_w = np.convolve(offered, kernel)[: len(offered)]
    accepted_w = np.convolve(accepted, kernel)[: len(accepted)]
    return (offered_w > 0) & rules.publish_reduced(accepted_w, offered_w)


def drain_level(final_offered_rate: float) -> float:
    """The backlog, in messages, at or under which a run counts as drained (sizing.criteria.rules.DRAINED_BACKLOG_S of
    its final offered rate; at least one message)."""
    return max(rules.DRAINED_BACKLOG_S * max(final_offered_rate, 0.0), 1.0)


@dataclass(frozen=True)
class PhaseBacklog:
    """One phase's client backlog figures (phase_summary columns)."""

    peak: int  # backlog_max_client
    peak_s: float  # the second it was reached
    end: int  # the backlog at the phase's last second
    last_above_s: float | None  # the last second of the phase above the run's drain level (None: never)


def phase_backlog(seconds: np.ndarray, backlog: np.ndarray, level: float) -> PhaseBacklog:
    """Backlog figures of one phase from its seconds (ascending) and the backlog at each."""
    backlog = np.asarray(backlog)
    seconds = np.asarray(seconds)
    at = int(np.argmax(backlog))
    above = np.flatnonzero(backlog > level)
    return PhaseBacklog(int(backlog[at]), float(seconds[at]), int(backlog[-1]),
                        float(seconds[above[-1]]) if len(above) else None)


@dataclass(frozen=True)
class Drain:
    """A run's backlog over the whole scenario, from its phases' PhaseBacklog figures."""

    peak: int
    drained: bool  # the backlog was at or under the drain level at the run's last second
    drain_s: float | None  # seconds from the peak until it stayed under the level (0: never above; None: not drained)


def run_drain(phases: Sequence[Mapping[str, Any]]) -> Drain:
    """Compose a run's drain from its phase rows (phase_summary: backlog_max_client, backlog_peak_s,
    backlog_end_client, backlog_last_above_s, drain_level_msgs), in phase order: the backlog drained when the last
    phase ended at or under the level, and took from the highest peak to one second after the last second above."""
    rows = sorted(phases, key=lambda r: r["phase"])
    if not rows or any(r.get("backlog_max_client") is None for r in rows):
        return Drain(0, False, None)
    top = max(rows, key=lambda r: r["backlog_max_client"])
    last = rows[-1]
    drained = last.get("backlog_end_client") is not None and last["backlog_end_client"] <= last["drain_level_msgs"]
    above = [r["backlog_last_above_s"] for r in rows if _present(r.get("backlog_last_above_s"))]
    if not drained:
        return Drain(int(top["backlog_max_client"]), False, None)
    if not above:
        return Drain(int(top["backlog_max_client"]), True, 0.0)
    return Drain(int(top["backlog_max_client"]), True, max(0.0, max(above) + 1 - float(top["backlog_peak_s"])))


def held_value(value: Any) -> bool | None:
    """The adverse table's `held` as read back: None (or NaN from a frame) is no judgement."""
    return None if value is None or value != value else bool(value)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _number(value: Any, missing: float = 0.0) -> float:
    figure = number(value)
    return missing if figure is None else figure


# ------------------------------------------------------------------------------- per scenario -> verdict
# What `judge` reads of each phase_summary row.
VERDICT_INPUTS = ("run_id", "repeat", "phase", "phase_name", "target_rate", "valid", "invalid_reason",
                  "matched_target", "lost", "duplicates", "confirm_rate", "e2e_p99_ms", "worst_dip_ratio",
                  "time_to_recover_s", "recovered", "unavailable_s", "reduced_publish_s", "publishers_blocked_s",
                  "backlog_max", "backlog_max_client", "backlog_peak_s", "backlog_end_client", "backlog_last_above_s",
                  "drain_level_msgs", "broker_mem_max_fraction", "broker_nodes_down", "broker_whole_after_heal_s")


def on_steps(scenario: Scenario) -> bool:
    return scenario.step_rates is not None and scenario.publish_rate is None


def judged(scenario: Scenario, row: Mapping[str, Any], campaign_target_rate: float) -> bool:
    """A fault scenario on steps (a broker killed at every intensity) is judged at the intensities up to the
    campaign target; a profile, and every backlog scenario, on every phase."""
    if rules.scenario_kind(scenario) == rules.FAULT_ADVERSE and on_steps(scenario):
        return _number(row.get("target_rate")) <= campaign_target_rate
    return True


def judge(scenario: Scenario, rows: Sequence[Mapping[str, Any]], campaign_target_rate: float) -> dict[str, Any]:
    """One `adverse` table row (sizing.contract.records.ADVERSE, without campaign and config) from a config's
    phase_summary rows of `scenario` (its judged workload group), every run and repeat. Figures are the worst repeat's.

    Only conclusive phases are evidence (sizing.criteria.rules.conclusive: the generator kept up). A fault scenario
    fails on any conclusive judged phase that missed; it holds only when every judged phase (by its number) has a
    conclusive repeat and all of those held; otherwise it is not judged (`held` None), the reason naming the invalid
    phases. A backlog scenario's figures compose over a run's phases, so only runs whose every phase is conclusive
    count; with none, it is not judged, unless the broker itself blocked publishers beyond the tolerance in a run that
    does not count (sizing.criteria.rules.broker_blocked_publishers): that fails it, as a conclusive miss does."""
    kind = rules.scenario_kind(scenario)
    if kind not in rules.ADVERSE_KINDS:
        raise ValueError(f"scenario {scenario.name!r} is not adverse ({kind})")
    runs: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        runs.setdefault((str(row["run_id"]), int(row["repeat"])), []).append(row)
    in_scope = [r for r in rows if judged(scenario, r, campaign_target_rate)]
    judged_rows = [r for r in in_scope if rules.conclusive_row(r)]
    invalid = [r for r in rows if not rules.conclusive_row(r)]
    held_phases = [bool(rules.held_target(bool(r.get("matched_target")), _number(r.get("lost")))) for r in judged_rows]
    # A backlog verdict composes over a run's phases: only runs whose every phase is conclusive count. A fault
    # scenario's per-run figures are reported, not judged.
    counted = runs if kind == rules.FAULT_ADVERSE else {
        key: phases for key, phases in runs.items() if all(rules.conclusive_row(r) for r in phases)}
    # The seconds the broker blocked publishers are its own figure (connection.blocked), counted in every run.
    blocked_by_run = {key: sum(_number(r.get("publishers_blocked_s")) for r in phases
                               if judged(scenario, r, campaign_target_rate)) for key, phases in runs.items()}
    per_run = []
    for key, phases in counted.items():
        steady = [r for r in phases if judged(scenario, r, campaign_target_rate)]
        per_run.append({"reduced": sum(_number(r.get("reduced_publish_s")) for r in steady),
                        "blocked": blocked_by_run[key],
                        "lost": sum(_number(r.get("lost")) for r in phases),
                        "drain": run_drain(phases)})
    tolerance = scenario.publish_tolerance_s
    # A run the generator fell behind in still shows a failure the broker caused on its own.
    broker_blocked = max((blocked for key, blocked in blocked_by_run.items() if key not in counted
                          and rules.broker_blocked_publishers(blocked, tolerance)), default=None)
    reduced = max((r["reduced"] for r in per_run), default=0.0)
    drained = bool(per_run) and all(r["drain"].drained for r in per_run)
    counted_lost = int(sum(r["lost"] for r in per_run))
    counted_held = bool(per_run) and bool(rules.backlog_held(reduced, tolerance, counted_lost, drained))
    lost = int(sum(_number(r.get("lost")) for r in rows))
    held: bool | None
    if kind == rules.FAULT_ADVERSE:
        uncovered = sorted({int(r["phase"]) for r in in_scope} - {int(r["phase"]) for r in judged_rows})
        if not in_scope:
            held, reason = False, "no judged phase"
        elif not all(held_phases):  # a conclusive miss is evidence, whatever else is invalid
            held, reason = False, _fault_reason(judged_rows, held_phases, invalid)
        elif uncovered:
            held = None
            reason = _not_judged(invalid, "no conclusive repeat of judged phase(s) "
                                          + ", ".join(_phase_name(in_scope, n) for n in uncovered))
        else:
            held, reason = True, _invalid_note(invalid) if invalid else None
    elif broker_blocked is not None and (counted_held or not per_run):  # a conclusive failure keeps its reason
        held = False
        reason = (f"the broker blocked publishers for {broker_blocked:,.1f} s (tolerance {tolerance:,.0f} s; its own "
                  f"connection.blocked, evidence whatever the generator did); {_invalid_note(invalid)}")
    elif runs and not per_run:
        held, reason = None, _not_judged(invalid, "no run with every phase conclusive")
    else:
        held = counted_held
        reason = None if held else _backlog_reason(reduced, tolerance, counted_lost, drained, bool(per_run))
        if invalid:  # held or not, say which phases did not count
            reason = "; ".join(part for part in (reason, _invalid_note(invalid)) if part)
    drain_times = [r["drain"].drain_s for r in per_run]

    def worst(column: str, pick=max) -> float | None:
        values = [_number(r.get(column)) for r in judged_rows if _present(r.get(column))]
        return pick(values) if values else None

    confirm_ratios = [_number(r.get("confirm_rate")) / _number(r.get("target_rate")) for r in judged_rows
                      if _present(r.get("confirm_rate")) and _number(r.get("target_rate")) > 0]
    return {"scenario": scenario.name, "criterion": kind, "repeats": len(runs),
            "phases_judged": len(judged_rows), "phases_held": sum(held_phases), "held": held, "reason": reason,
            "worst_dip_ratio": worst("worst_dip_ratio", min),
            "worst_confirm_ratio": min(confirm_ratios) if confirm_ratios else None,
            "max_time_to_recover_s": worst("time_to_recover_s"),
            "all_recovered": all(bool(r.get("recovered")) for r in judged_rows if _present(r.get("recovered"))),
            "unavailable_s": sum(_number(r.get("unavailable_s")) for r in judged_rows),
            "reduced_publish_s": reduced, "publish_tolerance_s": tolerance,
            "publishers_blocked_s": max(blocked_by_run.values(), default=0.0),
            "peak_backlog_msgs": int(max((_number(r.get("backlog_max")) for r in rows), default=0.0)),
            "peak_memory_share": worst("broker_mem_max_fraction"),
            "nodes_down": ",".join(sorted({node for r in in_scope for node in str(r.get("broker_nodes_down") or "")
                                           .split(",") if node})) or None,
            # the broker's own figures, whether or not the generator kept up
            "max_whole_after_heal_s": max((_number(r.get("broker_whole_after_heal_s")) for r in in_scope
                                           if _present(r.get("broker_whole_after_heal_s"))), default=None),
            "drained": drained,
            "drain_s": max(drain_times) if drained and drain_times else None,
            "lost": lost, "duplicates": int(sum(_number(r.get("duplicates")) for r in rows)),
            "max_e2e_p99_ms": worst("e2e_p99_ms")}


NOT_JUDGED = "not judged"  # how a reason without a verdict starts (the report and the recommendation quote it)


def _phase_name(rows: Sequence[Mapping[str, Any]], number: int) -> str:
    name = next((r.get("phase_name") for r in rows if int(r["phase"]) == number and r.get("phase_name")), None)
    return str(name) if name else f"phase {number}"


def _invalid_note(invalid: Sequence[Mapping[str, Any]]) -> str:
    """The invalid phases, each with its run, repeat and why (phase_summary.invalid_reason)."""
    seen = sorted({(str(r["run_id"]), int(r["repeat"]), int(r["phase"])) for r in invalid})
    by_key = {(str(r["run_id"]), int(r["repeat"]), int(r["phase"])): r for r in invalid}
    parts = [f"{_phase_name([by_key[k]], k[2])} (run {k[0]}, repeat {k[1]}: "
             f"{by_key[k].get('invalid_reason') or 'invalid'})" for k in seen]
    noun = "phase" if len(parts) == 1 else "phases"
    return f"{len(parts)} {noun} flagged invalid, evidence neither way: " + ", ".join(parts)


def _not_judged(invalid: Sequence[Mapping[str, Any]], what: str) -> str:
    return f"{NOT_JUDGED}: {what}; {_invalid_note(invalid)}"


def _fault_reason(rows: Sequence[Mapping[str, Any]], held: Sequence[bool], invalid: Sequence[Mapping[str, Any]]) -> str:
    missed = [r for r, ok in zip(rows, held, strict=True) if not ok]
    lost = sum(_number(r.get("lost")) for r in missed)
    parts = [f"{len(missed)} of {len(rows)} judged phases missed their target rate or the SLO"]
    if lost:
        parts.append(f"{lost:,.0f} confirmed messages lost")
    if invalid:
        parts.append(_invalid_note(invalid))
    return "; ".join(parts)


def _backlog_reason(reduced: float, tolerance: float, lost: int, drained: bool, measured: bool) -> str:
    if not measured:
        return "no phase measured"
    parts = []
    if reduced > tolerance:
        parts.append(f"publish rate reduced for {reduced:,.0f} s (tolerance {tolerance:,.0f} s)")
    if lost:
        parts.append(f"{lost:,} confirmed messages lost")
    if not drained:
        parts.append("the backlog had not drained by the end")
    return "; ".join(parts)
