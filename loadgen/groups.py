"""Workload groups (issue 14) in the generator: which worker runs which group, with which clients and timeline.

Pure, like `loadgen.schedule`: a group's publishers and consumers are planned by `plan_clients` over the workers
the group owns, then numbered globally (publisher ids are unique across groups, so one flat accounting array and
one set of per-message books serve every group). Every worker runs exactly one group, with that group's workload
and timeline; every group's timeline has the scenario's phase boundaries (sizing.campaign checks it), so one phase
number means the same window for every group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from loadgen.schedule import ConsumerPlan, PublisherPlan, plan_clients
from sizing.campaign import Scenario, Workload, WorkloadGroup
from sizing.contract.records import DEFAULT_GROUP
from sizing.planning.timeline import Timeline, expand


@dataclass(frozen=True)
class GroupPlan:
    name: str
    foreground: bool
    workload: Workload
    timeline: Timeline
    workers: tuple[int, ...]  # global worker indexes running this group
    publishers: tuple[PublisherPlan, ...]  # global publisher ids and worker indexes
    consumers: tuple[ConsumerPlan, ...]
    detail: str  # JSON for the phases record's group_detail


def workers_needed(scenario: Scenario, workers: int) -> int:
    """At least one worker process per group (a worker runs one group's workload and timeline)."""
    return max(workers, len(scenario.workload_groups))


def group_detail(group: WorkloadGroup) -> str:
    w = group.workload
    return json.dumps({"queues": w.queues.count, "queue_type": w.queues.type, "arguments": dict(w.queues.arguments),
                       "message_bytes": w.message.size_bytes, "publishers": w.publishers.count,
                       "consumers": w.consumers.count, "confirms_in_flight": w.publishers.confirms_in_flight,
                       "rate": group.hold}, sort_keys=True, default=str)


def plan_groups(scenario: Scenario, timeline: Timeline, nodes: int, workers: int, seed: str) -> list[GroupPlan]:
    """Group g runs on workers g, g + G, g + 2G, ... (G groups, `workers` >= G); publishers and consumers are
    numbered group after group. The implicit single group keeps `plan_clients`' plan exactly (same seed)."""
    groups = scenario.workload_groups
    if workers < len(groups):
        raise ValueError(f"{len(groups)} workload groups need at least {len(groups)} workers, got {workers}")
    plans: list[GroupPlan] = []
    next_publisher = next_consumer = 0
    for g, group in enumerate(groups):
        own = tuple(w for w in range(workers) if w % len(groups) == g)
        # The foreground's schedule is the scenario itself (faults included): use the runner's timeline for it.
        group_timeline = timeline if group.schedule is scenario or group.name == scenario.foreground else expand(
            group.schedule, nodes)
        group_seed = seed if len(groups) == 1 else f"{seed}/{group.name}"
        publishers, consumers = plan_clients(group.workload, nodes, len(own), seed=group_seed)
        plans.append(GroupPlan(
            name=group.name, foreground=group.name == scenario.foreground, workload=group.workload,
            timeline=group_timeline, workers=own,
            publishers=tuple(PublisherPlan(p.index + next_publisher, own[p.worker], p.queue, p.node, p.start_s,
                                           p.share) for p in publishers),
            consumers=tuple(ConsumerPlan(c.index + next_consumer, own[c.worker], c.queue, c.node)
                            for c in consumers),
            detail=group_detail(group)))
        next_publisher += len(publishers)
        next_consumer += len(consumers)
    return plans


def group_of_worker(plans: list[GroupPlan]) -> dict[int, str]:
    return {w: plan.name for plan in plans for w in plan.workers}


def group_of_publisher(plans: list[GroupPlan]) -> dict[int, str]:
    return {p.index: plan.name for plan in plans for p in plan.publishers}


__all__ = ["DEFAULT_GROUP", "GroupPlan", "group_detail", "group_of_publisher", "group_of_worker", "plan_groups",
           "workers_needed"]
