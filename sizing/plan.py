"""Campaign plan: the concrete configs (clusters) and runs (config x scenario x repeat) of a campaign."""

from __future__ import annotations

from dataclasses import dataclass

from sizing.cost import cluster_monthly_cost
from sizing.spec import Campaign, ClusterShape
from sizing.timeline import Timeline, expand

# Local clusters get a port block each, so two configs can run side by side on one machine.
# The per-node layout inside a block is the Terraform local module's business (terraform/modules/local_cluster).
LOCAL_PORT_FIRST = 21000
LOCAL_PORT_BLOCK = 50


@dataclass(frozen=True)
class ConfigPlan:
    campaign: str
    config_id: str
    shape: ClusterShape
    slot: int  # position in the campaign; picks the local port block
    monthly_cost: float

    @property
    def local_port_base(self) -> int:
        return LOCAL_PORT_FIRST + LOCAL_PORT_BLOCK * self.slot

    def as_dict(self) -> dict[str, object]:
        return {
            "campaign": self.campaign, "config_id": self.config_id, "nodes": self.shape.nodes,
            "instance_type": self.shape.instance_type, "volume_type": self.shape.volume.type,
            "volume_size_gb": self.shape.volume.size_gb, "volume_iops": self.shape.volume.iops,
            "volume_throughput_mbps": self.shape.volume.throughput_mbps, "slot": self.slot,
            "local_port_base": self.local_port_base, "monthly_cost": self.monthly_cost,
        }


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
