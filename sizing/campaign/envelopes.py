"""A campaign on the local scale model (sizing.resources.scalemodel): each config's envelopes and the limits a node of
it has, the campaign on this host's calibration, and what its envelopes need of the machine at their peak.

Here, not in sizing.resources.scalemodel, because these read a `Campaign`: the scale model stands below the campaign
model (which takes its factors from it), so it knows catalogs, volumes and factors only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sizing.campaign.model import NAMESPACES, Campaign, ClusterShape
from sizing.resources.catalog import ResourceLimits, resource_limits
from sizing.resources.scalemodel import ClusterEnvelopes, Demand, cluster_envelopes, peak_demand, scaled_limits


def config_envelopes(campaign: Campaign, shape: ClusterShape) -> ClusterEnvelopes | None:
    """One home for "does this config run in envelopes": its nodes' and load generator's envelopes on the local
    target under a scale model; None when scale_model is off or the target is not local (nodes run as they are). Its
    nodes' links have an envelope where each node has a namespace of its own (`network: namespaces`)."""
    if campaign.deployment != "local" or campaign.scale_model is None or campaign.catalog is None:
        return None
    return cluster_envelopes(campaign.catalog, shape.instance_type, shape.volumes, campaign.scale_model,
                             shape.rabbitmq_version, campaign.broker_config, own_link=campaign.network == NAMESPACES)


def with_host_speed(campaign: Campaign, speed: float) -> Campaign:
    """The campaign on this host's calibration (sizing.resources.calibration): its scale model's host_speed set
    (unchanged without a scale model)."""
    if campaign.scale_model is None or campaign.scale_model.host_speed == speed:
        return campaign
    return replace(campaign, scale_model=replace(campaign.scale_model, host_speed=speed))


def config_limits(campaign: Campaign, shape: ClusterShape) -> ResourceLimits:
    """One home for "what can a node of this config do at most": the scaled envelope on the local scale model, the
    catalog's cloud figures everywhere else."""
    envelopes = config_envelopes(campaign, shape)
    if envelopes is not None:
        return scaled_limits(envelopes.node)
    return resource_limits(campaign.catalog, shape.instance_type, {v.role: v.volume for v in shape.volumes})


def campaign_demand(campaign: Campaign, parallelism: int | None = None,
                    configs: Iterable[str] = ()) -> Demand | None:
    """What a local campaign's envelopes need at their peak (None: no scale model), with `parallelism` clusters up at
    once (default: its budget's; a run's max_parallel_configs overrides it), of `configs` only if given (a run's)."""
    chosen = set(configs)
    envelopes = {shape.config_id: (config_envelopes(campaign, shape), shape.nodes) for shape in campaign.clusters
                 if not chosen or shape.config_id in chosen}
    if campaign.scale_model is None or any(env is None for env, _ in envelopes.values()):
        return None
    clusters = {config: (env.node, nodes) for config, (env, nodes) in envelopes.items()}
    if parallelism is None:
        parallelism = campaign.budget.parallelism if campaign.budget else 1
    return peak_demand(clusters, parallelism, campaign.scale_model, campaign.repeats)
