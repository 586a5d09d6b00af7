"""The upgrade question (issue 33): one workload on two RabbitMQ versions, six figures side by side (pure: plain rows
in, `upgrade` table rows out; schema sizing.contract.records UPGRADE).

A campaign asks it when its purpose is compare, by config, and its configs differ only in `rabbitmq_version`
(`version_arms`). Per config and metric, the median over repeats of one figure per repeat:

- capacity_msg_s: the capacity search's sustainable rate (the `capacity` table's per-repeat figure);
- p99_at_target_ms: end-to-end p99 of the capacity phase or search probe offered the campaign target (a repeat
  with several, e.g. a confirm probe, counts its worst);
- drain_rate_msg_s: messages drained / seconds from the peak backlog until it stayed drained (`drain_rate`), per
  backlog scenario (sizing.judgement.adverse.run_drain on the client-side backlog, counted per second: a drain within
  one second gives a lower bound, and the row says so);
- reduced_publish_s: seconds of reduced publish rate, per adverse scenario (sizing.judgement.adverse.judge of one
  repeat);
- memory_per_message_bytes: cluster memory increase / messages stored, from the first sample to the deepest one
  (`memory_per_message`), per backlog scenario;
- restart_s: seconds from a stopped node's start command until it runs in the cluster again (`restart_seconds`),
  per fault scenario that stops or kills a node.

Each config is set beside the baseline config: the relative change, its direction (higher, lower or unchanged
within sizing.criteria.stats.PRACTICAL_EFFECT), the repeats' verdict (sizing.criteria.stats.compare: inconclusive with
one repeat), and the direction published results lead one to expect (`EXPECTATIONS`), with whether the measurement
agrees. A contradiction is a result: it is stated, never tuned away.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sizing.campaign import Campaign
from sizing.criteria import rules
from sizing.criteria.stats import PRACTICAL_EFFECT, Metric, compare
from sizing.judgement import adverse
from sizing.judgement.findings import COMPARE
from sizing.resources.versions import version_key

HIGHER, LOWER, UNCHANGED = "higher", "lower", "unchanged"
DIRECTIONS = (HIGHER, LOWER, UNCHANGED)
NODE_RESTART_FAULTS = ("stop_node", "kill_node")  # faults healed by starting the node again


METRICS = (
    Metric("capacity_msg_s", "capacity (the search's sustainable rate)", "msg/s", True),
    Metric("p99_at_target_ms", "end-to-end p99 at the target", "ms", False),
    Metric("drain_rate_msg_s", "backlog drain rate", "msg/s", True),
    Metric("reduced_publish_s", "seconds of reduced publishing", "s", False),
    Metric("memory_per_message_bytes", "memory per stored message", "bytes", False),
    Metric("restart_s", "node restart time", "s", False),
)
METRIC = {m.name: m for m in METRICS}


@dataclass(frozen=True)
class Expectation:
    """A published result: from a version below `since` to one at or above it, `metric` moves `direction`."""

    metric: str
    since: str  # the first series with the change
    direction: str
    source: str  # what was published, where


EXPECTATIONS = (
    Expectation("drain_rate_msg_s", "3.12", HIGHER,
                "RabbitMQ's 3.12 performance post: draining a 5M-message quorum-queue backlog ran above 15k msg/s on "
                "3.12, below 1k msg/s on 3.11"),
    Expectation("restart_s", "4.0", LOWER,
                "RabbitMQ's 4.0 quorum-queue checkpoints announcement: a node holding 10M messages in a quorum queue "
                "restarts in a fraction of a second instead of about 30 s"),
)


def expected_direction(metric: str, baseline_version: str | None, version: str | None) -> Expectation | None:
    """The published expectation for `metric` when going from `baseline_version` to `version` (reversed for a
    downgrade); None when no published result spans the two, or a version is unknown."""
    if baseline_version is None or version is None:
        return None
    base, other = version_key(baseline_version), version_key(version)
    for e in EXPECTATIONS:
        since = version_key(e.since)
        if e.metric != metric:
            continue
        if base < since <= other:
            return e
        if other < since <= base:
            return replace(e, direction=LOWER if e.direction == HIGHER else HIGHER)
    return None


def version_arms(campaign: Campaign) -> dict[str, str | None] | None:
    """config id -> its RabbitMQ version, when the campaign compares versions: purpose compare, by config, and the
    configs differ in rabbitmq_version and in nothing else. None otherwise."""
    comparison = campaign.comparison
    if campaign.purpose != COMPARE or comparison is None or comparison.by != "config" or not comparison.baselines:
        return None
    shapes = list(campaign.clusters)
    if len(shapes) < 2 or len({replace(s, rabbitmq_version=None) for s in shapes}) != 1:
        return None
    if len({s.rabbitmq_version for s in shapes}) != len(shapes):
        return None
    return {s.config_id: s.rabbitmq_version for s in shapes}


# ------------------------------------------------------------------------------------- one repeat's figures


# The client records count per second: a drain within one second is as fast as they can tell apart.
RECORD_RESOLUTION_S = 1.0


def drain_at_resolution(drain: adverse.Drain) -> bool:
    """The drain took no longer than the records' resolution: its rate is a lower bound (the backlog may have gone
    in a fraction of that second)."""
    return drain.drain_s is not None and 0 < drain.drain_s <= RECORD_RESOLUTION_S


def drain_rate(drain: adverse.Drain, level: float) -> float | None:
    """Messages drained per second: from the peak backlog down to the drain level (what certainly left the queues),
    over the seconds from the peak until the backlog stayed drained. None when it did not drain, or never stood
    above the level."""
    if not drain.drained or drain.drain_s is None or drain.drain_s <= 0 or drain.peak <= level:
        return None
    return (drain.peak - level) / drain.drain_s


def memory_per_message(samples: Sequence[Mapping[str, Any]]) -> float | None:
    """Bytes of broker memory per stored message, from one run's broker_samples rows: the cluster's memory (every
    node's mem_used_bytes summed, so a replicated message counts on each replica) at the sample round with the most
    messages in the queues, less that at the run's first round, over the messages stored between the two. A round is
    the rows of one `second` (the sampler stamps every node of a round alike); only rounds with every node's memory
    count. None without two such rounds or without a growing queue depth."""
    nodes = {r["node"] for r in samples}
    rounds: dict[float, list[Mapping[str, Any]]] = {}
    for row in samples:
        rounds.setdefault(float(row["second"]), []).append(row)
    complete = [(second, sum(int(r["mem_used_bytes"]) for r in rows), sum(int(r["queue_messages"] or 0) for r in rows))
                for second, rows in sorted(rounds.items())
                if {r["node"] for r in rows} == nodes and all(r.get("mem_used_bytes") is not None for r in rows)]
    if len(complete) < 2:
        return None
    _, mem_first, depth_first = complete[0]
    _, mem_peak, depth_peak = max(complete, key=lambda c: c[2])  # max keeps the first of equal depths
    stored = depth_peak - depth_first
    return (mem_peak - mem_first) / stored if stored > 0 else None


def restart_seconds(events: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]] = ()) -> float | None:
    """The longest restart of a node in one run: seconds from the start command of a stopped or killed node (its
    fault_heal event) until it ran in the cluster again. The local fault executor measures that itself
    (`running_after_s` in the event's detail: pid alive, AMQP port open, the cluster reporting it running); without
    it, the first broker sample at or after the heal with the node running (as coarse as the sample interval). None
    when no node was restarted or none came back."""
    times = []
    for event in events:
        if event.get("kind") != "fault_heal" or event.get("fault_kind") not in NODE_RESTART_FAULTS:
            continue
        detail = json.loads(event.get("detail") or "{}")
        if detail.get("already_running"):
            continue
        if detail.get("running_after_s") is not None:
            times.append(float(detail["running_after_s"]))
            continue
        back = [float(s["second"]) for s in samples if s["node"] == event.get("node") and s.get("running")
                and float(s["second"]) >= float(event["second"])]
        if back:
            times.append(min(back) - float(event["second"]))
    return max(times) if times else None


# --------------------------------------------------------------------------------------- campaign -> rows

# What repeat_figures reads of each phase_summary row.
PHASE_INPUTS = tuple(dict.fromkeys(("config_id", "scenario", "run_id", "repeat", "phase", "target_rate", "valid",
                                    "e2e_p99_ms", *adverse.VERDICT_INPUTS)))
Key = tuple[str, str, str]  # (config, metric, scenario)
Figures = dict[Key, list[float]]  # one figure per repeat


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _by_run(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str, int], list[Mapping[str, Any]]]:
    out: dict[tuple[str, str, str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        out.setdefault((str(row["config_id"]), str(row["scenario"]), str(row["run_id"]), int(row["repeat"])),
                       []).append(row)
    return out


def repeat_figures(campaign: Campaign, phases: Sequence[Mapping[str, Any]], capacity: Sequence[Mapping[str, Any]],
                   samples: Sequence[Mapping[str, Any]] = (), events: Sequence[Mapping[str, Any]] = ()
                   ) -> tuple[Figures, set[Key]]:
    """Every figure of every repeat, and the figures of which some repeat's is a lower bound (a drain at the records'
    resolution). `phases`: phase_summary rows of the judged group; `capacity`: the capacity table's rows; `samples`,
    `events`: broker_samples and events rows (each with its run key)."""
    kinds = {s.name: rules.scenario_kind(s) for s in campaign.scenarios}
    scenario = {s.name: s for s in campaign.scenarios}
    out: Figures = {}
    bounded: set[Key] = set()

    def add(config: str, metric: str, name: str, value: float | None) -> None:
        if _present(value):
            out.setdefault((config, metric, name), []).append(float(value))  # type: ignore[arg-type]

    for row in capacity:
        add(row["config_id"], "capacity_msg_s", row["scenario"], row.get("sustainable_rate"))
    samples_of, events_of = _by_run(samples), _by_run(events)
    for (config, name, run_id, repeat), rows in sorted(_by_run(phases).items()):
        kind = kinds.get(name)
        if kind in (rules.CAPACITY, rules.SEARCH):
            at_target = [float(r["e2e_p99_ms"]) for r in rows if r.get("target_rate") == campaign.target.rate
                         and r.get("valid") and _present(r.get("e2e_p99_ms"))]
            add(config, "p99_at_target_ms", name, max(at_target) if at_target else None)
        if kind not in rules.ADVERSE_KINDS:
            continue
        verdict = adverse.judge(scenario[name], rows, campaign.target.rate)
        add(config, "reduced_publish_s", name, verdict["reduced_publish_s"])
        key = (config, name, run_id, repeat)
        if kind == rules.BACKLOG_ADVERSE:
            drain = adverse.run_drain(rows)
            levels = [r["drain_level_msgs"] for r in rows if _present(r.get("drain_level_msgs"))]
            add(config, "drain_rate_msg_s", name, drain_rate(drain, float(levels[0])) if levels else None)
            if drain_at_resolution(drain):
                bounded.add((config, "drain_rate_msg_s", name))
            add(config, "memory_per_message_bytes", name, memory_per_message(samples_of.get(key, [])))
        elif any(f.kind in NODE_RESTART_FAULTS for f in scenario[name].faults):
            add(config, "restart_s", name, restart_seconds(events_of.get(key, []), samples_of.get(key, [])))
    return out, bounded


def direction(value: float, base: float | None, threshold: float = PRACTICAL_EFFECT) -> str | None:
    """higher / lower: the relative change is at least the practical threshold; unchanged: within it. Against a
    baseline of 0 (no second of reduced publishing, say) there is no relative change: any figure above it is higher."""
    if base is None:
        return None
    if base == 0:
        return HIGHER if value > 0 else LOWER if value < 0 else UNCHANGED
    change = value / base - 1
    return HIGHER if change >= threshold else LOWER if change <= -threshold else UNCHANGED


def upgrade_rows(campaign: Campaign, phases: Sequence[Mapping[str, Any]], capacity: Sequence[Mapping[str, Any]],
                 samples: Sequence[Mapping[str, Any]] = (), events: Sequence[Mapping[str, Any]] = ()
                 ) -> list[dict[str, Any]]:
    """The `upgrade` table's rows (without run_id): per config, metric and scenario the median over repeats, and
    for each config but the baseline its change against the baseline's, with the published expectation. Empty for a
    campaign that does not compare versions."""
    arms = version_arms(campaign)
    if arms is None:
        return []
    figures, bounded = repeat_figures(campaign, phases, capacity, samples, events)
    baseline = campaign.comparison.baselines[0]  # type: ignore[union-attr]
    order = {m.name: i for i, m in enumerate(METRICS)}
    rows = []
    for (config, metric, name), values in sorted(figures.items(), key=lambda i: (order[i[0][1]], i[0][2], i[0][0])):
        if config not in arms:
            continue
        base = figures.get((baseline, metric, name), []) if config != baseline else []
        value, base_value = statistics.median(values), statistics.median(base) if base else None
        change = value / base_value - 1 if base_value else None
        moved = direction(value, base_value)
        expected = expected_direction(metric, arms[baseline], arms[config]) if config != baseline else None
        verdict = None
        if base and all(v > 0 for v in [*values, *base]):
            verdict = compare(base, values).verdict
        rows.append({
            "campaign": campaign.name, "config_id": config, "rabbitmq_version": arms[config], "metric": metric,
            "scenario": name, "unit": METRIC[metric].unit, "value": value, "n": len(values),
            "lower_bound": (config, metric, name) in bounded,
            "baseline_config_id": baseline if config != baseline else None,
            "baseline_version": arms[baseline] if config != baseline else None,
            "baseline_value": base_value, "n_baseline": len(base) if base else None, "change": change,
            "direction": moved, "verdict": verdict,
            "better": None if moved in (None, UNCHANGED) else (moved == HIGHER) == METRIC[metric].higher_is_better,
            "expected": expected.direction if expected else None, "expected_source": expected.source if expected
            else None,
            "agrees": None if expected is None or moved is None else moved == expected.direction})
    return rows

