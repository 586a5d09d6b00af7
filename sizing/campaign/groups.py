"""Workload groups (issue 14, seed 001): a scenario's `groups:` run concurrently, each with its own workload."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sizing.campaign.model import RATE_MAX, Scenario, Workload, WorkloadGroup
from sizing.campaign.steps import check_setting, format_value
from sizing.contract.records import DEFAULT_GROUP  # the one implicit group of a scenario without `groups:`
from sizing.documents.fields import MAX_RATE, Fields, Problem, deep_merge, join, merged_document

# ------------------------------------------------------------------------------------- workload groups
# Issue 14 (seed 001): `groups:` of a scenario run concurrently, each with its own workload (deep-merged onto the
# scenario's) and its own steps or a held `rate:`; every group has the scenario's phase boundaries, so one phase
# number means the same window for every group. The first group is the foreground unless `foreground:` says.


def _group_steps(g: Fields, scenario: Scenario, value: Mapping[str, Any]) -> tuple[Any, str]:
    """The `steps` mapping a group is parsed with, and the field path its problems belong to: its own `steps`,
    a held `rate:` written out as one step per scenario phase, or (neither) the scenario's."""
    n, duration = len(scenario.step_rates or ()), scenario.step_duration_s
    if g.has("steps") and g.has("rate"):
        g.fail("", "give either `steps` (the group's own steps) or `rate` (held over every phase), not both")
    if g.has("steps"):
        return g.raw("steps"), join(g.path, "steps")
    if g.has("rate"):
        rate = g.raw("rate")
        per_publisher = g.bool("per_publisher", False)
        max_rate = g.number("max_rate", None, minimum=0, exclusive=True, maximum=MAX_RATE)
        if (reason := check_setting("rate", rate)) is not None:
            g.fail("rate", reason)
            return None, join(g.path, "rate")
        if g.has("max_rate") and rate != RATE_MAX:
            g.fail("max_rate", f"caps a group held at `rate: max` only (this group holds rate {rate!r})")
            return None, join(g.path, "max_rate")
        if rate == RATE_MAX:
            steps: dict[str, Any] = {"sequence": [{"rate": RATE_MAX}] * n, "duration_s": duration}
            if max_rate is not None:
                steps["max_rate"] = max_rate
            return steps, join(g.path, "rate")
        return {"rates": [rate] * n, "per_publisher": bool(per_publisher), "duration_s": duration}, join(g.path, "rate")
    return value.get("steps"), join(g.path, "steps")


def _hold_label(g: Mapping[str, Any]) -> str | None:
    if "rate" not in g:
        return None
    rate = g["rate"]
    return f"{format_value(rate)}/publisher" if g.get("per_publisher") and rate != RATE_MAX else format_value(rate)


def with_groups(scenario: Scenario, value: Mapping[str, Any], groups_raw: list[Any] | None,
                 foreground_raw: str | None, path: str, problems: list[Problem], workload_raw: Mapping[str, Any],
                 base_workload: Workload | None, deployment: str | None, isolate: bool,
                 parse_scenario: Callable[..., Scenario | tuple[Scenario, ...] | None]) -> Scenario | None:
    """The scenario with its workload groups parsed and checked; the scenario's own workload and steps become
    the foreground's. None (with problems recorded) when a group is invalid. Each group is parsed as a scenario of
    its own by `parse_scenario` (sizing.campaign.parse, which calls this for a scenario with `groups:`)."""
    start = len(problems)
    where = join(path, "groups")
    if scenario.search is not None or scenario.step_rates is None:
        problems.append(Problem(where, "workload groups need a `steps` scenario (their phases follow its steps); "
                                       "a profile or a capacity search runs one workload"))
        return None
    if isolate:
        problems.append(Problem(where, "workload groups cannot run with steps.isolate (each step is its own run "
                                       "of one workload)"))
        return None
    entries = groups_raw if groups_raw is not None else [{"name": DEFAULT_GROUP}]
    scenario_overrides = value.get("workload") or {}
    groups: list[WorkloadGroup] = []
    names: dict[str, int] = {}
    queues: dict[str, tuple[int, str]] = {}
    for j, entry in enumerate(entries):
        g = Fields(entry, join(where, j), problems)
        before = len(problems)
        name = g.name("name", names="record rows")
        if name is not None and name in names:
            g.fail("name", f"group name {name!r} is used twice (groups[{names[name]}] has it)")
        elif name is not None:
            names[name] = j
        overrides = g.mapping("workload", {}) or {}
        g.str("description", "", text=True)
        steps_raw, steps_path = _group_steps(g, scenario, value)
        g.done()
        if len(problems) > before or name is None:
            continue
        merged, base_raw = deep_merge(scenario_overrides, overrides), workload_raw
        if isinstance(overrides.get("queues"), Mapping) and "arguments" in overrides["queues"]:
            # Queue arguments are the queue type's: a group's own replace what it inherits (a lazy classic group
            # must not carry the quorum foreground's x-quorum-initial-group-size).
            merged["queues"]["arguments"] = copy.deepcopy(overrides["queues"]["arguments"])
            base_raw = {**workload_raw, "queues": {k: v for k, v in (workload_raw.get("queues") or {}).items()
                                                   if k != "arguments"}}
        sub_value = {"name": scenario.name, "warmup_s": scenario.warmup_s, "steps": steps_raw, "workload": merged}
        own: list[Problem] = []
        with merged_document():  # the group as a scenario: its own fields were read above, under g
            parsed = parse_scenario(sub_value, g.path, own, base_raw, base_workload, deployment)
        for problem in own:  # problems of what the group inherited were reported for the scenario itself
            if problem.path.startswith(join(g.path, "workload")):
                problems.append(problem)
            elif "rate" in entry or not problem.path.startswith(join(g.path, "steps")):
                problems.append(Problem(steps_path, problem.reason))  # a held rate: the steps were written for it
            else:
                problems.append(Problem(steps_path + problem.path[len(join(g.path, "steps")):], problem.reason))
        if not isinstance(parsed, Scenario) or own:
            if not own:
                problems.append(Problem(steps_path, "a group's steps cannot be isolated"))
            continue
        n, duration = len(scenario.step_rates), scenario.step_duration_s
        if len(parsed.step_rates or ()) != n or parsed.step_duration_s != duration:
            problems.append(Problem(steps_path, f"has {len(parsed.step_rates or ())} steps of "
                                                f"{parsed.step_duration_s:g}s but the scenario has {n} of "
                                                f"{duration:g}s; every group follows the scenario's phases"))
            continue
        for queue in parsed.workload.queues.names():
            if queue in queues and queues[queue][0] != j:
                problems.append(Problem(join(join(g.path, "workload"), "queues.name_pattern"),
                                        f"queue {queue!r} is also a queue of group {queues[queue][1]!r}; give "
                                        f"each group queue names of its own"))
                break
            queues[queue] = (j, name)
        groups.append(WorkloadGroup(name, parsed, _hold_label(entry) if isinstance(entry, Mapping) else None))
    if not entries:
        problems.append(Problem(where, "must list at least one group"))
    foreground = foreground_raw if foreground_raw is not None else (groups[0].name if groups else DEFAULT_GROUP)
    known = [g.name for g in groups]
    if foreground_raw is not None and len(problems) == start and foreground_raw not in known:
        problems.append(Problem(join(path, "foreground"), f"names no group: {foreground_raw!r} (groups: "
                                                          f"{', '.join(known)})"))
    if len(problems) > start:
        return None
    fg = next(g for g in groups if g.name == foreground).schedule
    return replace(scenario, workload=fg.workload, step_rates=fg.step_rates, step_settings=fg.step_settings,
                   steps_dimension=fg.steps_dimension, groups=tuple(groups), foreground=foreground)
