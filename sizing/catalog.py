"""Price catalogs: instance and volume prices, loaded from `catalogs/<name>.yaml` and validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sizing.fields import Fields, Problem, SpecError

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalogs"


@dataclass(frozen=True)
class InstancePrice:
    name: str
    vcpus: int
    memory_gib: float
    hourly: float
    network_gbps: float | None = None  # sustained (baseline) network bandwidth; None = unknown (rules ignore it)


@dataclass(frozen=True)
class VolumePrice:
    """A volume type's default provisioning and its price.

    Either `monthly` (one figure per volume, as the 2020 seed gives io1) or components: per GB-month,
    per provisioned IOPS-month above `free_iops`, per MB/s-month above `free_mbps` (gp3).
    """

    name: str
    size_gb: int
    iops: int | None = None
    throughput_mbps: int | None = None
    monthly: float | None = None
    per_gb_month: float = 0.0
    per_iops_month: float = 0.0
    free_iops: int = 0
    per_mbps_month: float = 0.0
    free_mbps: int = 0
    # Performance limits at `size_gb` (the bottleneck rule's disk limits); None = unknown.
    max_iops: int | None = None
    max_mib_s: float | None = None


@dataclass(frozen=True)
class Catalog:
    name: str
    currency: str
    hours_per_month: float
    instances: Mapping[str, InstancePrice]
    volumes: Mapping[str, VolumePrice]


def parse_catalog(data: Any, source: str = "catalog") -> Catalog:
    problems: list[Problem] = []
    root = Fields(data, "", problems)
    name = root.str("name")
    currency = root.str("currency", "USD")
    hours = root.number("hours_per_month", minimum=0, exclusive=True)
    instances: dict[str, InstancePrice] = {}
    inst_root = root.sub("instances")
    for key in inst_root.data:
        f = inst_root.sub(key)
        price = InstancePrice(
            name=key,
            vcpus=f.int("vcpus", minimum=1) or 0,
            memory_gib=f.number("memory_gib", minimum=0) or 0.0,
            hourly=f.number("hourly", minimum=0) or 0.0,
            network_gbps=f.number("network_gbps", None, minimum=0, exclusive=True),
        )
        f.done()
        instances[key] = price
    if not instances:
        inst_root.fail("", "must list at least one instance type")
    volumes: dict[str, VolumePrice] = {}
    vol_root = root.sub("volumes")
    for key in vol_root.data:
        f = vol_root.sub(key)
        volume = VolumePrice(
            name=key,
            size_gb=f.int("size_gb", minimum=1) or 0,
            iops=f.int("iops", None, minimum=0),
            throughput_mbps=f.int("throughput_mbps", None, minimum=0),
            monthly=f.number("monthly", None, minimum=0),
            per_gb_month=f.number("per_gb_month", 0.0, minimum=0) or 0.0,
            per_iops_month=f.number("per_iops_month", 0.0, minimum=0) or 0.0,
            free_iops=f.int("free_iops", 0, minimum=0) or 0,
            per_mbps_month=f.number("per_mbps_month", 0.0, minimum=0) or 0.0,
            free_mbps=f.int("free_mbps", 0, minimum=0) or 0,
            max_iops=f.int("max_iops", None, minimum=1),
            max_mib_s=f.number("max_mib_s", None, minimum=0, exclusive=True),
        )
        if volume.monthly is None and volume.per_gb_month == 0 and volume.per_iops_month == 0:
            f.fail("", "needs a price: `monthly` or `per_gb_month`/`per_iops_month`")
        f.done()
        volumes[key] = volume
    root.done()
    if problems:
        raise SpecError(problems, source)
    return Catalog(name or "", currency or "USD", hours or 0.0, instances, volumes)


def load_catalog(name_or_path: str | Path) -> Catalog:
    """Load a catalog by name (`catalogs/<name>.yaml`) or by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = CATALOG_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in CATALOG_DIR.glob("*.yaml")))
        raise SpecError([Problem("catalog", f"no catalog {str(name_or_path)!r} (known: {known})")], "catalog")
    return parse_catalog(yaml.safe_load(path.read_text()), source=str(path))


def known_catalogs() -> list[str]:
    return sorted(p.stem for p in CATALOG_DIR.glob("*.yaml"))


MIB = 1024 * 1024


@dataclass(frozen=True)
class ResourceLimits:
    """What one node of a config can do at most, from the catalog (sizing.rules' bottleneck limits)."""

    network_mbit_s: float | None  # per direction
    volume_iops: float | None
    volume_mb_s: float | None  # 10^6 bytes/s, the unit the analysis reports disk throughput in

    def to_dict(self) -> dict[str, float | None]:
        return {"network_mbit_s": self.network_mbit_s, "volume_iops": self.volume_iops,
                "volume_mb_s": self.volume_mb_s}


def resource_limits(catalog: Catalog, instance_type: str, volume_type: str, iops: int | None = None,
                    throughput_mib_s: float | None = None) -> ResourceLimits:
    """A config's limits: the instance's network bandwidth and its volume's IOPS/throughput (a provisioned
    figure of the config's volume wins over the catalog's default)."""
    instance = catalog.instances.get(instance_type)
    volume = catalog.volumes.get(volume_type)
    gbps = instance.network_gbps if instance else None
    max_iops = iops if iops is not None else (volume.max_iops if volume else None)
    mib_s = throughput_mib_s if throughput_mib_s is not None else (volume.max_mib_s if volume else None)
    return ResourceLimits(network_mbit_s=gbps * 1000 if gbps is not None else None,
                          volume_iops=float(max_iops) if max_iops is not None else None,
                          volume_mb_s=mib_s * MIB / 1e6 if mib_s is not None else None)
