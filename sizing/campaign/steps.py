"""Client-setting steps (seed 003) and isolated runs: what a step changes, whether it can change live, and one run
per step for `isolate: true`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sizing.campaign.model import (
    CONFIRM_MODE_LIVE,
    RATE_MAX,
    RATE_SCHEDULED,
    STEP_DIMENSIONS,
    Scenario,
    StepSetting,
    Workload,
)
from sizing.documents.fields import MAX_DURATION_S, MAX_RATE, Fields, Problem, join, number_problem

# ------------------------------------------------------------------------------- client-setting steps
# Seed 003: steps that vary a client setting (one `vary` dimension with `values`, or a listed `sequence`), each
# at a scheduled rate or at `max` (closed loop). Checked here, before anything is provisioned.

# Max mode without a stated cap (`steps.max_rate`, total msg/s): the confirm window bounds the publisher; this
# per-publisher ceiling only sizes its sequence space (the per-message accounting arrays are preallocated).
DEFAULT_MAX_RATE_PER_PUBLISHER = 100_000.0
_SETTING_OF_WORKLOAD = {
    "confirms_in_flight": lambda w: w.publishers.confirms_in_flight,
    "prefetch": lambda w: w.consumers.prefetch,
    "multi_ack_every": lambda w: w.consumers.multi_ack_every,
    "auto_ack": lambda w: w.consumers.auto_ack,
    "message_size": lambda w: w.message.size_bytes,
    "processing_ms": lambda w: w.consumers.processing_ms,
}


def check_setting(key: str, value: Any) -> str | None:
    """Why `value` is not valid for setting `key` (None: valid)."""
    if key == "rate":
        reason = None if value == RATE_MAX else number_problem(value, 0, MAX_RATE, exclusive=True)
        return None if reason is None else f"must be a positive msg/s or 'max': {reason}"
    if key == "confirms_in_flight":
        reason = number_problem(value, 0, 1_000_000, integer=True)
        return None if reason is None else f"is the confirm window (0: no confirms): {reason}"
    if key in ("prefetch", "multi_ack_every"):
        return number_problem(value, 1, 65535, integer=True)  # an AMQP short, as the workload's own
    if key == "auto_ack":
        return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
    if key == "message_size":
        reason = number_problem(value, 64, 2**53, integer=True)
        return None if reason is None else f"is in bytes: {reason}"
    if key == "processing_ms":
        reason = number_problem(value, 0, MAX_DURATION_S * 1000)
        return None if reason is None else f"is in ms: {reason}"
    return f"unknown step dimension {key!r} (known: {', '.join(STEP_DIMENSIONS)})"


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def step_label(setting: str, value: Any) -> str:
    """A client-setting step's label (its phase name): `prefetch=1000`."""
    return f"{setting}={format_value(value)}"


def parse_setting_steps(s: Fields, workload: Workload | None
                         ) -> tuple[tuple[StepSetting, ...] | None, str | None, bool]:
    """`steps: {vary: prefetch, values: [...]}` or `steps: {sequence: [{...}, ...]}`, plus `rate` (msg/s or
    `max`, the default for every step), `per_publisher`, `max_rate` (max mode's total cap) and `isolate`."""
    start = len(s.problems)
    per_publisher = bool(s.bool("per_publisher", False))
    isolate = bool(s.bool("isolate", False))
    cap = s.number("max_rate", None, minimum=0, exclusive=True, maximum=MAX_RATE)
    base_rate = s.raw("rate", RATE_MAX)
    if (reason := check_setting("rate", base_rate)) is not None:
        s.fail("rate", reason)
    entries: list[tuple[str, dict[str, Any]]] = []  # (field path, the settings that entry sets)
    dimension: str | None = None
    if s.has("vary") and s.has("sequence"):
        s.fail("", "give either `vary` + `values` (one dimension) or `sequence` (a listed sequence), not both")
        s.seen.update({"vary", "values", "sequence"})
    elif s.has("vary"):
        dimension = s.str("vary")
        values = s.list("values") or []
        if dimension is not None and dimension not in STEP_DIMENSIONS:
            s.fail("vary", f"unknown step dimension {dimension!r} (known: {', '.join(STEP_DIMENSIONS)})")
            dimension = None
        if dimension is not None:
            entries = [(join(join(s.path, "values"), i), {dimension: v}) for i, v in enumerate(values)]
    else:
        dimension = "sequence"
        for i, item in enumerate(s.list("sequence") or []):
            path = join(join(s.path, "sequence"), i)
            if not isinstance(item, Mapping) or not item:
                s.problems.append(Problem(path, f"must be a mapping of settings, got {item!r}"))
                continue
            entries.append((path, dict(item)))
    if workload is None or len(s.problems) > start:
        return None, None, isolate
    pubs = workload.publishers.count
    settings: list[StepSetting] = []
    for path, entry in entries:
        values: dict[str, Any] = {key: get(workload) for key, get in _SETTING_OF_WORKLOAD.items()}
        values["rate"] = base_rate
        bad = False
        for key, value in entry.items():
            reason = check_setting(key, value)
            if reason is not None:
                s.problems.append(Problem(path if dimension != "sequence" else join(path, key), reason))
                bad = True
            values[key] = value
        if bad:
            continue
        if values["multi_ack_every"] > values["prefetch"]:
            s.problems.append(Problem(path, f"multi_ack_every ({values['multi_ack_every']}) must be <= prefetch "
                                            f"({values['prefetch']}), or consumers stall"))
            continue
        is_max = values["rate"] == RATE_MAX
        if is_max and values["confirms_in_flight"] == 0 and cap is None:
            s.problems.append(Problem(path, "rate max with confirms_in_flight 0 has no window to bound it: give "
                                            "steps.max_rate (total msg/s cap) so the generator cannot starve itself"))
            continue
        if is_max:
            rate = cap if cap is not None else DEFAULT_MAX_RATE_PER_PUBLISHER * pubs
        else:
            rate = float(values["rate"]) * (pubs if per_publisher else 1)
        label = ",".join(step_label(key, value) for key, value in entry.items())
        settings.append(StepSetting(label, RATE_MAX if is_max else RATE_SCHEDULED, float(rate),
                                    values["confirms_in_flight"], values["prefetch"], values["multi_ack_every"],
                                    values["auto_ack"], values["message_size"], float(values["processing_ms"])))
    if len(s.problems) > start:
        return None, None, isolate
    if not isolate:
        for (path, _entry), before, after in zip(entries[1:], settings, settings[1:], strict=False):
            for reason in live_change_problems(before, after):
                s.problems.append(Problem(path, f"{reason}; set steps.isolate: true (a fresh run per value)"))
    return (tuple(settings) if len(s.problems) == start else None), dimension, isolate


def live_change_problems(before: StepSetting, after: StepSetting) -> list[str]:
    """Why the generator cannot change from `before` to `after` within one run (empty: it can)."""
    problems = []
    if (before.confirms_in_flight == 0) != (after.confirms_in_flight == 0):
        problems.append(f"confirms_in_flight cannot change live from {before.confirms_in_flight} to "
                        f"{after.confirms_in_flight}: {CONFIRM_MODE_LIVE}")
    if before.auto_ack != after.auto_ack:
        problems.append(f"auto_ack cannot change live: {STEP_DIMENSIONS['auto_ack']}")
    if before.size_bytes != after.size_bytes:
        problems.append(f"message_size cannot change live: {STEP_DIMENSIONS['message_size']}")
    return problems


def workload_with(workload: Workload, setting: StepSetting) -> Workload:
    """The workload as the run starts it: the (first) step's settings applied."""
    return replace(
        workload,
        message=replace(workload.message, size_bytes=setting.size_bytes),
        publishers=replace(workload.publishers, confirms_in_flight=setting.confirms_in_flight),
        consumers=replace(workload.consumers, prefetch=setting.prefetch, multi_ack_every=setting.multi_ack_every,
                          auto_ack=setting.auto_ack, processing_ms=setting.processing_ms))


def isolated_runs(scenario: Scenario) -> list[Scenario]:
    """`isolate: true`: one single-phase scenario per step, named `<scenario>-<setting>-<value>` (client settings)
    or `<scenario>-rate-<rate>` (rate steps), each its own run (the runner declares and purges its queues), so a
    slow step cannot spoil the next (seed 003, #2) and every rate starts from an empty cluster (seed 000)."""
    if not scenario.step_settings:
        return [replace(scenario, name=f"{scenario.name}-rate-{rate:g}".replace(".", "p"), step_rates=(rate,),
                        isolated_from=scenario.name) for rate in scenario.step_rates or ()]
    runs = []
    for setting in scenario.step_settings:
        slug = setting.label.replace("=", "-").replace(",", "_").replace(".", "p")
        runs.append(replace(scenario, name=f"{scenario.name}-{slug}", step_rates=(setting.rate,),
                            step_settings=(setting,), workload=workload_with(scenario.workload, setting),
                            isolated_from=scenario.name))
    return runs
