"""Cost model: monthly cluster cost and cost per 1000 msg/s per month (seed 000's figure of merit).

One implementation, used by the Spark leaderboards, the report and the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sizing.resources.catalog import Catalog, VolumePrice


@dataclass(frozen=True)
class Volume:
    """One node's data volume as provisioned: type plus optional overrides of the catalog defaults."""

    type: str
    size_gb: int | None = None
    iops: int | None = None
    throughput_mbps: int | None = None


def volume_monthly_cost(price: VolumePrice, volume: Volume) -> float:
    size = volume.size_gb or price.size_gb
    iops = volume.iops if volume.iops is not None else (price.iops or 0)
    mbps = volume.throughput_mbps if volume.throughput_mbps is not None else (price.throughput_mbps or 0)
    customised = (size, iops, mbps) != (price.size_gb, price.iops or 0, price.throughput_mbps or 0)
    if price.monthly is not None and not customised:
        return price.monthly
    if price.monthly is not None:
        # A flat per-volume price scales with size; the catalog carries no component prices for it.
        return price.monthly * size / price.size_gb
    return (
        size * price.per_gb_month
        + max(0, iops - price.free_iops) * price.per_iops_month
        + max(0, mbps - price.free_mbps) * price.per_mbps_month
    )


def node_monthly_cost(catalog: Catalog, instance_type: str, volume: Volume | Sequence[Volume]) -> float:
    """One node: its instance plus every volume it carries (one, or one per role: sizing/resources/disks.py)."""
    volumes = (volume,) if isinstance(volume, Volume) else tuple(volume)
    instance = catalog.instances[instance_type]
    return instance.hourly * catalog.hours_per_month + sum(
        volume_monthly_cost(catalog.volumes[v.type], v) for v in volumes)


def cluster_monthly_cost(catalog: Catalog, nodes: int, instance_type: str,
                         volume: Volume | Sequence[Volume]) -> float:
    return nodes * node_monthly_cost(catalog, instance_type, volume)


def cost_per_1000_msgs(monthly_cost: float, rate_msgs_per_s: float) -> float:
    """Monthly cost per 1000 msg/s of throughput: monthly cost / (rate / 1000)."""
    if rate_msgs_per_s <= 0:
        raise ValueError(f"rate must be positive to price throughput, got {rate_msgs_per_s}")
    return monthly_cost / (rate_msgs_per_s / 1000.0)
