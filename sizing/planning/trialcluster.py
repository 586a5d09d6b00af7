"""What one trial's cluster tasks need of the campaign (`ClusterRequest`), resolved once when the run is planned
(sizing.planning.runplan.plan_run_trials) and carried in the trial: terraform_apply, wait_healthy, run_scenarios and
terraform_destroy read it from there, so none fetches and parses the spec again (issue 35: it was about seven
times per trial), and a task on another worker needs nothing but the trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sizing.campaign import Campaign, ClusterShape
from sizing.campaign.envelopes import config_envelopes
from sizing.campaign.model import LOOPBACK
from sizing.resources.cost import Volume
from sizing.resources.disks import RoleVolume
from sizing.resources.existing import CampaignObjects, Endpoint, ExistingCluster, ExistingNode, campaign_objects
from sizing.resources.scalemodel import ClusterEnvelopes


@dataclass(frozen=True)
class ClusterRequest:
    """One config's cluster as its stack, health check, load generator and teardown need it."""

    shape: ClusterShape
    monthly_cost: float
    broker_config: Mapping[str, Any]  # rabbitmq.conf keys, as the spec gives them
    volume_defaults: Mapping[str, Volume]  # the catalog's provisioning of each volume type the shape uses
    lifetime_s: float  # planned seconds up (sizing.planning.plan.trial_lifetime_s): the basis of an aws expiry tag
    envelopes: ClusterEnvelopes | None = None  # local with a scale model: what its nodes and generator run in
    existing: ExistingCluster | None = None  # deployment existing: the running cluster
    objects: CampaignObjects | None = None  # deployment existing: what the campaign declares there (teardown)
    network: str = LOOPBACK  # local: the campaign's network (sizing.campaign.model.NETWORKS)

    def to_dict(self) -> dict[str, Any]:
        return {"shape": shape_to_dict(self.shape), "monthly_cost": self.monthly_cost,
                "broker_config": dict(self.broker_config),
                "volume_defaults": {name: asdict(v) for name, v in self.volume_defaults.items()},
                "lifetime_s": self.lifetime_s,
                "envelopes": None if self.envelopes is None else self.envelopes.to_dict(),
                "existing": None if self.existing is None else _existing_to_dict(self.existing),
                "objects": None if self.objects is None else asdict(self.objects), "network": self.network}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterRequest:
        objects = data.get("objects")
        return cls(shape=shape_from_dict(data["shape"]), monthly_cost=float(data["monthly_cost"]),
                   broker_config=dict(data["broker_config"]),
                   volume_defaults={name: Volume(**v) for name, v in data["volume_defaults"].items()},
                   lifetime_s=float(data["lifetime_s"]),
                   envelopes=None if data.get("envelopes") is None else ClusterEnvelopes.from_dict(data["envelopes"]),
                   existing=None if data.get("existing") is None else _existing_from_dict(data["existing"]),
                   objects=None if objects is None else CampaignObjects(
                       tuple(objects["queues"]), tuple(objects["policies"]), tuple(objects.get("exchanges") or ())),
                   network=data.get("network", LOOPBACK))


def cluster_request(campaign: Campaign, shape: ClusterShape, monthly_cost: float, lifetime_s: float) -> ClusterRequest:
    """The request of one of the campaign's configs."""
    types = {item.volume.type for item in shape.volumes}
    defaults = {name: Volume(name, price.size_gb, price.iops, price.throughput_mbps)
                for name, price in campaign.catalog.volumes.items() if name in types}
    existing = campaign.existing if campaign.deployment == "existing" else None
    objects = campaign_objects(campaign) if existing is not None else None
    return ClusterRequest(shape, monthly_cost, dict(campaign.broker_config), defaults, lifetime_s,
                          config_envelopes(campaign, shape), existing, objects, campaign.network)


def shape_to_dict(shape: ClusterShape) -> dict[str, Any]:
    return {"nodes": shape.nodes, "instance_type": shape.instance_type, "volume": asdict(shape.volume),
            "dedicated": [{"role": v.role, "volume": asdict(v.volume)} for v in shape.dedicated],
            "filesystem": shape.filesystem, "rabbitmq_version": shape.rabbitmq_version}


def shape_from_dict(data: Mapping[str, Any]) -> ClusterShape:
    return ClusterShape(nodes=int(data["nodes"]), instance_type=data["instance_type"], volume=Volume(**data["volume"]),
                        dedicated=tuple(RoleVolume(v["role"], Volume(**v["volume"])) for v in data["dedicated"]),
                        filesystem=data.get("filesystem"), rabbitmq_version=data.get("rabbitmq_version"))


def _existing_to_dict(existing: ExistingCluster) -> dict[str, Any]:
    return {**asdict(existing), "ctl_env": dict(existing.ctl_env)}


def _existing_from_dict(data: Mapping[str, Any]) -> ExistingCluster:
    def command(value: Any) -> tuple[str, ...] | None:
        return None if value is None else tuple(value)

    nodes = tuple(ExistingNode(amqp=Endpoint(**n["amqp"]), management=Endpoint(**n["management"]), name=n["name"],
                               prometheus_port=int(n["prometheus_port"]), pid_file=n["pid_file"],
                               start_cmd=command(n["start_cmd"]), stop_cmd=command(n["stop_cmd"]),
                               ctl_cmd=command(n["ctl_cmd"]))
                  for n in data["nodes"])
    return ExistingCluster(nodes=nodes, connection=data["connection"], vhost=data["vhost"], local=bool(data["local"]),
                           monthly_cost=data["monthly_cost"], ctl_env=dict(data["ctl_env"]))
