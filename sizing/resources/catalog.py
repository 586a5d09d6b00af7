"""Price catalogs: instance and volume prices, loaded from `catalogs/<name>.yaml` and validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizing.documents.fields import Fields, Problem, SpecError
from sizing.documents.yamlload import document_problems, read_yaml_file

CATALOG_DIR = Path(__file__).resolve().parents[2] / "catalogs"


@dataclass(frozen=True)
class InstancePrice:
    name: str
    vcpus: int
    memory_gib: float
    hourly: float
    network_gbps: float | None = None  # sustained (baseline) network bandwidth; None = unknown (rules ignore it)
    # The instance's own ceiling on EBS traffic, all its volumes together (baseline, as for the network)
    ebs_mbps: float | None = None  # Mbit/s
    ebs_iops: int | None = None


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
    # Performance limits (the bottleneck rule's disk limits; sizing.resources.catalog.volume_limits); None = unknown.
    # They scale with the volume's size where AWS says so: gp2 3 IOPS per GiB (at least min_iops), st1/sc1 a
    # baseline of mib_s_per_tib, io1 256 KiB of throughput per provisioned IOPS; capped at max_iops / max_mib_s.
    max_iops: int | None = None
    max_mib_s: float | None = None
    iops_per_gib: float | None = None
    min_iops: int | None = None
    mib_s_per_tib: float | None = None
    kib_per_iops: float | None = None
    small_gib: int | None = None  # at or below this size the throughput cap is small_mib_s (gp2: 170 GiB, 128 MiB/s)
    small_mib_s: float | None = None


@dataclass(frozen=True)
class Catalog:
    name: str
    currency: str
    hours_per_month: float
    instances: Mapping[str, InstancePrice]
    volumes: Mapping[str, VolumePrice]


def parse_catalog(data: Any, source: str = "catalog") -> Catalog:
    problems = document_problems(data)
    if problems:
        raise SpecError(problems, source)
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
            ebs_mbps=f.number("ebs_mbps", None, minimum=0, exclusive=True),
            ebs_iops=f.int("ebs_iops", None, minimum=1),
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
            iops_per_gib=f.number("iops_per_gib", None, minimum=0, exclusive=True),
            min_iops=f.int("min_iops", None, minimum=1),
            mib_s_per_tib=f.number("mib_s_per_tib", None, minimum=0, exclusive=True),
            kib_per_iops=f.number("kib_per_iops", None, minimum=0, exclusive=True),
            small_gib=f.int("small_gib", None, minimum=1),
            small_mib_s=f.number("small_mib_s", None, minimum=0, exclusive=True),
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
    return parse_catalog(read_yaml_file(path, "catalog file"), source=str(path))


MIB = 1024 * 1024


@dataclass(frozen=True)
class VolumeLimits:
    """What one volume can do at most: IOPS and throughput (10^6 bytes/s, the unit the analysis reports)."""

    iops: float | None
    mb_s: float | None


def volume_limits(price: VolumePrice | None, size_gb: int | None = None, iops: int | None = None,
                  throughput_mib_s: float | None = None) -> VolumeLimits:
    """One volume's limits at its own size and provisioning (a config's volume overrides the catalog default;
    sizes are GiB, as EBS sizes them).

    IOPS: what was provisioned (io1, gp3), else iops_per_gib x size (gp2: 3 per GiB, at least min_iops), capped at
    max_iops. Throughput: what was provisioned (gp3), else mib_s_per_tib x size (st1/sc1: their baseline: a 1 TiB
    st1 sustains 40 MiB/s, a 7 TiB one 280), else kib_per_iops x IOPS (io1: 256 KiB per IOPS), else small_mib_s at
    or below small_gib (gp2: 128 MiB/s up to 170 GiB), capped at max_mib_s."""
    if price is None:
        return VolumeLimits(None, None)
    size = size_gb or price.size_gb
    provisioned = iops if iops is not None else price.iops
    if provisioned is not None and price.iops_per_gib is None:
        max_iops: float | None = provisioned
    elif price.iops_per_gib is not None:
        max_iops = max(price.iops_per_gib * size, price.min_iops or 0)
    else:
        max_iops = price.max_iops
    if max_iops is not None and price.max_iops is not None:
        max_iops = min(max_iops, price.max_iops)
    provisioned_mib_s = throughput_mib_s if throughput_mib_s is not None else price.throughput_mbps
    if provisioned_mib_s is not None:
        mib_s: float | None = provisioned_mib_s
    elif price.mib_s_per_tib is not None:
        mib_s = price.mib_s_per_tib * size / 1024
    elif price.kib_per_iops is not None and max_iops is not None:
        mib_s = price.kib_per_iops * max_iops / 1024
    elif price.small_gib is not None and size <= price.small_gib:
        mib_s = price.small_mib_s
    else:
        mib_s = price.max_mib_s
    if mib_s is not None and price.max_mib_s is not None:
        mib_s = min(mib_s, price.max_mib_s)
    return VolumeLimits(float(max_iops) if max_iops is not None else None,
                        mib_s * MIB / 1e6 if mib_s is not None else None)


@dataclass(frozen=True)
class ResourceLimits:
    """What one node of a config can do at most, from the catalog (sizing.criteria.rules' bottleneck limits): its
    network, each of its volumes (by role: sizing.resources.disks) and the instance's own EBS ceiling over all of
    them."""

    network_mbit_s: float | None  # per direction
    volume_iops: float | None  # the data volume
    volume_mb_s: float | None  # 10^6 bytes/s, the unit the analysis reports disk throughput in
    roles: dict[str, VolumeLimits] = field(default_factory=dict)  # every volume of the node, by role
    ebs_iops: float | None = None
    ebs_mb_s: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"network_mbit_s": self.network_mbit_s, "volume_iops": self.volume_iops,
                "volume_mb_s": self.volume_mb_s, "ebs_iops": self.ebs_iops, "ebs_mb_s": self.ebs_mb_s,
                **{f"{role}_iops": v.iops for role, v in self.roles.items()},
                **{f"{role}_mb_s": v.mb_s for role, v in self.roles.items()}}


def resource_limits(catalog: Catalog, instance_type: str, volumes: Mapping[str, Any]) -> ResourceLimits:
    """A config's limits: the instance's network bandwidth and EBS ceiling, and each volume's limits at its size
    and provisioning. `volumes`: role -> sizing.resources.cost.Volume (data first)."""
    instance = catalog.instances.get(instance_type)
    gbps = instance.network_gbps if instance else None
    roles = {role: volume_limits(catalog.volumes.get(v.type), v.size_gb, v.iops, v.throughput_mbps)
             for role, v in volumes.items()}
    data = roles.get("data", VolumeLimits(None, None))
    ebs_mbps = instance.ebs_mbps if instance else None
    return ResourceLimits(network_mbit_s=gbps * 1000 if gbps is not None else None, volume_iops=data.iops,
                          volume_mb_s=data.mb_s, roles=roles,
                          ebs_iops=float(instance.ebs_iops) if instance and instance.ebs_iops else None,
                          ebs_mb_s=ebs_mbps / 8 if ebs_mbps is not None else None)
