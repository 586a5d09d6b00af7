"""The campaign model: frozen dataclasses of a parsed campaign and the constants the parser checks against."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sizing.contract.records import DEFAULT_GROUP  # the one implicit group of a scenario without `groups:`
from sizing.criteria.rules import CLIENT_LATENCY
from sizing.criteria.search import SearchSpec
from sizing.documents.fields import Problem
from sizing.resources.catalog import Catalog
from sizing.resources.cost import Volume
from sizing.resources.disks import DATA_ROLE, RoleVolume, layout_suffix, volume_label
from sizing.resources.existing import ExistingCluster
from sizing.resources.scalemodel import ScaleFactors
from sizing.resources.versions import version_label

QUEUE_TYPES = ("classic", "quorum", "mirrored", "stream")
DEPLOYMENTS = ("local", "aws", "existing")  # existing: sizing/resources/existing.py
FAULT_KINDS = (
    "kill_node",  # SIGKILL the node's Erlang VM; heal = start it again
    "stop_node",  # graceful stop; heal = start
    "rolling_restart",  # graceful restart of every node, one by one
    "memory_alarm",  # raise the memory alarm (publishers blocked); heal = clear it
    "disk_alarm",  # raise the disk alarm; heal = clear it
    "network_delay",  # tc netem delay (aws target only)
    "network_loss",  # random loss of the node's outgoing packets (aws: tc netem; local: nftables, network: namespaces)
    "partition",  # the target node cut off from every other node, both ways (aws, or local with `network: namespaces`)
    CLIENT_LATENCY,  # a delay each way between the generator and every node (sizing.criteria.rules); heal = no delay
)
NETWORK_FAULTS = ("network_delay", "network_loss")  # tc netem on the node's interface
PARTITION = "partition"
# The local target's networks (adapters/netns.py): every node on the machine's loopback, or each node in a network
# namespace of its own on a private bridge, where packets between nodes can be dropped (partition, network_loss).
LOOPBACK, NAMESPACES = "loopback", "namespaces"
NETWORKS = (LOOPBACK, NAMESPACES)
NAMESPACE_FAULTS = ("network_loss", PARTITION)  # what the namespaces' packet filters carry on the local target
# A partition's `params.direction`: both ways (the default), or only the target node's packets to the others dropped
# (`from_node`), or only the others' packets to it (`to_node`). One way is enough to break a TCP connection (its
# segments need their acknowledgements back), so it differs from `both` in who notices first and what still arrives.
PARTITION_BOTH, PARTITION_FROM_NODE, PARTITION_TO_NODE = "both", "from_node", "to_node"
PARTITION_DIRECTIONS = (PARTITION_BOTH, PARTITION_FROM_NODE, PARTITION_TO_NODE)


def partition_direction(params: Mapping[str, Any]) -> str:
    """A partition fault's direction (its params carry one only when it is not the default, so a two-way cut's
    fault events and records read as they did before directions existed)."""
    return str(params.get("direction", PARTITION_BOTH))


def client_queue(client: int, queues: int) -> int:
    """The queue (0-based) that publisher or consumer number `client` uses: PerfTest's spread, client mod queues."""
    return client % queues


@dataclass(frozen=True)
class QueueSpec:
    count: int
    name_pattern: str  # "{n}" is replaced by 1..count, e.g. "perf-test-{n}"
    type: str
    durable: bool
    arguments: Mapping[str, Any] = field(default_factory=dict)
    policy: Mapping[str, Any] | None = None  # mirrored queues: ha-mode / ha-params / ha-sync-mode

    def names(self) -> list[str]:
        return [self.name_pattern.format(n=n) for n in range(1, self.count + 1)]

    @property
    def declared_durable(self) -> bool:
        """The durability the queues are declared with: quorum queues and streams are always durable."""
        return self.durable or self.type in ("quorum", "stream")


@dataclass(frozen=True)
class MessageSpec:
    size_bytes: int
    persistent: bool


@dataclass(frozen=True)
class PublisherSpec:
    count: int
    confirms_in_flight: int  # 0 disables publisher confirms
    random_start_delay_s: float
    mandatory: bool = False  # publish with mandatory flag so unroutable messages come back as returns


@dataclass(frozen=True)
class ConsumerSpec:
    count: int
    prefetch: int
    multi_ack_every: int  # ack with multiple=True every N deliveries (1 = ack each)
    processing_ms: float  # simulated processing time per message (a profile may vary it)
    auto_ack: bool = False


@dataclass(frozen=True)
class Workload:
    queues: QueueSpec
    message: MessageSpec
    publishers: PublisherSpec
    consumers: ConsumerSpec


@dataclass(frozen=True)
class ClusterShape:
    nodes: int
    instance_type: str
    volume: Volume  # the data volume: holds every role without a volume of its own (sizing/resources/disks.py)
    dedicated: tuple[RoleVolume, ...] = ()  # volumes of their own for logs / wal / segments, in VOLUME_ROLES order
    filesystem: str | None = None  # what every volume is formatted with (aws); None = the stack's default
    rabbitmq_version: str | None = None  # what the nodes run (sizing/resources/versions.py); None = the target's own

    @property
    def volumes(self) -> tuple[RoleVolume, ...]:
        """Every volume of one node, data first."""
        return (RoleVolume(DATA_ROLE, self.volume), *self.dedicated)

    @property
    def config_id(self) -> str:
        """Stable, path-safe id, e.g. `n3-c5.4xlarge-gp2` (S3 partitions, Terraform state, task labels); a layout
        of several volumes adds a suffix (`n3-c4.4xlarge-io1-wal-segments`, sizing.resources.disks.layout_suffix)."""
        base = f"n{self.nodes}-{self.instance_type}-{volume_label(self.volume)}"
        version = version_label(self.rabbitmq_version) if self.rabbitmq_version else ""
        return base + layout_suffix(self.volume, self.dedicated, self.filesystem) + version


@dataclass(frozen=True)
class Target:
    rate: float  # msg/s the cluster must sustain
    p99_latency_ms: float  # end-to-end p99 SLO


@dataclass(frozen=True)
class ProfileSegment:
    """A hold (start == end) or a linear ramp of a value over `duration_s` seconds."""

    start: float
    end: float
    duration_s: float


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    phases: tuple[int, ...] | None  # 1-based phase numbers; None = every phase
    at_fraction: float | None  # offset into the phase as a fraction of its length ...
    at_s: float | None  # ... or in seconds (exactly one of the two)
    target: str  # "random" | "node" | "leader" | "all"
    node: int | None = None  # 1-based node number when target == "node"
    queue: str | None = None  # queue whose leader is hit when target == "leader"
    heal_after_s: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


RATE_SCHEDULED = "scheduled"  # open loop from intended send times (latency basis: intended)
RATE_MAX = "max"  # closed loop: send whenever the confirm window has room (latency basis: sent)
RATE_MODES = (RATE_SCHEDULED, RATE_MAX)
# The client settings a scenario's steps may vary, and whether the generator can change each one live (within
# one run, at the step boundary) or only with `isolate: true` (a fresh run per value), and why not.
STEP_DIMENSIONS: dict[str, str | None] = {
    "rate": None,
    "confirms_in_flight": None,  # live between non-zero values; 0 <-> N is checked per pair (see below)
    "prefetch": None,  # basic.qos + re-subscribe (loadgen.client: QoS reaches new consumers only)
    "multi_ack_every": None,
    "processing_ms": None,
    "auto_ack": "the ack mode is fixed by basic.consume when the consumer subscribes",
    "message_size": "the publish frame template is built once when the publisher's channel opens",
}
CONFIRM_MODE_LIVE = ("a channel in confirm mode cannot leave it (confirm.select has no undo), and the publisher "
                     "drivers choose confirm mode when the channel opens")


@dataclass(frozen=True)
class StepSetting:
    """The client settings in force during one step (phase) of a client-setting scenario."""

    label: str  # "confirms_in_flight=20": the phase name, the phase_summary row and the chart axis
    rate_mode: str  # RATE_SCHEDULED | RATE_MAX
    rate: float  # total msg/s; in max mode the ceiling (the stated cap), never a target
    confirms_in_flight: int  # 0: no publisher confirms
    prefetch: int
    multi_ack_every: int
    auto_ack: bool
    size_bytes: int
    processing_ms: float


@dataclass(frozen=True)
class WorkloadGroup:
    """One of a scenario's concurrent workloads (seed 001's quorum foreground next to a lazy classic background).

    `schedule` is the group as a scenario of its own: its workload (queues, message, clients) and its steps, with
    the phase boundaries of the scenario it belongs to (checked when parsed), no faults and no groups.
    """

    name: str
    schedule: Scenario
    hold: str | None = None  # `rate: ...` given: the held rate as written ("10/publisher", "400", "max")

    @property
    def workload(self) -> Workload:
        return self.schedule.workload


@dataclass(frozen=True)
class Scenario:
    name: str
    # Exactly one of: increasing-intensity steps, or a publish-rate profile.
    step_rates: tuple[float, ...] | None
    step_duration_s: float | None
    publish_rate: tuple[ProfileSegment, ...] | None
    processing_ms: tuple[ProfileSegment, ...] | None  # None: workload.consumers.processing_ms throughout
    warmup_s: float
    faults: tuple[FaultSpec, ...]
    workload: Workload  # the campaign workload with this scenario's overrides applied
    description: str = ""
    # A capacity search (sizing/criteria/search.py) instead of steps or a profile: its phases are decided online.
    search: SearchSpec | None = None
    # Client-setting steps (seed 003): one StepSetting per phase, changed live at the step boundary;
    # `steps_dimension` names the varied setting ("sequence" for a listed sequence). None: rate steps/profile.
    step_settings: tuple[StepSetting, ...] | None = None
    steps_dimension: str | None = None
    # `isolate: true`: the scenario as written, of whose steps this run is one (the report draws them as one line).
    isolated_from: str | None = None
    # Issue 14: concurrent workload groups (empty: one implicit group, DEFAULT_GROUP). The scenario's own workload
    # and steps are the foreground group's; the SLO and the leaderboards judge the foreground only.
    groups: tuple[WorkloadGroup, ...] = ()
    foreground: str = DEFAULT_GROUP
    # Backlog scenarios (seed 002's slowdowns and peaks, sizing.criteria.rules.backlog_held): seconds of reduced publish
    # rate the scenario still counts as held (0: publishers entirely unaffected, the seed's requirement).
    publish_tolerance_s: float = 0.0
    # Adverse scenarios: false = judged and reported, but a config need not hold it to be recommended (seed 002 sized
    # for its expected 20k peak and ran the 30k tests "just in case").
    required: bool = True

    @property
    def workload_groups(self) -> tuple[WorkloadGroup, ...]:
        """Every group the scenario runs, the foreground included (one implicit `main` group without `groups:`)."""
        return self.groups or (WorkloadGroup(DEFAULT_GROUP, self),)

    @property
    def background_groups(self) -> tuple[WorkloadGroup, ...]:
        return tuple(g for g in self.workload_groups if g.name != self.foreground)


PURPOSES = ("size", "compare", "characterise")  # sizing/judgement/findings.py answers each
COMPARE_BY = ("config", "step")


@dataclass(frozen=True)
class Versus:
    """One family of scenarios (a scenario as written) compared with another, phase label by phase label; with steps,
    one step of `other` with one step of `baseline`."""

    baseline: str
    other: str
    baseline_step: str | None = None
    other_step: str | None = None


@dataclass(frozen=True)
class Comparison:
    """What a `purpose: compare` campaign compares (sizing/judgement/findings.py)."""

    by: str | None  # "config": every config against each baseline config; "step": every step against its family's
    baselines: tuple[str, ...] = ()  # by config: the baseline config id(s)
    baseline_steps: Mapping[str, str] = field(default_factory=dict)  # by step: family -> its baseline step
    versus: tuple[Versus, ...] = ()
    description: str = ""  # the question in words, for the report's first sentence


@dataclass(frozen=True)
class Budget:
    """Caps on a campaign's own cost, checked against sizing.planning.plan.campaign_cost before anything runs."""

    max_cost_usd: float | None  # cloud cost of the whole campaign, worst case
    max_hours: float | None  # wall-clock hours of the whole campaign at `parallelism`, worst case
    parallelism: int = 1  # clusters up at once (the DAG's max_parallel_configs)

    def to_dict(self) -> dict[str, Any]:
        return {"max_cost_usd": self.max_cost_usd, "max_hours": self.max_hours, "parallelism": self.parallelism}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        return cls(data.get("max_cost_usd"), data.get("max_hours"), int(data.get("parallelism", 1)))


@dataclass(frozen=True)
class Campaign:
    name: str
    description: str
    deployment: str
    catalog_name: str
    catalog: Catalog
    target: Target
    workload: Workload
    clusters: tuple[ClusterShape, ...]
    scenarios: tuple[Scenario, ...]
    repeats: int
    seed: int
    broker_config: Mapping[str, Any]  # extra rabbitmq.conf settings for every node
    raw: Mapping[str, Any]  # the spec as resolved (after `extends`), for the run manifest
    budget: Budget | None = None  # refuse the campaign when its planned worst case exceeds this
    purpose: str = "size"  # the question the report's first sentence answers (PURPOSES)
    comparison: Comparison | None = None  # purpose compare: what against what
    existing: ExistingCluster | None = None  # deployment: existing: the running cluster it measures
    # The local scale model's factors (sizing/resources/scalemodel.py): every local node in the envelope of its instance
    # and volume types. None: `scale_model: off` (nodes share the machine), or a target other than local.
    scale_model: ScaleFactors | None = None
    network: str = LOOPBACK  # the local target's network (NETWORKS); loopback on every other target
    # What a config's RabbitMQ version accepts and then ignores (sizing/campaign/versionrules.py): `validate` prints
    # these, the report lists them. Not part of the spec hash (they follow from the spec).
    warnings: tuple[Problem, ...] = ()

    @property
    def spec_hash(self) -> str:
        canonical = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def scenario(self, name: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        raise KeyError(f"campaign {self.name!r} has no scenario {name!r}")

    def cluster(self, config_id: str) -> ClusterShape:
        for shape in self.clusters:
            if shape.config_id == config_id:
                return shape
        known = ", ".join(s.config_id for s in self.clusters)
        raise KeyError(f"campaign {self.name!r} has no config {config_id!r} (known: {known})")
