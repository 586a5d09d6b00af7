"""Campaign plan: the concrete configs, their trials (config x repeat, one fresh cluster each) and runs
(trial x scenario) of a campaign."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from sizing.cost import cluster_monthly_cost
from sizing.spec import Campaign, ClusterShape
from sizing.timeline import Timeline, expand

# Local clusters get a port block each, so two configs can run side by side on one machine.
# The per-node layout inside a block is the Terraform local module's business (terraform/modules/local_cluster).
LOCAL_PORT_FIRST = 21000
LOCAL_PORT_BLOCK = 50


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
        return LOCAL_PORT_FIRST + LOCAL_PORT_BLOCK * self.slot

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
        }


@dataclass(frozen=True)
class Trial:
    """One cluster's worth of a campaign run: a config and one of its repeats on a fresh cluster, with what
    every task of its group needs (so none re-plans). Travels between Airflow tasks as to_dict()/from_dict()."""

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

    @property
    def local_port_base(self) -> int:
        return LOCAL_PORT_FIRST + LOCAL_PORT_BLOCK * self.slot

    @property
    def cluster_key(self) -> str:
        return cluster_key(self.config_id, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; also carries the derived cluster_key and local_port_base for templates and UI labels."""
        return {**asdict(self), "scenarios": list(self.scenarios), "cluster_key": self.cluster_key,
                "local_port_base": self.local_port_base}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trial:
        return cls(campaign=data["campaign"], config_id=data["config_id"], repeat=int(data["repeat"]),
                   repeats=int(data["repeats"]), slot=int(data["slot"]), deployment=data["deployment"],
                   run_label=data["run_label"], spec_path=data["spec_path"], scenarios=tuple(data["scenarios"]),
                   max_parallel_configs=int(data["max_parallel_configs"]))


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
        ConfigPlan(campaign.name, shape.config_id, shape, slot,
                   cluster_monthly_cost(campaign.catalog, shape.nodes, shape.instance_type, shape.volume))
        for slot, shape in enumerate(campaign.clusters)
        if not only or shape.config_id in only
    ]


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


def plan_runs(campaign: Campaign, config: ConfigPlan, scenarios: list[str] | None = None) -> list[RunPlan]:
    if scenarios:
        for name in scenarios:
            campaign.scenario(name)  # raises KeyError naming the campaign
    return [
        RunPlan(campaign.name, config.config_id, scenario.name, repeat,
                expand(scenario, config.shape.nodes, campaign.seed))
        for scenario in campaign.scenarios
        if not scenarios or scenario.name in scenarios
        for repeat in range(1, campaign.repeats + 1)
    ]
