"""The local scale model: a config's cloud resources, scaled to one machine (DESIGN.md §8).

On the local target every node of a config runs inside an envelope derived from its instance and volume types: a
CPU quota from the instance's vCPUs, a memory limit from its RAM plus the broker's idle footprint (node_envelope says
how the broker's high watermark follows), and every volume of the node's layout its own
filesystem on its own loop device, throttled to the volume type's IOPS and MiB/s at its size (sizing.resources.catalog
.volume_limits). The load generator gets an envelope of its own so that it and the nodes never compete for the
same share. One table of factors (`ScaleFactors`) maps cloud resources to local ones; one factor per resource, so
the catalog's ratios between instance types and between volume types are kept.

A local figure measured on the scale model is never a cloud figure: every table that holds measurements and the
report say which factors it was measured with (`ScaleFactors.describe`).

Pure: the envelope is computed here; adapters/envelope.py applies it (cgroups, loop devices, throttles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from sizing.resources.catalog import Catalog, ResourceLimits, VolumeLimits, volume_limits
from sizing.resources.disks import RoleVolume
from sizing.resources.versions import TARGET_DEFAULT_VERSION, series

MIB = 1024 * 1024
GIB = 1024 * MIB

# The CFS period of every envelope. Short, so that a small quota is spent in short slices (a node held at 0.2 cores
# runs 4 ms of every 20, not 20 ms of every 100: its latency jitter stays small); at least 1 ms of quota per period
# (the kernel's floor) bounds the smallest envelope at MIN_CORES.
CPU_PERIOD_US = 20_000
MIN_QUOTA_US = 1_000
MIN_CORES = MIN_QUOTA_US / CPU_PERIOD_US
# What an idle broker holds, by its own figure (management API mem_used), per RabbitMQ series, in MiB: a 1-node
# local cluster with the management and Prometheus plugins (as every node runs), the largest of 11-12 reads over 60 s
# after boot, rounded up (benchmarks/idle_memory.py; BENCHMARKS.md "Idle broker memory per version"). A cloud node
# carries the same fixed cost against gigabytes; unscaled, it filled 0.39 of a c5.2xlarge envelope's watermark before
# any load (issue 44), so every envelope holds it on top of the scaled RAM (node_envelope).
IDLE_FOOTPRINT_MIB: dict[str, float] = {"3.10": 160.0, "4.0": 140.0}  # measured 3.10.8: 134-159; 4.0.5: 112-133
# RabbitMQ's default vm_memory_high_watermark.relative: 0.4 up to 3.13, 0.6 from 4.0 on (default_watermark); and the
# invariant issue 44 asks of every envelope: idle, the broker holds at most this share of its watermark
# (envelope_problems, checked when a campaign is parsed).
DEFAULT_WATERMARK, DEFAULT_WATERMARK_4 = 0.4, 0.6
MAX_IDLE_WATERMARK_SHARE = 0.25
# The load generator's envelope floors (scale_model.generator_*): below them its envelope cannot run it at all.
# Memory: its runner and at least one pika worker process (spawned), each ~46 MiB RSS once pika and numpy are
# imported (measured here, CPython 3.11), before any histogram or frame buffer: 128 MiB is both with a little room.
MIN_GENERATOR_MEMORY_MIB = 128
MIN_GENERATOR_CORES = MIN_CORES  # a smaller quota would be raised to the kernel's floor silently
GENERATOR_FLOORS: dict[str, tuple[float, str]] = {
    "generator_cores": (MIN_GENERATOR_CORES, f"the smallest CPU quota the kernel sets ({MIN_QUOTA_US} us of every "
                                             f"{CPU_PERIOD_US} us)"),
    "generator_memory_mib": (MIN_GENERATOR_MEMORY_MIB, "the generator's runner and one pika worker process hold "
                                                       "~46 MiB each before any load"),
}
# A volume's image is a sparse file: its size only bounds what the broker may store (the disk alarm's free space),
# it costs no disk until written. Clamped so that a small cloud volume still holds a quorum WAL file (512 MiB at most
# before it rolls over) and a large one does not make mkfs write gigabytes of metadata.
MIN_IMAGE_MIB = 2 * 1024
MAX_IMAGE_MIB = 32 * 1024


@dataclass(frozen=True)
class ScaleFactors:
    """Cloud resource -> local resource, one factor each (a campaign's `scale_model:` overrides any of them).

    Chosen (README "The local scale model", and BENCHMARKS.md for the measurements behind them) so that a
    3-node c5.2xlarge cluster and the load generator fit a 2-core machine with room for Airflow and the S3 server.
    """

    cpu_cores_per_vcpu: float = 0.025  # local cores per cloud vCPU: c5.2xlarge (8 vCPUs) -> 0.2 cores
    # Local MiB per cloud GiB of RAM, the version's idle footprint on top: c5.2xlarge (16 GiB) -> 2688 MiB + idle.
    # 168: the smallest multiple of 8 that keeps every instance type of the shipped catalogs within
    # MAX_IDLE_WATERMARK_SHARE (min_memory_mib_per_gib: 3.10's 160 MiB on the 7.2 GiB n1-highcpu-8 needs 166.7).
    memory_mib_per_gib: float = 168.0
    disk_divisor: float = 10.0  # every volume's IOPS and MiB/s, and the instance's EBS ceiling, divided by this
    volume_mib_per_gib: float = 4.0  # image size per cloud GiB (clamped to MIN_IMAGE_MIB..MAX_IMAGE_MIB)
    generator_cores: float = 1.0  # the load generator's own CPU envelope (all its worker processes together)
    generator_memory_mib: float = 2048.0
    # Local Mbit/s of a node's link, each way, per cloud Gbps of its instance's baseline bandwidth (issue 46), set where
    # each node has a link of its own (`network: namespaces`). None: follows the CPU, 1000 x cpu_cores_per_vcpu, so
    # that a node's bandwidth shrinks as its broker work does (0.025: c5.2xlarge's 2.5 Gbps -> 62.5 Mbit/s) and a
    # message costs the same share of each. Not divided by the host's speed: a byte on a link is a byte on any host.
    network_mbit_per_gbps: float | None = None
    # Not a campaign's to set: this host's calibration (sizing.resources.calibration), a core here in reference cores,
    # applied at admission (adapters.calibration). `cpu_cores_per_vcpu` is in reference cores; a node gets that /
    # host_speed of this host's cores, so that a scaled vCPU does the same broker work on any host. 1.0: uncalibrated.
    host_speed: float = 1.0
    # Which rule chose the model factors (MODEL_FACTORS): DEFAULT_MODEL, FITTED_MODEL or OWN_MODEL (fitted_factors).
    rule: str = "default"

    def describe(self) -> str:
        """How every local figure names its scale (tables, report header)."""
        host = ("uncalibrated host" if self.host_speed == 1.0 else
                f"host calibration: 1 core here = {self.host_speed:.2f} reference cores")
        return (f"scale model ({MODEL_RULES.get(self.rule, self.rule)}): 1 vCPU = {self.cpu_cores_per_vcpu:g} "
                f"reference cores ({host}), 1 GiB RAM = {self.memory_mib_per_gib:g} MiB + the broker's idle "
                f"footprint, volume IOPS and MiB/s / {self.disk_divisor:g}, 1 Gbps = {self.link_mbit(1.0):g} "
                f"Mbit/s where each node has a link; load generator {self.generator_cores:g} cores")

    def node_cores(self, vcpus: float) -> float:
        """This host's cores for a node of `vcpus` cloud vCPUs."""
        return vcpus * self.cpu_cores_per_vcpu / self.host_speed

    def link_mbit(self, gbps: float) -> float:
        """A node's link, Mbit/s each way, for an instance of `gbps` cloud bandwidth (network_mbit_per_gbps)."""
        per_gbps = self.network_mbit_per_gbps
        return gbps * (1000 * self.cpu_cores_per_vcpu if per_gbps is None else per_gbps)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScaleFactors:
        def value(name: str) -> Any:
            raw = data[name]
            return str(raw) if name == "rule" else None if raw is None else float(raw)

        return cls(**{f.name: value(f.name) for f in fields(cls) if f.name in data})

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The factors a campaign's `scale_model:` may set (the host's calibration is measured, never given; the
        rule is the parser's record of where the model factors came from)."""
        return tuple(f.name for f in fields(cls) if f.name not in ("host_speed", "rule"))


DEFAULT_FACTORS = ScaleFactors()
# The two factors that model a cloud instance (the others shape the disks' images and the load generator), and the
# one rule that chooses them for every campaign that does not set them (fitted_factors): the default, or, where the
# campaign's largest configs up at once would not fit MODEL_MACHINE, the largest factor on FACTOR_GRID that fits.
MODEL_FACTORS = ("cpu_cores_per_vcpu", "memory_mib_per_gib")
FACTOR_GRID = {"cpu_cores_per_vcpu": 0.0005, "memory_mib_per_gib": 8.0}
DEFAULT_MODEL, FITTED_MODEL, OWN_MODEL = "default", "fitted", "own"
MODEL_RULES = {DEFAULT_MODEL: "the default model",
               FITTED_MODEL: "the default model, fitted: the largest factors at which the campaign's largest configs "
                             "fit the model machine",
               OWN_MODEL: "the campaign's own factors: a what-if, not the default model"}
# The rabbitmq.conf key through which a node is told its envelope's memory (node.sh writes it): a campaign's own
# broker_config may not set it as well.
MEMORY_OVERRIDE = "total_memory_available_override_value"
OFF = "off"  # `scale_model: off`: every node shares the machine's cores, memory and one filesystem (before issue 31)


def measured_on(factors: ScaleFactors | None, deployment: str) -> str:
    """The one wording of what a measurement was taken on, for every table's `measured_on` column and the report."""
    if deployment != "local":
        return deployment
    if factors is None:
        return "local, no scale model: every node shares the machine's cores, memory and one filesystem"
    return f"local {factors.describe()}"


@dataclass(frozen=True)
class VolumeEnvelope:
    """One volume of a node, as the loop device that stands in for it: its size and its throttles (None: the catalog
    gives no such limit, so none is set). `*_bps` are bytes per second, as blkio and io.max take them."""

    role: str
    type: str
    image_mib: int
    iops: int | None
    bps: int | None
    cloud_iops: float | None  # the cloud volume's own limits, for the record
    cloud_mb_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VolumeEnvelope:
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class NodeEnvelope:
    """What one node of a config may use locally. Every node of a config gets the same envelope."""

    instance_type: str
    cpu_cores: float
    cpu_period_us: int
    cpu_quota_us: int
    memory_bytes: int
    volumes: tuple[VolumeEnvelope, ...]
    # The instance's EBS ceiling, scaled: each volume's throttle is already at most this; the kernel here cannot
    # cap the sum over a node's volumes (README "The local scale model"), so the bottleneck rule checks the sum.
    ebs_iops: float | None = None
    ebs_bps: float | None = None
    # The memory rule (node_envelope): what the broker is told as its total memory (MEMORY_OVERRIDE), the idle
    # footprint the envelope holds on top of the scaled RAM, and the relative watermark the broker applies to that
    # total (None: the campaign's broker_config sets an absolute one, which the scale model leaves as it is).
    broker_memory_bytes: int | None = None
    idle_bytes: int = 0
    watermark_relative: float | None = DEFAULT_WATERMARK
    # The node's share of this host's cores by the factors (vCPUs x factor / host speed). cpu_cores is the same, or
    # MIN_CORES where the share is smaller (a small instance on a fast host): such a node has more than its share.
    cpu_share: float | None = None
    # Erlang schedulers online (+S, schedulers_for): None, the VM's default, one per core of this host (a record from
    # before the rule).
    schedulers: int | None = None
    # The node's link, Mbit/s each way (ScaleFactors.link_mbit), where it has one of its own (a namespace per node);
    # None: every node on the loopback, no network envelope, so no network limit either.
    network_mbit: float | None = None

    @property
    def erl_args(self) -> str:
        """The Erlang VM's flags in this envelope. Schedulers that busy-wait would spend the node's CPU quota on
        spinning: they sleep at once instead."""
        args = "+sbwt none +sbwtdcpu none +sbwtdio none"
        return args if self.schedulers is None else f"{args} +S {self.schedulers}:{self.schedulers}"

    @property
    def cpu_floored(self) -> bool:
        """Whether the kernel's smallest quota gave this node more than its share (fitted_factors' floor)."""
        return self.cpu_share is not None and self.cpu_share < self.cpu_cores

    @property
    def watermark_bytes(self) -> int | None:
        """The broker's high watermark in this envelope (its mem_limit), when the scale model sets it."""
        if self.watermark_relative is None:
            return None
        return math.floor(self.watermark_relative * (self.broker_memory_bytes or self.memory_bytes))

    def volume(self, role: str) -> VolumeEnvelope | None:
        return next((v for v in self.volumes if v.role == role), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["volumes"] = [v.to_dict() for v in self.volumes]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeEnvelope:
        values = {f.name: data.get(f.name, f.default) for f in fields(cls)}  # a record from before the memory rule
        values["volumes"] = tuple(VolumeEnvelope.from_dict(v) for v in data.get("volumes") or ())
        return cls(**values)


@dataclass(frozen=True)
class GeneratorEnvelope:
    cpu_cores: float
    cpu_period_us: int
    cpu_quota_us: int
    memory_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GeneratorEnvelope:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class ClusterEnvelopes:
    """A local cluster's envelopes as planned: the factors, every node's envelope, the load generator's, and the
    cgroup (relative to each hierarchy's root) they live under on this machine (adapters/envelope.cluster_cgroup).
    The Terraform local stack receives it as JSON and outputs it again in its `cluster` (sizing.resources.cluster)."""

    factors: ScaleFactors
    node: NodeEnvelope
    generator: GeneratorEnvelope
    cgroup: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"factors": self.factors.to_dict(), "node": self.node.to_dict(), "generator": self.generator.to_dict(),
                "cgroup": self.cgroup}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterEnvelopes:
        return cls(ScaleFactors.from_dict(data["factors"]), NodeEnvelope.from_dict(data["node"]),
                   GeneratorEnvelope.from_dict(data["generator"]), str(data.get("cgroup") or ""))


def cpu_quota_us(cores: float, period_us: int = CPU_PERIOD_US) -> int:
    return max(MIN_QUOTA_US, round(cores * period_us))


def _scaled(value: float | None, divisor: float) -> float | None:
    return None if value is None else value / divisor


def _min(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def volume_envelope(catalog: Catalog, item: RoleVolume, factors: ScaleFactors, ebs_iops: float | None,
                    ebs_bps: float | None) -> VolumeEnvelope:
    """One volume's loop device: the volume type's limits at its size and provisioning (gp2's 3 IOPS per GiB, st1's
    baseline per TiB, io1's provisioned IOPS), scaled, and never above the instance's (scaled) EBS ceiling."""
    price = catalog.volumes.get(item.volume.type)
    limits = volume_limits(price, item.volume.size_gb, item.volume.iops, item.volume.throughput_mbps)
    iops = _min(_scaled(limits.iops, factors.disk_divisor), ebs_iops)
    bps = _min(_scaled(limits.mb_s * 1e6 if limits.mb_s is not None else None, factors.disk_divisor), ebs_bps)
    size_gb = item.volume.size_gb or (price.size_gb if price else 0)
    image = min(MAX_IMAGE_MIB, max(MIN_IMAGE_MIB, math.ceil(size_gb * factors.volume_mib_per_gib)))
    return VolumeEnvelope(role=item.role, type=item.volume.type, image_mib=image,
                          iops=max(1, math.floor(iops)) if iops is not None else None,
                          bps=max(1, math.floor(bps)) if bps is not None else None,
                          cloud_iops=limits.iops, cloud_mb_s=limits.mb_s)


def idle_footprint_mib(version: str | None) -> float:
    """The idle footprint of a node of this requested version (None: the target's own package). A series not
    measured here (the local target runs only 3.10 and 4.0: sizing.resources.versions) gets the largest measured one."""
    return IDLE_FOOTPRINT_MIB.get(series(version or TARGET_DEFAULT_VERSION), max(IDLE_FOOTPRINT_MIB.values()))


def default_watermark(version: str | None) -> float:
    """RabbitMQ's own relative high watermark for this requested version (None: the target's own package)."""
    major = int(series(version or TARGET_DEFAULT_VERSION).split(".")[0])
    return DEFAULT_WATERMARK_4 if major >= 4 else DEFAULT_WATERMARK


def watermark_relative(broker_config: Mapping[str, Any], version: str | None = None) -> float | None:
    """The relative high watermark a node of `version` applies under this broker_config: the campaign's own, else
    RabbitMQ's default; None when the campaign sets an absolute one (adverse-local.yaml does, on purpose: it is kept
    as given)."""
    if "vm_memory_high_watermark.absolute" in broker_config:
        return None
    try:
        return float(broker_config.get("vm_memory_high_watermark.relative", default_watermark(version)))
    except (TypeError, ValueError):  # not a number: the broker refuses to boot on it, and says why
        return default_watermark(version)


def node_envelope(catalog: Catalog, instance_type: str, volumes: Iterable[RoleVolume], factors: ScaleFactors,
                  version: str | None = None, broker_config: Mapping[str, Any] | None = None,
                  own_link: bool = False) -> NodeEnvelope:
    """The envelope of every node of a config (instance type and disk layout, data volume first) running RabbitMQ
    `version` (None: the target's own) under the campaign's `broker_config` (its watermark: watermark_relative).

    Memory: the cgroup limit is the scaled RAM plus the version's idle footprint, and the broker is told a total of
    scaled RAM + idle / watermark, so that its own relative watermark comes to idle + watermark x scaled RAM: the
    share of the scaled RAM the broker may fill under load is the cloud's, and the fixed cost every node pays before
    any load is carried on top instead of eating into it. Told a total rather than given an absolute watermark
    because the watermark stays relative: a campaign's own `.relative`, and a fault's restore of the configured
    relative watermark (`set_vm_memory_high_watermark`, loadgen/faults), land on the same rule, through the one key
    the scale model already owns (MEMORY_OVERRIDE). The broker's total is above the cgroup's limit; its watermark
    (below 1 x the total) stays within the limit.

    Network, where each node has a link of its own (`own_link`, a namespace per node): the instance's baseline
    bandwidth scaled (ScaleFactors.link_mbit); an instance the catalog gives no bandwidth gets no envelope."""
    instance = catalog.instances[instance_type]
    share = factors.node_cores(instance.vcpus)
    cores = max(MIN_CORES, share)
    ebs_iops = _scaled(float(instance.ebs_iops) if instance.ebs_iops else None, factors.disk_divisor)
    ebs_bps = _scaled(instance.ebs_mbps / 8 * 1e6 if instance.ebs_mbps else None, factors.disk_divisor)
    scaled = instance.memory_gib * factors.memory_mib_per_gib * MIB
    idle = idle_footprint_mib(version) * MIB
    watermark = watermark_relative(broker_config or {}, version)
    return NodeEnvelope(
        instance_type=instance_type, cpu_cores=cores, cpu_period_us=CPU_PERIOD_US, cpu_quota_us=cpu_quota_us(cores),
        memory_bytes=math.floor(scaled + idle),
        volumes=tuple(volume_envelope(catalog, v, factors, ebs_iops, ebs_bps) for v in volumes),
        ebs_iops=ebs_iops, ebs_bps=ebs_bps,
        broker_memory_bytes=math.floor(scaled + idle / (watermark or default_watermark(version))),
        idle_bytes=math.floor(idle),
        watermark_relative=watermark, cpu_share=share, schedulers=schedulers_for(cores),
        network_mbit=factors.link_mbit(instance.network_gbps) if own_link and instance.network_gbps else None)


def schedulers_for(cores: float) -> int:
    """Erlang schedulers online for a node of `cores`: one per whole core it may use, at least one. Measured
    (benchmarks/small_quota.py, BENCHMARKS.md "The small-node penalty against +S and the CFS period"): at 0.05 cores
    the VM's default two schedulers did 0.62 of the broker work per CPU-second of a 0.25-core node, one did 0.83;
    at 0.25 cores the two counts did the same."""
    return max(1, math.ceil(cores - 1e-9))


def min_memory_mib_per_gib(memory_gib: float, version: str | None, watermark: float | None = None) -> float:
    """The smallest memory_mib_per_gib at which an idle node of `memory_gib` cloud RAM stays within
    MAX_IDLE_WATERMARK_SHARE of its watermark (default: the version's): idle <= share x (idle + watermark x scaled)."""
    idle, relative = idle_footprint_mib(version), watermark or default_watermark(version)
    return idle * (1 - MAX_IDLE_WATERMARK_SHARE) / MAX_IDLE_WATERMARK_SHARE / (relative * memory_gib)


def generator_envelope(factors: ScaleFactors) -> GeneratorEnvelope:
    return GeneratorEnvelope(cpu_cores=factors.generator_cores, cpu_period_us=CPU_PERIOD_US,
                             cpu_quota_us=cpu_quota_us(factors.generator_cores),
                             memory_bytes=math.floor(factors.generator_memory_mib * MIB))


def cluster_envelopes(catalog: Catalog, instance_type: str, volumes: Iterable[RoleVolume], factors: ScaleFactors,
                      version: str | None = None, broker_config: Mapping[str, Any] | None = None,
                      own_link: bool = False) -> ClusterEnvelopes:
    return ClusterEnvelopes(factors, node_envelope(catalog, instance_type, volumes, factors, version, broker_config,
                                                   own_link), generator_envelope(factors))






def scaled_limits(envelope: NodeEnvelope) -> ResourceLimits:
    """The bottleneck rule's limits of a node in its envelope: each volume's throttles and the scaled EBS ceiling
    (10^6 bytes/s, as the analysis reports throughput), and its link's envelope where it has one (none on the
    loopback: unknown, so never near)."""
    roles = {v.role: VolumeLimits(float(v.iops) if v.iops is not None else None,
                                  v.bps / 1e6 if v.bps is not None else None) for v in envelope.volumes}
    data = roles.get("data", VolumeLimits(None, None))
    return ResourceLimits(network_mbit_s=envelope.network_mbit, volume_iops=data.iops, volume_mb_s=data.mb_s,
                          roles=roles, ebs_iops=envelope.ebs_iops,
                          ebs_mb_s=envelope.ebs_bps / 1e6 if envelope.ebs_bps else None)




def envelope_problems(envelope: NodeEnvelope, config_id: str) -> list[str]:
    """Why a node's envelope cannot hold a RabbitMQ node at all (the factors are too small for this instance). The
    parser asks it at the reference speed; a faster host's smaller share is raised to MIN_CORES, and admission says so
    (NodeEnvelope.cpu_floored)."""
    problems = []
    if envelope.cpu_floored:
        problems.append(f"config {config_id}: {envelope.instance_type} scales to {envelope.cpu_share:.3g} cores, "
                        f"below the smallest CPU envelope ({MIN_CORES:g} cores: {MIN_QUOTA_US} us of every "
                        f"{CPU_PERIOD_US} us); raise cpu_cores_per_vcpu")
    watermark = envelope.watermark_bytes
    if watermark is not None and envelope.idle_bytes > MAX_IDLE_WATERMARK_SHARE * watermark:
        problems.append(f"config {config_id}: an idle node holds {envelope.idle_bytes / MIB:.0f} MiB, "
                        f"{envelope.idle_bytes / watermark:.2f} of the {watermark / MIB:.0f} MiB high watermark "
                        f"{envelope.instance_type} scales to (at most {MAX_IDLE_WATERMARK_SHARE:g}, or load would meet "
                        f"the alarm early); raise memory_mib_per_gib")
    return problems


# ------------------------------------------------------------------------------------------ fitting the machine


@dataclass(frozen=True)
class Machine:
    """What the local target runs on (adapters/envelope.machine() reads it)."""

    cores: float
    memory_bytes: int


# Left to everything outside the envelopes: Airflow's scheduler and api-server, the S3 server, the CLI tools the
# fault injector runs, the kernel's writeback. Measured idle: the demo stack uses ~0.1 cores and ~1.5 GiB.
RESERVED_CORES = 0.25
RESERVED_MEMORY_BYTES = 4 * GIB


@dataclass(frozen=True)
class Demand:
    """What a set of clusters up at once and their load generators hold together."""

    cores: float
    memory_bytes: int
    configs: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        return (f"{self.cores:.2f} cores and {self.memory_bytes / GIB:.1f} GiB "
                f"({' + '.join(self.configs)} + {len(self.configs)} load generator(s))")


def cluster_demand(envelope: NodeEnvelope, nodes: int) -> tuple[float, int]:
    return envelope.cpu_cores * nodes, envelope.memory_bytes * nodes


def peak_demand(clusters: Mapping[str, tuple[NodeEnvelope, int]], parallelism: int,
                factors: ScaleFactors, repeats: int = 1) -> Demand:
    """The largest CPU demand of any `parallelism` clusters up at once (each with its own load generator), and the
    memory of that same set. Every repeat of a config is a cluster of its own, and the DAG takes them in any order,
    so a config counts up to `repeats` times."""
    copies = [item for item in clusters.items() for _ in range(max(1, repeats))]
    ranked = sorted(copies, key=lambda item: cluster_demand(*item[1]), reverse=True)[:max(1, parallelism)]
    generator = generator_envelope(factors)
    cores = sum(cluster_demand(*env)[0] for _, env in ranked) + generator.cpu_cores * len(ranked)
    memory = sum(cluster_demand(*env)[1] for _, env in ranked) + generator.memory_bytes * len(ranked)
    return Demand(cores, memory, tuple(config for config, _ in ranked))




def fit_problems(demand: Demand, machine: Machine) -> list[str]:
    """Why the envelopes do not fit this machine (empty: they do), with the sums they need."""
    return list(fit_shortfalls(demand, machine).values())


def fit_shortfalls(demand: Demand, machine: Machine) -> dict[str, str]:
    """fit_problems by the model factor that would have to fall (MODEL_FACTORS): the reason for each."""
    problems = {}
    cores = machine.cores - RESERVED_CORES
    if demand.cores > cores:
        problems["cpu_cores_per_vcpu"] = (
            f"the envelopes up at once need {demand.describe()}, but this machine has {machine.cores:g} cores "
            f"({RESERVED_CORES:g} kept for Airflow, the S3 server and the kernel): lower "
            f"scale_model.cpu_cores_per_vcpu or generator_cores, or the parallelism")
    memory = machine.memory_bytes - RESERVED_MEMORY_BYTES
    if demand.memory_bytes > memory:
        problems["memory_mib_per_gib"] = (
            f"the envelopes up at once need {demand.describe()}, but this machine has "
            f"{machine.memory_bytes / GIB:.1f} GiB of memory ({RESERVED_MEMORY_BYTES / GIB:g} GiB kept for the "
            f"rest): lower scale_model.memory_mib_per_gib or generator_memory_mib, or the parallelism")
    return problems


# The machine the one default model is fitted to: this project's machine kind (2 cores; 24 GiB, of which the kernel
# reports 23.5 as MemTotal), its cores counted as reference cores (sizing.calibration: host speed 1.0, the slower
# host of the kind). Fitted here rather than to the host at hand, a campaign gets the same factors on every host; a
# faster host fits them with room to spare.
MODEL_MACHINE = Machine(cores=2.0, memory_bytes=int(23.5 * GIB))


def fitted_factors(factors: ScaleFactors, clusters: Callable[[ScaleFactors], Mapping[str, tuple[NodeEnvelope, int]]],
                   parallelism: int, given: Iterable[str] = (), repeats: int = 1) -> ScaleFactors:
    """The one rule for a campaign's model factors (MODEL_FACTORS). Each the campaign gives (`given`) is its own:
    a what-if (OWN_MODEL). Each other is the default, or, where the campaign's largest configs up at once
    (`parallelism` clusters of them, each with its load generator, a config up to `repeats` times: peak_demand)
    would not fit MODEL_MACHINE at the reference speed, the
    largest value on FACTOR_GRID below the default at which they fit (FITTED_MODEL): computed from the configs, never
    chosen after a run. None fits (the load generators alone fill the machine): the default stays, and admission
    refuses the campaign with the sums. `clusters` builds every config's node envelope and node count from factors.
    The smallest instance's share of a core can then fall below the kernel's smallest quota on a fast host: its
    envelope says so (NodeEnvelope.cpu_share)."""
    given = set(given) & set(MODEL_FACTORS)
    factors = replace(factors, host_speed=1.0)
    fitted = False
    for name in MODEL_FACTORS:
        if name in given:
            continue
        step = FACTOR_GRID[name]
        value, trial = getattr(factors, name), factors
        while name in fit_shortfalls(peak_demand(clusters(trial), parallelism, trial, repeats), MODEL_MACHINE):
            value = round(math.floor(round(value / step, 6) - 1) * step, 6)
            if value <= 0:  # none fits: the factor stays as given, for admission to refuse with the sums
                trial = factors
                break
            trial = replace(factors, **{name: value})
        fitted, factors = fitted or trial is not factors, trial
    rule = OWN_MODEL if given else FITTED_MODEL if fitted else DEFAULT_MODEL
    return replace(factors, rule=rule)
