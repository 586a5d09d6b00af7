"""Scenario families: an `isolate: true` scenario's runs are one scenario as written, for filters, verdicts and
charts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sizing.campaign.model import Scenario


def family_name(scenario: Scenario) -> str:
    """The scenario as written: an `isolate: true` scenario's runs are one family."""
    return scenario.isolated_from or scenario.name


def selected(scenario: Scenario, names: tuple[str, ...] | list[str] | None) -> bool:
    """A scenario filter (the DAG's `scenarios` param, `sizing plan`): empty selects everything; a name selects the
    scenario as written (every run of an isolated one) or one of its runs."""
    return not names or scenario.name in names or family_name(scenario) in names


def scenario_names(scenarios: tuple[Scenario, ...] | list[Scenario]) -> set[str]:
    """Every name a scenario filter accepts: the runs' and the families'."""
    return {s.name for s in scenarios} | {family_name(s) for s in scenarios}


def families(scenarios: tuple[Scenario, ...] | list[Scenario]) -> list[Scenario]:
    """One scenario per family, in spec order: an isolated family as its scenario as written (every step, its
    name), so that verdicts, findings and charts treat it as one scenario; a phase of member k is its step k."""
    out: dict[str, Scenario] = {}
    for scenario in scenarios:
        name = family_name(scenario)
        if name not in out:
            out[name] = replace(scenario, name=name, isolated_from=None)
        elif scenario.isolated_from:
            kept = out[name]
            out[name] = replace(kept, step_rates=(*(kept.step_rates or ()), *(scenario.step_rates or ())),
                                step_settings=(*(kept.step_settings or ()), *(scenario.step_settings or ()))
                                if scenario.step_settings else kept.step_settings)
    return list(out.values())


def as_family_row(row: Mapping[str, Any], phases: Mapping[str, tuple[str, int | None]]) -> dict[str, Any]:
    """A phase_summary row of an isolated run as a phase of its family (scenario = family, phase = step number);
    other rows unchanged. `phases`: family_phases of the campaign's scenarios."""
    family, number = phases.get(row["scenario"], (row["scenario"], None))
    return {**row, "scenario": family, "phase": number if number is not None else row["phase"]}


def family_phases(scenarios: tuple[Scenario, ...] | list[Scenario]) -> dict[str, tuple[str, int | None]]:
    """scenario name -> (its family, the phase number its one phase has in the family, None: keep its own)."""
    index: dict[str, int] = {}
    out: dict[str, tuple[str, int | None]] = {}
    for scenario in scenarios:
        name = family_name(scenario)
        if scenario.isolated_from:
            index[name] = index.get(name, 0) + 1
            out[scenario.name] = (name, index[name])
        else:
            out[scenario.name] = (name, None)
    return out
