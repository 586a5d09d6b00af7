"""Campaign plan: the concrete configs, their trials (config x repeat, one fresh cluster each) and runs
(trial x scenario) of a campaign."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sizing.campaign import Campaign, ClusterShape, scenario_names, selected
from sizing.documents.fields import Problem, SpecError
from sizing.planning.timeline import Timeline, expand, planned_duration_s
from sizing.planning.trialcluster import ClusterRequest
from sizing.resources.catalog import Catalog
from sizing.resources.cost import cluster_monthly_cost, volume_monthly_cost
from sizing.resources.localports import (
    local_port_base,  # a local cluster's port block (its layout: sizing.resources.localports)
)

# A cluster lives longer than its load: `terraform apply` until every node is healthy, then `destroy`.
# Planning estimates, not measurements: on AWS, EC2 boot + cloud-init install + cluster formation, and
# the EBS/ENI teardown; locally, Erlang VM start-up and clustering.
# An existing cluster is attached (endpoints checked, names read) and cleaned (the campaign's queues deleted).
TRIAL_OVERHEAD_S = {"aws": {"apply": 600.0, "destroy": 300.0}, "local": {"apply": 60.0, "destroy": 15.0},
                    "existing": {"apply": 5.0, "destroy": 5.0}}
# A cluster's ExpiresAt tag: twice its planned lifetime plus an hour after apply, so a slow trial is never
# reaped mid-run while a leaked one (teardown failed) lives at most about that long.
EXPIRY_LIFETIME_FACTOR = 2.0
EXPIRY_MARGIN_S = 3600.0


@dataclass(frozen=True)
class ConfigPlan:
    """One config of a campaign; with `repeat`, one trial of it: the cluster that repeat runs on."""

    campaign: str
    config_id: str
    shape: ClusterShape
    slot: int  # picks the local port block: the config's position in the campaign (and, per trial, the repeat)
    monthly_cost: float
    repeat: int = 1  # 1-based; every repeat of a config gets a fresh cluster of its own

    @property
    def local_port_base(self) -> int:
        return local_port_base(self.slot)

    @property
    def cluster_key(self) -> str:
        return cluster_key(self.config_id, self.repeat)

    def to_dict(self) -> dict[str, object]:
        return {
            "campaign": self.campaign, "config_id": self.config_id, "nodes": self.shape.nodes,
            "instance_type": self.shape.instance_type, "volume_type": self.shape.volume.type,
            "volume_size_gb": self.shape.volume.size_gb, "volume_iops": self.shape.volume.iops,
            "volume_throughput_mbps": self.shape.volume.throughput_mbps, "slot": self.slot,
            "local_port_base": self.local_port_base, "monthly_cost": self.monthly_cost,
            "repeat": self.repeat, "cluster_key": self.cluster_key,
            "volumes": [{"role": v.role, **asdict(v.volume)} for v in self.shape.volumes],
        }


@dataclass(frozen=True)
class Trial:
    """One cluster's worth of a campaign run: a config and one of its repeats on a fresh cluster, with what
    every task of its group needs (so none re-plans: `cluster` is what the campaign says of the cluster). Travels
    between Airflow tasks as to_dict()/from_dict()."""

    campaign: str
    config_id: str
    repeat: int
    repeats: int
    slot: int  # the local port block, already shifted by the run's slot offset
    deployment: str
    run_label: str
    spec_path: str  # the resolved spec the load generator reads
    scenarios: tuple[str, ...]  # the scenarios this run executes (a filter of the spec's)
    max_parallel_configs: int
    cluster: ClusterRequest
    planned_wall_s: float  # the campaign's planned wall time at the run's parallelism (bounds a wait for a slot)

    @property
    def local_port_base(self) -> int:
        return local_port_base(self.slot)

    @property
    def cluster_key(self) -> str:
        return cluster_key(self.config_id, self.repeat)

    @property
    def config_plan(self) -> ConfigPlan:
        """The trial's cluster as a plan: its config's shape and cost, its repeat and (shifted) slot."""
        return ConfigPlan(self.campaign, self.config_id, self.cluster.shape, self.slot, self.cluster.monthly_cost,
                          self.repeat)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; also carries the derived cluster_key and local_port_base for templates and UI labels."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "scenarios": list(self.scenarios),
                "cluster": self.cluster.to_dict(), "cluster_key": self.cluster_key,
                "local_port_base": self.local_port_base}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trial:
        return cls(campaign=data["campaign"], config_id=data["config_id"], repeat=int(data["repeat"]),
                   repeats=int(data["repeats"]), slot=int(data["slot"]), deployment=data["deployment"],
                   run_label=data["run_label"], spec_path=data["spec_path"], scenarios=tuple(data["scenarios"]),
                   max_parallel_configs=int(data["max_parallel_configs"]),
                   cluster=ClusterRequest.from_dict(data["cluster"]), planned_wall_s=float(data["planned_wall_s"]))


def cluster_key(config_id: str, repeat: int) -> str:
    """Names one cluster (config and repeat): its Terraform state, cluster name, lease and local files."""
    return f"{config_id}-r{repeat}"


@dataclass(frozen=True)
class RunPlan:
    campaign: str
    config_id: str
    scenario: str
    repeat: int  # 1-based
    timeline: Timeline


def plan_configs(campaign: Campaign, only: list[str] | None = None) -> list[ConfigPlan]:
    """Every config of the campaign, or just those named in `only` (unknown names are an error)."""
    if only:
        known = {s.config_id for s in campaign.clusters}
        unknown = [c for c in only if c not in known]
        if unknown:
            raise KeyError(f"unknown config(s) {', '.join(unknown)}; campaign {campaign.name} has: "
                           f"{', '.join(sorted(known))}")
    return [
        ConfigPlan(campaign.name, shape.config_id, shape, slot, config_monthly_cost(campaign, shape))
        for slot, shape in enumerate(campaign.clusters)
        if not only or shape.config_id in only
    ]


def config_monthly_cost(campaign: Campaign, shape: ClusterShape) -> float:
    """A config's cost per month: the catalog's price of its nodes and volumes, or for an existing cluster the
    price its spec states (none stated: 0, so its cost figures read 0)."""
    if campaign.existing is not None:
        return float(campaign.existing.monthly_cost or 0.0)
    return cluster_monthly_cost(campaign.catalog, shape.nodes, shape.instance_type, [v.volume for v in shape.volumes])


def plan_trials(campaign: Campaign, only: list[str] | None = None) -> list[ConfigPlan]:
    """One ConfigPlan per (config, repeat): every repeat runs on a fresh cluster.

    Repeat-major (every config's repeat 1, then every config's repeat 2, ...), so slow drift on the
    machine or in the cloud spreads over all configs instead of landing on one. Repeat r of the config at
    position p takes port slot p + (r - 1) * len(campaign.clusters): repeat 1 keeps the config's own slot,
    and a backfill of one config reuses the ports of the full plan.
    """
    configs = plan_configs(campaign, only)
    stride = len(campaign.clusters)
    return [replace(config, repeat=repeat, slot=config.slot + (repeat - 1) * stride)
            for repeat in range(1, campaign.repeats + 1) for config in configs]


def role_monthly_costs(catalog: Catalog, shape: ClusterShape) -> dict[str, float]:
    """One node's volumes priced per month, by role (`data` first; roles without a volume of their own are absent)."""
    return {v.role: volume_monthly_cost(catalog.volumes[v.volume.type], v.volume) for v in shape.volumes}


def plan_runs(campaign: Campaign, config: ConfigPlan, scenarios: list[str] | None = None) -> list[RunPlan]:
    if scenarios:
        unknown = sorted(set(scenarios) - scenario_names(campaign.scenarios))
        if unknown:
            raise KeyError(f"campaign {campaign.name!r} has no scenario {unknown[0]!r}")
    return [
        RunPlan(campaign.name, config.config_id, scenario.name, repeat,
                expand(scenario, config.shape.nodes, campaign.seed))
        for scenario in campaign.scenarios
        if selected(scenario, scenarios)
        for repeat in range(1, campaign.repeats + 1)
    ]


# ------------------------------------------------------------------------------- the campaign's own cost


@dataclass(frozen=True)
class TrialCost:
    """One trial (config x repeat, one fresh cluster): how long its cluster lives and what that costs."""

    cluster_key: str
    nodes: int
    load_s: float  # planned load of every scenario (worst case for a search): the load generator's time
    lifetime_s: float  # load_s + apply + destroy: the cluster's time
    instance_cost: float
    volume_cost: float

    @property
    def cost(self) -> float:
        return self.instance_cost + self.volume_cost

    def to_dict(self) -> dict[str, Any]:
        return {"cluster_key": self.cluster_key, "nodes": self.nodes, "load_s": self.load_s,
                "lifetime_s": self.lifetime_s, "instance_cost": self.instance_cost, "volume_cost": self.volume_cost}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialCost:
        return cls(str(data["cluster_key"]), int(data["nodes"]), float(data["load_s"]), float(data["lifetime_s"]),
                   float(data["instance_cost"]), float(data["volume_cost"]))


@dataclass(frozen=True)
class CampaignCost:
    """What running a campaign costs in cluster time, generator time, cloud money and wall time."""

    campaign: str
    deployment: str
    currency: str
    parallelism: int
    wall_s: float  # trials in plan order on `parallelism` slots, each starting when a slot frees
    trials: tuple[TrialCost, ...]

    @property
    def cluster_hours(self) -> float:
        return sum(t.lifetime_s for t in self.trials) / 3600.0

    @property
    def node_hours(self) -> float:
        return sum(t.lifetime_s * t.nodes for t in self.trials) / 3600.0

    @property
    def loadgen_hours(self) -> float:
        return sum(t.load_s for t in self.trials) / 3600.0

    @property
    def instance_cost(self) -> float:
        return sum(t.instance_cost for t in self.trials)

    @property
    def volume_cost(self) -> float:
        return sum(t.volume_cost for t in self.trials)

    @property
    def total_cost(self) -> float:
        return self.instance_cost + self.volume_cost

    @property
    def wall_hours(self) -> float:
        return self.wall_s / 3600.0

    def summary(self) -> str:
        return (f"{len(self.trials)} trial(s), {self.cluster_hours:,.1f} cluster-hours ({self.node_hours:,.1f} "
                f"node-hours), {self.loadgen_hours:,.1f} load-generator hours, {self.total_cost:,.2f} "
                f"{self.currency} (instances {self.instance_cost:,.2f} + volumes {self.volume_cost:,.2f}), "
                f"{self.wall_hours:,.1f} h wall at parallelism {self.parallelism}")

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "deployment": self.deployment, "currency": self.currency,
                "parallelism": self.parallelism, "wall_s": self.wall_s, "trials": [t.to_dict() for t in self.trials]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CampaignCost:
        return cls(str(data["campaign"]), str(data["deployment"]), str(data["currency"]), int(data["parallelism"]),
                   float(data["wall_s"]), tuple(TrialCost.from_dict(t) for t in data["trials"]))


def trial_load_s(campaign: Campaign, scenarios: list[str] | None = None) -> float:
    """Planned seconds of load on one trial's cluster: every scenario (worst case for a search)."""
    return sum(planned_duration_s(s) for s in campaign.scenarios if selected(s, scenarios))


def trial_lifetime_s(campaign: Campaign, scenarios: list[str] | None = None) -> float:
    """Planned seconds one trial's cluster is up: apply, the load, destroy. Also the basis of its expiry tag."""
    overhead = TRIAL_OVERHEAD_S[campaign.deployment]
    return overhead["apply"] + trial_load_s(campaign, scenarios) + overhead["destroy"]


def expiry_tag(applied_at: datetime, lifetime_s: float) -> str:
    """The `expires_at` variable of terraform/stacks/aws (RFC 3339, UTC, whole seconds)."""
    expires = applied_at.astimezone(UTC) + timedelta(seconds=EXPIRY_LIFETIME_FACTOR * lifetime_s + EXPIRY_MARGIN_S)
    return expires.strftime("%Y-%m-%dT%H:%M:%SZ")


def trial_cost(campaign: Campaign, trial: ConfigPlan, scenarios: list[str] | None = None) -> TrialCost:
    """Instances and volumes priced from the catalog for the trial's lifetime (EBS bills per second of its
    monthly price). A local cluster costs nothing: the catalog instance it stands in for is not rented; nor does an
    existing one: it runs (and bills) whether or not the campaign measures it."""
    load, lifetime = trial_load_s(campaign, scenarios), trial_lifetime_s(campaign, scenarios)
    instance_cost = volume_cost = 0.0
    if campaign.deployment == "aws":
        catalog, shape = campaign.catalog, trial.shape
        hours = lifetime / 3600.0
        instance_cost = shape.nodes * catalog.instances[shape.instance_type].hourly * hours
        monthly_volume = sum(role_monthly_costs(catalog, shape).values())  # every volume of a node
        volume_cost = shape.nodes * monthly_volume / catalog.hours_per_month * hours
    return TrialCost(trial.cluster_key, trial.shape.nodes, load, lifetime, instance_cost, volume_cost)


def wall_time_s(durations: list[float], parallelism: int) -> float:
    """Makespan of jobs started in order on `parallelism` slots, each taking the first slot that frees."""
    slots = [0.0] * max(1, parallelism)
    for duration in durations:
        heapq.heapreplace(slots, slots[0] + duration)
    return max(slots)


def campaign_cost(campaign: Campaign, parallelism: int = 1, only: list[str] | None = None,
                  scenarios: list[str] | None = None) -> CampaignCost:
    """The campaign's worst-case cost and time: every trial (config x repeat), every scenario."""
    trials = tuple(trial_cost(campaign, t, scenarios) for t in plan_trials(campaign, only))
    return CampaignCost(campaign.name, campaign.deployment, campaign.catalog.currency, parallelism,
                        wall_time_s([t.lifetime_s for t in trials], parallelism), trials)


def budget_problems(campaign: Campaign) -> list[Problem]:
    """The budget's verdict on the campaign's planned worst case, with the figures."""
    budget = campaign.budget
    if budget is None:
        return []
    cost = campaign_cost(campaign, budget.parallelism)
    figures = cost.summary()
    problems = []
    if budget.max_cost_usd is not None and cost.total_cost > budget.max_cost_usd:
        problems.append(Problem("budget.max_cost_usd", f"the campaign's worst case costs {cost.total_cost:,.2f} "
                                                       f"{cost.currency}, over the budget of "
                                                       f"{budget.max_cost_usd:,.2f} ({figures})"))
    if budget.max_hours is not None and cost.wall_hours > budget.max_hours:
        problems.append(Problem("budget.max_hours", f"the campaign's worst case takes {cost.wall_hours:,.1f} h at "
                                                    f"parallelism {budget.parallelism}, over the budget of "
                                                    f"{budget.max_hours:g} h ({figures})"))
    return problems


def check_budget(campaign: Campaign) -> Campaign:
    """The campaign, or a SpecError (field paths `budget.*`, with the figures) when its worst case is over budget.
    Every entry point that accepts a spec for running calls this before anything is provisioned."""
    problems = budget_problems(campaign)
    if problems:
        raise SpecError(problems, campaign.name)
    return campaign
