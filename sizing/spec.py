"""Campaign spec: the YAML a user writes, parsed into frozen dataclasses and validated up front.

`load_campaign(path)` either returns a fully valid `Campaign` or raises `SpecError` listing every
problem with its field path; nothing is provisioned before this succeeds. Field reference: README,
section "Campaign spec".
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from sizing import rules
from sizing.brokerconf import check_broker_config, check_message_size
from sizing.catalog import Catalog, load_catalog
from sizing.cost import Volume
from sizing.disks import DATA_ROLE, FILESYSTEMS, VOLUME_ROLES, RoleVolume, layout_suffix, volume_label
from sizing.fields import Fields, Problem, SpecError, join
from sizing.queueargs import check_queue_arguments
from sizing.records import DEFAULT_GROUP  # the one implicit group of a scenario without `groups:`
from sizing.search import SearchSpec
from sizing.versions import version_label, version_problem

QUEUE_TYPES = ("classic", "quorum", "mirrored", "stream")
DEPLOYMENTS = ("local", "aws")
FAULT_KINDS = (
    "kill_node",  # SIGKILL the node's Erlang VM; heal = start it again
    "stop_node",  # graceful stop; heal = start
    "rolling_restart",  # graceful restart of every node, one by one
    "memory_alarm",  # raise the memory alarm (publishers blocked); heal = clear it
    "disk_alarm",  # raise the disk alarm; heal = clear it
    "network_delay",  # tc netem delay (aws target only)
    "network_loss",  # tc netem loss (aws target only)
)
NETWORK_FAULTS = ("network_delay", "network_loss")
# Every local node is an Erlang VM on the same 2-core machine as the load generator.
MAX_LOCAL_NODES = 5


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
    volume: Volume  # the data volume: holds every role without a volume of its own (sizing/disks.py)
    dedicated: tuple[RoleVolume, ...] = ()  # volumes of their own for logs / wal / segments, in VOLUME_ROLES order
    filesystem: str | None = None  # what every volume is formatted with (aws); None = the stack's default
    rabbitmq_version: str | None = None  # what the nodes run (sizing/versions.py); None = the target's own

    @property
    def volumes(self) -> tuple[RoleVolume, ...]:
        """Every volume of one node, data first."""
        return (RoleVolume(DATA_ROLE, self.volume), *self.dedicated)

    @property
    def config_id(self) -> str:
        """Stable, path-safe id, e.g. `n3-c5.4xlarge-gp2` (S3 partitions, Terraform state, task labels); a layout
        of several volumes adds a suffix (`n3-c4.4xlarge-io1-wal-segments`, sizing.disks.layout_suffix)."""
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
    # A capacity search (sizing/search.py) instead of steps or a profile: its phases are decided online.
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
    # Backlog scenarios (seed 002's slowdowns and peaks, sizing.rules.backlog_held): seconds of reduced publish rate
    # the scenario still counts as held (0: publishers entirely unaffected, the seed's requirement).
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

    @property
    def has_max_rate(self) -> bool:
        return bool(self.step_settings) and any(s.rate_mode == RATE_MAX for s in self.step_settings)


PURPOSES = ("size", "compare", "characterise")  # sizing/findings.py answers each
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
    """What a `purpose: compare` campaign compares (sizing/findings.py)."""

    by: str | None  # "config": every config against each baseline config; "step": every step against its family's
    baselines: tuple[str, ...] = ()  # by config: the baseline config id(s)
    baseline_steps: Mapping[str, str] = field(default_factory=dict)  # by step: family -> its baseline step
    versus: tuple[Versus, ...] = ()
    description: str = ""  # the question in words, for the report's first sentence


@dataclass(frozen=True)
class Budget:
    """Caps on a campaign's own cost, checked against sizing.plan.campaign_cost before anything runs."""

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


# --------------------------------------------------------------------------------------------- parsing


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` on top of `base` (`extends`, a scenario's `workload`): a mapping merges key by key, anything
    else replaces, and an explicit empty mapping (`arguments: {}`) replaces too: it clears what was inherited."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and value and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _parse_workload(f: Fields) -> Workload | None:
    start = len(f.problems)
    q = f.sub("queues")
    qtype = q.str("type", choices=QUEUE_TYPES)
    pattern = q.str("name_pattern", "queue-{n}")
    if pattern is not None and "{n}" not in pattern:
        q.fail("name_pattern", f"must contain '{{n}}' (the queue number), got {pattern!r}")
    arguments = q.mapping("arguments", {})
    policy = q.mapping("policy", None)
    if qtype == "mirrored" and not policy:
        q.fail("policy", "mirrored queues need an HA policy, e.g. {ha-mode: exactly, ha-params: 2}")
    if qtype not in (None, "mirrored") and policy and any(k.startswith("ha-") for k in policy):
        q.fail("policy", f"ha-* policy keys only apply to mirrored queues, not {qtype}")
    q.problems.extend(check_queue_arguments(arguments or {}, qtype, join(q.path, "arguments")))
    queues = QueueSpec(
        count=q.int("count", minimum=1) or 0,
        name_pattern=pattern or "",
        type=qtype or "",
        durable=bool(q.bool("durable", True)),
        arguments=arguments or {},
        policy=policy,
    )
    q.done()
    m = f.sub("message")
    message = MessageSpec(size_bytes=m.int("size_bytes", minimum=64) or 0, persistent=bool(m.bool("persistent", True)))
    m.done()
    p = f.sub("publishers")
    publishers = PublisherSpec(
        count=p.int("count", minimum=1) or 0,
        confirms_in_flight=p.int("confirms_in_flight", minimum=0) or 0,
        random_start_delay_s=p.number("random_start_delay_s", 0.0, minimum=0) or 0.0,
        mandatory=bool(p.bool("mandatory", False)),
    )
    p.done()
    c = f.sub("consumers")
    consumers = ConsumerSpec(
        count=c.int("count", minimum=1) or 0,
        prefetch=c.int("prefetch", minimum=1) or 0,
        multi_ack_every=c.int("multi_ack_every", 1, minimum=1) or 1,
        processing_ms=c.number("processing_ms", 0.0, minimum=0) or 0.0,
        auto_ack=bool(c.bool("auto_ack", False)),
    )
    if consumers.prefetch and consumers.multi_ack_every > consumers.prefetch:
        c.fail("multi_ack_every", f"must be <= prefetch ({consumers.prefetch}), or consumers stall waiting "
                                  f"for deliveries that never come")
    c.done()
    f.done()
    if qtype == "stream" and message.persistent is False:
        f.fail("message.persistent", "stream queues always persist; set persistent: true")
    if len(f.problems) > start:
        return None
    return Workload(queues, message, publishers, consumers)


def _parse_volume(value: Any, path: str, catalog: Catalog | None, problems: list[Problem]) -> Volume | None:
    if isinstance(value, str):
        value = {"type": value}
    f = Fields(value, path, problems)
    vtype = f.str("type")
    volume = Volume(
        type=vtype or "",
        size_gb=f.int("size_gb", None, minimum=1),
        iops=f.int("iops", None, minimum=0),
        throughput_mbps=f.int("throughput_mbps", None, minimum=0),
    )
    f.done()
    if vtype and catalog is not None and vtype not in catalog.volumes:
        f.fail("type", f"unknown volume type {vtype!r} in catalog {catalog.name} "
                       f"(known: {', '.join(sorted(catalog.volumes))})")
        return None
    return volume if vtype else None


def _parse_layout(e: Fields, catalog: Catalog | None, deployment: str | None
                  ) -> tuple[Volume, tuple[RoleVolume, ...], str | None] | None:
    """A cluster entry's disks: `volume` (one volume holding every role) or `volumes` (one per role, `data`
    required; sizing/disks.py), and an optional `filesystem`. None (with problems recorded) when invalid."""
    start = len(e.problems)
    has_one, has_many = e.has("volume"), e.has("volumes")
    filesystem = e.str("filesystem", None, choices=FILESYSTEMS)
    if filesystem is not None and deployment == "local":
        e.fail("filesystem", "the local target cannot honour a filesystem: its role directories share the "
                             "machine's filesystem (a filesystem per volume would need root and loop mounts); "
                             "remove it or use deployment: aws")
    if has_one == has_many:
        e.fail("", "give exactly one of `volume` (one volume holding everything) or `volumes` (one per role: "
                   f"{', '.join(VOLUME_ROLES)})")
        e.seen.update({"volume", "volumes"})
        return None
    if has_one:
        volume = _parse_volume(e.raw("volume"), join(e.path, "volume"), catalog, e.problems)
        return (volume, (), filesystem) if volume is not None and len(e.problems) == start else None
    entries = e.list("volumes") or []
    by_role: dict[str, tuple[int, Volume]] = {}
    for j, entry in enumerate(entries):
        where = join(join(e.path, "volumes"), j)
        if not isinstance(entry, Mapping):
            e.problems.append(Problem(where, f"must be a mapping {{role: ..., type: ...}}, got {entry!r}"))
            continue
        role = entry.get("role")
        volume = _parse_volume({k: v for k, v in entry.items() if k != "role"}, where, catalog, e.problems)
        if role not in VOLUME_ROLES:
            e.problems.append(Problem(f"{where}.role", f"must be one of {', '.join(VOLUME_ROLES)}; got {role!r}"
                                      if role is not None else "is required"))
        elif role in by_role:
            e.problems.append(Problem(f"{where}.role", f"role {role!r} already has a volume "
                                                       f"(volumes[{by_role[role][0]}]); a role lives on one volume"))
        elif volume is not None:
            by_role[role] = (j, volume)
    if entries and DATA_ROLE not in by_role and len(e.problems) == start:
        e.fail("volumes", f"needs a `{DATA_ROLE}` volume (Mnesia and the message store; every role without a "
                          f"volume of its own lives on it)")
    if len(e.problems) > start or DATA_ROLE not in by_role:
        return None
    dedicated = tuple(RoleVolume(role, by_role[role][1]) for role in VOLUME_ROLES
                      if role != DATA_ROLE and role in by_role)
    return by_role[DATA_ROLE][1], dedicated, filesystem


def _check_instance(f: Fields, key: str, name: str | None, catalog: Catalog | None) -> bool:
    if name is None:
        return False
    if catalog is not None and name not in catalog.instances:
        f.fail(key, f"unknown instance type {name!r} in catalog {catalog.name} "
                    f"(known: {', '.join(sorted(catalog.instances))})")
        return False
    return True


def _parse_clusters(f: Fields, catalog: Catalog | None, deployment: str | None = None) -> list[ClusterShape]:
    shapes: list[ClusterShape] = []
    has_matrix, has_list = f.has("matrix"), f.has("list")
    if has_matrix == has_list:
        f.fail("", "give exactly one of `matrix` (nodes x instance_types x volumes) or `list`")
        f.seen.update({"matrix", "list"})
        f.done()
        return shapes
    if has_matrix:
        m = f.sub("matrix")
        nodes = m.list("nodes") or []
        instances = m.list("instance_types") or []
        volumes = m.list("volumes") or []
        versions: list[str | None] = list(m.list("rabbitmq_versions", None) or [None])
        m.done()
        for i, version in enumerate(versions):
            if version is not None and (problem := version_problem(version)):
                m.fail(f"rabbitmq_versions[{i}]", problem)
                versions[i] = None
        for i, n in enumerate(nodes):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                m.fail(f"nodes[{i}]", f"entries must be positive integers, got {n!r}")
        for i, name in enumerate(instances):
            if not isinstance(name, str):
                m.fail("instance_types", f"entries must be strings, got {name!r}")
            else:
                _check_instance(m, f"instance_types[{i}]", name, catalog)
        parsed_volumes = [_parse_volume(v, join(m.path, f"volumes[{i}]"), catalog, f.problems)
                          for i, v in enumerate(volumes)]
        for n in nodes:
            for name in instances:
                for volume in parsed_volumes:
                    for version in versions:
                        if isinstance(n, int) and n >= 1 and isinstance(name, str) and volume is not None:
                            shapes.append(ClusterShape(n, name, volume, rabbitmq_version=version))
    else:
        entries = f.list("list") or []
        for i, entry in enumerate(entries):
            e = Fields(entry, join(join(f.path, "list"), i), f.problems)
            n = e.int("nodes", minimum=1)
            name = e.str("instance_type")
            ok = _check_instance(e, "instance_type", name, catalog)
            layout = _parse_layout(e, catalog, deployment)
            version = e.raw("rabbitmq_version", None)
            if version is not None and (problem := version_problem(version)):
                e.fail("rabbitmq_version", problem)
                ok = False
            e.done()
            if n and ok and layout is not None and name:
                shapes.append(ClusterShape(n, name, *layout, rabbitmq_version=version))
    f.done()
    ids = [s.config_id for s in shapes]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        f.fail("", f"config {dup} appears more than once")
    return shapes


def _parse_profile(value: Any, path: str, problems: list[Problem], minimum: float) -> tuple[ProfileSegment, ...]:
    """`[{hold: 10000, for_s: 300}, {ramp: [10000, 20000], for_s: 1200}, ...]`"""
    if not isinstance(value, list) or not value:
        problems.append(Problem(path, f"must be a non-empty list of holds and ramps, got {value!r}"))
        return ()
    segments: list[ProfileSegment] = []
    for i, item in enumerate(value):
        f = Fields(item, join(path, i), problems)
        duration = f.number("for_s", minimum=0, exclusive=True)
        is_hold, is_ramp = f.has("hold"), f.has("ramp")
        if is_hold == is_ramp:
            f.fail("", "must be exactly one of `hold: value` or `ramp: [from, to]`")
            f.seen.update({"hold", "ramp"})
            f.done()
            continue
        if is_hold:
            start = end = f.number("hold", minimum=minimum)
        else:
            ramp = f.list("ramp")
            start = end = None
            if ramp is not None:
                ok = len(ramp) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in ramp)
                if not ok:
                    f.fail("ramp", f"must be [from, to] numbers, got {ramp!r}")
                elif min(ramp) < minimum:
                    f.fail("ramp", f"values must be >= {minimum}, got {ramp!r}")
                else:
                    start, end = float(ramp[0]), float(ramp[1])
                    if segments and abs(segments[-1].end - start) > 1e-9:
                        f.fail("ramp", f"starts at {start:g} but the previous segment ends at "
                                       f"{segments[-1].end:g}; ramps must continue where the profile is")
        f.done()
        if start is not None and end is not None and duration is not None:
            segments.append(ProfileSegment(float(start), float(end), float(duration)))
    return tuple(segments)


def _parse_fault(value: Any, path: str, problems: list[Problem], deployment: str | None) -> FaultSpec | None:
    f = Fields(value, path, problems)
    start = len(problems)
    kind = f.str("kind", choices=FAULT_KINDS)
    if kind in NETWORK_FAULTS and deployment == "local":
        f.fail("kind", f"{kind} needs tc netem on real hosts: use deployment: aws "
                       f"(the local target runs every node on one loopback interface)")
    phases_raw = f.raw("phases", "all")
    phases: tuple[int, ...] | None = None
    if phases_raw != "all":
        if isinstance(phases_raw, int) and not isinstance(phases_raw, bool):
            phases_raw = [phases_raw]
        if not isinstance(phases_raw, list) or not phases_raw or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in phases_raw
        ):
            f.fail("phases", f"must be `all` or a list of phase numbers (1-based), got {phases_raw!r}")
        else:
            phases = tuple(phases_raw)
    at_fraction = f.number("at", None, minimum=0)
    at_s = f.number("at_s", None, minimum=0)
    if (at_fraction is None) == (at_s is None):
        f.fail("", "give exactly one of `at` (fraction of the phase, 0..1) or `at_s` (seconds into the phase)")
    if at_fraction is not None and at_fraction >= 1:
        f.fail("at", f"is a fraction of the phase and must be < 1, got {at_fraction}")
    target_raw = f.raw("target", "all" if kind == "rolling_restart" else "random")
    target, node, queue = "random", None, None
    if target_raw in ("random", "all"):
        target = target_raw
    elif isinstance(target_raw, Mapping) and set(target_raw) == {"node"}:
        node = target_raw["node"]
        if not isinstance(node, int) or isinstance(node, bool) or node < 1:
            f.fail("target.node", f"must be a node number >= 1, got {node!r}")
        target = "node"
    elif isinstance(target_raw, Mapping) and set(target_raw) == {"leader_of"}:
        queue = target_raw["leader_of"]
        if not isinstance(queue, str) or not queue:
            f.fail("target.leader_of", f"must be a queue name, got {queue!r}")
        target = "leader"
    else:
        f.fail("target", f"must be `random`, `all`, {{node: N}} or {{leader_of: queue}}; got {target_raw!r}")
    if kind == "rolling_restart" and target != "all":
        f.fail("target", "rolling_restart always restarts every node; use target: all")
    heal = f.number("heal_after_s", None, minimum=0, exclusive=True)
    if kind == "rolling_restart" and heal is not None:
        f.fail("heal_after_s", "rolling_restart heals itself node by node; remove heal_after_s")
    params = f.mapping("params", {}) or {}
    if kind == "network_delay" and "delay_ms" not in params:
        f.fail("params.delay_ms", "network_delay needs params.delay_ms")
    if kind == "network_loss" and "loss_percent" not in params:
        f.fail("params.loss_percent", "network_loss needs params.loss_percent")
    f.done()
    if len(problems) > start or kind is None:
        return None
    return FaultSpec(kind, phases, at_fraction, at_s, target, node, queue, heal, params)


def _scenario_workload(overrides: Mapping[str, Any], path: str, problems: list[Problem],
                       workload_raw: Mapping[str, Any], base: Workload | None) -> Workload | None:
    """The campaign workload with the scenario's overrides; reports only problems the overrides add."""
    if not overrides:
        return base
    own: list[Problem] = []
    workload = _parse_workload(Fields(deep_merge(workload_raw, overrides), path, own))
    already = {p.path for p in problems if p.path.startswith("workload")}
    problems.extend(p for p in own if "workload" + p.path[len(path):] not in already)
    return workload


def _parse_resolution(s: Fields) -> tuple[float | None, bool]:
    """`resolution: 2%` (of the last pass) or `resolution: 500` (msg/s)."""
    value = s.raw("resolution")
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            percent = float(value.strip()[:-1])
        except ValueError:
            percent = -1.0
        if 0 < percent < 100:
            return percent / 100.0, True
        s.fail("resolution", f"a relative resolution must be between 0 % and 100 %, got {value!r}")
    elif isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value), False
    elif value is not None:
        s.fail("resolution", f"must be a percentage of the rate (e.g. '2%') or msg/s (e.g. 500), got {value!r}")
    return None, False


def _parse_search(scenario: Fields, default_p99_ms: float | None) -> SearchSpec | None:
    """`search:` of a scenario; the SLO defaults to the campaign target's p99."""
    s = scenario.sub("search")
    start = len(s.problems)
    start_rate = s.number("start_rate", minimum=0, exclusive=True)
    upper_rate = s.number("upper_rate", minimum=0, exclusive=True)
    growth = s.number("growth", 2.0, minimum=1, exclusive=True)
    resolution, relative = _parse_resolution(s)
    warmup = s.number("warmup_s", minimum=0)
    measure = s.number("measure_s", minimum=0, exclusive=True)
    drain = s.number("drain_s", 60.0, minimum=0)
    max_disagreements = s.int("max_disagreements", 1, minimum=0)
    slo = s.sub("slo", required=False)
    p99 = slo.number("p99_ms", default_p99_ms, minimum=0, exclusive=True)
    p999 = slo.number("p999_ms", None, minimum=0, exclusive=True)
    if p99 is None and not slo.has("p99_ms"):
        slo.fail("p99_ms", "is required (the campaign target gives none)")
    if p99 is not None and p999 is not None and p999 < p99:
        slo.fail("p999_ms", f"({p999:g} ms) must be >= the p99 SLO ({p99:g} ms)")
    slo.done()
    if start_rate is not None and upper_rate is not None and upper_rate < start_rate:
        s.fail("upper_rate", f"({upper_rate:g}) must be >= start_rate ({start_rate:g})")
    s.done()
    for key in ("warmup_s", "consumer_processing_ms", "faults"):
        if scenario.has(key):
            scenario.fail(key, "does not apply to a search scenario (probe warm-up is search.warmup_s; "
                               "searches run under ideal conditions)")
    if len(s.problems) > start:
        return None
    assert start_rate and upper_rate and growth and resolution and measure and p99  # checked above
    return SearchSpec(start_rate, upper_rate, resolution, relative, warmup or 0.0, measure, drain or 0.0, p99, p999,
                      growth, max_disagreements if max_disagreements is not None else 1)


def _family_steps(scenarios: list[Scenario | None]) -> dict[str, list[str]]:
    """Each scenario family (a scenario as written: `isolate: true` runs are one) with its phase labels, in order."""
    out: dict[str, list[str]] = {}
    for scenario in scenarios:
        if scenario is None:
            continue
        labels = [x.label for x in scenario.step_settings or ()] or (
            [f"rate-{r:g}" for r in scenario.step_rates] if scenario.step_rates else [])
        out.setdefault(scenario.isolated_from or scenario.name, []).extend(labels)
    return out


def _parse_comparison(root: Fields, purpose: str | None, clusters: list[ClusterShape],
                      scenarios: list[Scenario | None]) -> Comparison | None:
    """`compare:` (purpose compare only): `by: config` with a `baseline` config id, or `by: step` with optional
    `baselines: {family: step}`; `versus: [{baseline: family[/step], other: family[/step]}]` in either case."""
    if not root.has("compare"):
        if purpose == "compare":
            root.fail("compare", "purpose compare needs `compare: {by: config, baseline: <config id>}`, "
                                 "`{by: step}` or `versus: [...]`: what is compared with what")
        return None
    c = root.sub("compare")
    if purpose != "compare":
        c.fail("", f"applies to purpose: compare only (this campaign's purpose is {purpose})")
    by = c.str("by", None, choices=COMPARE_BY)
    raw_baseline = c.raw("baseline", None)
    baselines = tuple(raw_baseline) if isinstance(raw_baseline, list) else (
        (raw_baseline,) if raw_baseline is not None else ())
    description = c.str("description", "") or ""
    families = _family_steps(scenarios)
    configs = [shape.config_id for shape in clusters]
    if by == "config":
        if not baselines:
            c.fail("baseline", f"by: config needs the baseline config id, or a list of them (of {', '.join(configs)})")
        for name in baselines:
            if configs and name not in configs:
                c.fail("baseline", f"names no config of this campaign: {name!r} (known: {', '.join(configs)})")
    elif baselines:
        c.fail("baseline", "only by: config takes baseline configs; by: step takes `baselines: {family: step}`")
    steps = c.mapping("baselines", {}) or {}
    if steps and by != "step":
        c.fail("baselines", "only by: step takes baseline steps")
    for name, step in steps.items():
        if name not in families:
            c.fail(f"baselines.{name}", f"names no scenario (known: {', '.join(families)})")
        elif step not in families[name]:
            c.fail(f"baselines.{name}", f"{step!r} is no step of {name} (its steps: {', '.join(families[name])})")

    def side(value: Any, where: str) -> tuple[str, str | None] | None:
        name, _, step = str(value).partition("/")
        if name not in families:
            c.problems.append(Problem(where, f"names no scenario: {name!r} (known: {', '.join(families)})"))
            return None
        if step and step not in families[name]:
            c.problems.append(Problem(where, f"{step!r} is no step of {name} (its steps: "
                                             f"{', '.join(families[name])})"))
            return None
        return name, step or None

    versus = []
    for i, entry in enumerate(c.list("versus", [], non_empty=False) or []):
        v = Fields(entry, join(join(c.path, "versus"), i), c.problems)
        base, other = v.str("baseline"), v.str("other")
        v.done()
        parsed = (side(base, f"{v.path}.baseline") if base else None, side(other, f"{v.path}.other") if other
                  else None)
        if parsed[0] and parsed[1]:
            versus.append(Versus(parsed[0][0], parsed[1][0], parsed[0][1], parsed[1][1]))
    if by is None and not versus and not c.problems:
        c.fail("", "give `by: config` / `by: step` and/or `versus: [...]`")
    c.done()
    return Comparison(by, baselines, dict(steps), tuple(versus), description)


def _parse_budget(root: Fields) -> Budget | None:
    if not root.has("budget"):
        root.seen.add("budget")
        return None
    b = root.sub("budget")
    max_cost = b.number("max_cost_usd", None, minimum=0, exclusive=True)
    max_hours = b.number("max_hours", None, minimum=0, exclusive=True)
    parallelism = b.int("parallelism", 1, minimum=1)
    if not b.has("max_cost_usd") and not b.has("max_hours"):
        b.fail("", "give max_cost_usd and/or max_hours")
    b.done()
    return Budget(max_cost, max_hours, parallelism or 1)


def _parse_scenario(value: Any, path: str, problems: list[Problem], workload_raw: Mapping[str, Any],
                    base_workload: Workload | None, deployment: str | None,
                    default_p99_ms: float | None = None) -> Scenario | tuple[Scenario, ...] | None:
    f = Fields(value, path, problems)
    start = len(problems)
    name = f.str("name")
    if name is not None and not all(ch.isalnum() or ch in "-_" for ch in name):
        f.fail("name", f"may only contain letters, digits, '-' and '_' (it names S3 partitions), got {name!r}")
    description = f.str("description", "") or ""
    overrides = f.mapping("workload", {}) or {}
    workload = _scenario_workload(overrides, join(path, "workload"), problems, workload_raw, base_workload)
    warmup = f.number("warmup_s", 0.0, minimum=0) or 0.0
    has_steps, has_profile, has_search = f.has("steps"), f.has("publish_rate"), f.has("search")
    step_rates: tuple[float, ...] | None = None
    step_duration: float | None = None
    publish_rate: tuple[ProfileSegment, ...] | None = None
    processing: tuple[ProfileSegment, ...] | None = None
    search: SearchSpec | None = None
    step_settings: tuple[StepSetting, ...] | None = None
    steps_dimension: str | None = None
    isolate = False
    if has_steps + has_profile + has_search != 1:
        f.fail("", "give exactly one of `steps` (increasing intensities), `publish_rate` (a profile) or "
                   "`search` (a capacity search)")
        f.seen.update({"steps", "publish_rate", "search"})
    elif has_search:
        search = _parse_search(f, default_p99_ms)
    elif has_steps:
        s = f.sub("steps")
        if s.has("vary") or s.has("sequence"):
            step_settings, steps_dimension, isolate = _parse_setting_steps(s, workload)
            if step_settings:
                step_rates = tuple(x.rate for x in step_settings)
        else:
            rates = s.list("rates") or []
            # PerfTest style (`--rate 50` x 200 producers): the values are per publisher.
            per_publisher = s.bool("per_publisher", False)
            factor = workload.publishers.count if per_publisher and workload else 1
            if not all(isinstance(r, int | float) and not isinstance(r, bool) and r > 0 for r in rates):
                s.fail("rates", f"must be positive msg/s {'per publisher' if per_publisher else 'totals'}, "
                                f"got {rates!r}")
            else:
                step_rates = tuple(float(r) * factor for r in rates)
            # Seed 000 ran each rate as its own 30-minute PerfTest run (`-z 1800`): `isolate: true` does that.
            isolate = bool(s.bool("isolate", False))
        step_duration = s.number("duration_s", minimum=0, exclusive=True)
        s.done()
        if step_duration is not None and warmup >= step_duration:
            f.fail("warmup_s", f"({warmup:g}s) must be shorter than each step ({step_duration:g}s)")
    else:
        publish_rate = _parse_profile(f.raw("publish_rate"), join(path, "publish_rate"), problems, 0.0)
    if f.has("consumer_processing_ms"):
        processing = _parse_profile(f.raw("consumer_processing_ms"), join(path, "consumer_processing_ms"),
                                    problems, 0.0)
        total = step_duration * len(step_rates) if step_rates and step_duration else (
            sum(s.duration_s for s in publish_rate) if publish_rate else None)
        if total is not None and processing and abs(sum(s.duration_s for s in processing) - total) > 1e-6:
            f.fail("consumer_processing_ms",
                   f"lasts {sum(s.duration_s for s in processing):g}s but the publish schedule lasts {total:g}s; "
                   f"the two profiles must add up to the same duration")
    if publish_rate and warmup >= sum(s.duration_s for s in publish_rate):
        f.fail("warmup_s", "must be shorter than the whole profile")
    faults_raw = f.list("faults", [], non_empty=False) or []
    faults = [_parse_fault(item, join(join(path, "faults"), i), problems, deployment)
              for i, item in enumerate(faults_raw)]
    n_phases = len(step_rates) if step_rates else None
    for i, fault in enumerate(faults):
        if fault and fault.phases and n_phases and max(fault.phases) > n_phases:
            problems.append(Problem(join(join(path, "faults"), i) + ".phases",
                                    f"names phase {max(fault.phases)} but the scenario has {n_phases} phases"))
    if isolate and any(fault and fault.phases for fault in faults):
        f.fail("faults", "with steps.isolate every step is a run of its own: a fault there applies to every run "
                         "(phases: all), not to numbered phases")
    if step_settings and faults_raw and any(x.rate_mode == RATE_MAX for x in step_settings):
        f.fail("faults", "a max-rate step has no target rate, and a scenario with faults is judged against its "
                         "target rate (held_target); use a scheduled rate for fault scenarios")
    if step_settings and processing:
        f.fail("consumer_processing_ms", "client-setting steps set processing time per step "
                                         "(vary: processing_ms, or processing_ms in a sequence entry)")
    groups_raw = f.list("groups", None)
    foreground_raw = f.str("foreground", None)
    tolerance = f.number("publish_tolerance_s", 0.0, minimum=0) or 0.0
    required = bool(f.bool("required", True))
    f.done()
    if len(problems) > start or workload is None or name is None:
        return None
    scenario = Scenario(name, step_rates, step_duration, publish_rate, processing, warmup,
                        tuple(x for x in faults if x is not None), workload, description, search,
                        step_settings, steps_dimension, publish_tolerance_s=tolerance, required=required)
    if f.has("publish_tolerance_s") and rules.scenario_kind(scenario) != rules.BACKLOG_ADVERSE:
        f.fail("publish_tolerance_s", "applies to backlog scenarios only (a publish_rate or consumer_processing_ms "
                                      "profile without faults), judged on seconds of reduced publish rate")
        return None
    if f.has("required") and not rules.is_adverse(scenario):
        f.fail("required", "applies to adverse scenarios only (faults, or a rate/processing profile): whether a "
                           "config must hold it to be recommended")
        return None
    if groups_raw is not None or foreground_raw is not None:
        return _with_groups(scenario, value, groups_raw, foreground_raw, path, problems, workload_raw,
                            base_workload, deployment, isolate)
    if step_settings:
        first = step_settings[0]
        scenario = replace(scenario, workload=_workload_with(workload, first))
    if isolate:
        return tuple(isolated_runs(scenario))
    return scenario


# ------------------------------------------------------------------------------------- workload groups
# Issue 14 (seed 001): `groups:` of a scenario run concurrently, each with its own workload (deep-merged onto the
# scenario's) and its own steps or a held `rate:`; every group has the scenario's phase boundaries, so one phase
# number means the same window for every group. The first group is the foreground unless `foreground:` says.


def _group_steps(g: Fields, scenario: Scenario, value: Mapping[str, Any]) -> tuple[Any, str]:
    """The `steps` mapping a group is parsed with, and the field path its problems belong to: its own `steps`,
    a held `rate:` written out as one step per scenario phase, or (neither) the scenario's."""
    n, duration = len(scenario.step_rates or ()), scenario.step_duration_s
    if g.has("steps") and g.has("rate"):
        g.fail("", "give either `steps` (the group's own steps) or `rate` (held over every phase), not both")
    if g.has("steps"):
        return g.raw("steps"), join(g.path, "steps")
    if g.has("rate"):
        rate = g.raw("rate")
        per_publisher = g.bool("per_publisher", False)
        max_rate = g.raw("max_rate", None)
        if (reason := _check_setting("rate", rate)) is not None:
            g.fail("rate", reason)
            return None, join(g.path, "rate")
        if rate == RATE_MAX:
            steps: dict[str, Any] = {"sequence": [{"rate": RATE_MAX}] * n, "duration_s": duration}
            if max_rate is not None:
                steps["max_rate"] = max_rate
            return steps, join(g.path, "rate")
        return {"rates": [rate] * n, "per_publisher": bool(per_publisher), "duration_s": duration}, join(g.path, "rate")
    return value.get("steps"), join(g.path, "steps")


def _hold_label(g: Mapping[str, Any]) -> str | None:
    if "rate" not in g:
        return None
    rate = g["rate"]
    return f"{_format_value(rate)}/publisher" if g.get("per_publisher") and rate != RATE_MAX else _format_value(rate)


def _with_groups(scenario: Scenario, value: Mapping[str, Any], groups_raw: list[Any] | None,
                 foreground_raw: str | None, path: str, problems: list[Problem], workload_raw: Mapping[str, Any],
                 base_workload: Workload | None, deployment: str | None, isolate: bool) -> Scenario | None:
    """The scenario with its workload groups parsed and checked; the scenario's own workload and steps become
    the foreground's. None (with problems recorded) when a group is invalid."""
    start = len(problems)
    where = join(path, "groups")
    if scenario.search is not None or scenario.step_rates is None:
        problems.append(Problem(where, "workload groups need a `steps` scenario (their phases follow its steps); "
                                       "a profile or a capacity search runs one workload"))
        return None
    if isolate:
        problems.append(Problem(where, "workload groups cannot run with steps.isolate (each step is its own run "
                                       "of one workload)"))
        return None
    entries = groups_raw if groups_raw is not None else [{"name": DEFAULT_GROUP}]
    scenario_overrides = value.get("workload") or {}
    groups: list[WorkloadGroup] = []
    names: dict[str, int] = {}
    queues: dict[str, tuple[int, str]] = {}
    for j, entry in enumerate(entries):
        g = Fields(entry, join(where, j), problems)
        before = len(problems)
        name = g.str("name")
        if name is not None and not all(ch.isalnum() or ch in "-_" for ch in name):
            g.fail("name", f"may only contain letters, digits, '-' and '_' (it names record rows), got {name!r}")
        elif name is not None and name in names:
            g.fail("name", f"group name {name!r} is used twice (groups[{names[name]}] has it)")
        elif name is not None:
            names[name] = j
        overrides = g.mapping("workload", {}) or {}
        g.str("description", "")
        steps_raw, steps_path = _group_steps(g, scenario, value)
        g.done()
        if len(problems) > before or name is None:
            continue
        merged, base_raw = deep_merge(scenario_overrides, overrides), workload_raw
        if isinstance(overrides.get("queues"), Mapping) and "arguments" in overrides["queues"]:
            # Queue arguments are the queue type's: a group's own replace what it inherits (a lazy classic group
            # must not carry the quorum foreground's x-quorum-initial-group-size).
            merged["queues"]["arguments"] = copy.deepcopy(overrides["queues"]["arguments"])
            base_raw = {**workload_raw, "queues": {k: v for k, v in (workload_raw.get("queues") or {}).items()
                                                   if k != "arguments"}}
        sub_value = {"name": scenario.name, "warmup_s": scenario.warmup_s, "steps": steps_raw, "workload": merged}
        own: list[Problem] = []
        parsed = _parse_scenario(sub_value, g.path, own, base_raw, base_workload, deployment)
        for problem in own:  # problems of what the group inherited were reported for the scenario itself
            if problem.path.startswith(join(g.path, "workload")):
                problems.append(problem)
            elif "rate" in entry or not problem.path.startswith(join(g.path, "steps")):
                problems.append(Problem(steps_path, problem.reason))  # a held rate: the steps were written for it
            else:
                problems.append(Problem(steps_path + problem.path[len(join(g.path, "steps")):], problem.reason))
        if not isinstance(parsed, Scenario) or own:
            if not own:
                problems.append(Problem(steps_path, "a group's steps cannot be isolated"))
            continue
        n, duration = len(scenario.step_rates), scenario.step_duration_s
        if len(parsed.step_rates or ()) != n or parsed.step_duration_s != duration:
            problems.append(Problem(steps_path, f"has {len(parsed.step_rates or ())} steps of "
                                                f"{parsed.step_duration_s:g}s but the scenario has {n} of "
                                                f"{duration:g}s; every group follows the scenario's phases"))
            continue
        for queue in parsed.workload.queues.names():
            if queue in queues and queues[queue][0] != j:
                problems.append(Problem(join(join(g.path, "workload"), "queues.name_pattern"),
                                        f"queue {queue!r} is also a queue of group {queues[queue][1]!r}; give "
                                        f"each group queue names of its own"))
                break
            queues[queue] = (j, name)
        groups.append(WorkloadGroup(name, parsed, _hold_label(entry) if isinstance(entry, Mapping) else None))
    if not entries:
        problems.append(Problem(where, "must list at least one group"))
    foreground = foreground_raw if foreground_raw is not None else (groups[0].name if groups else DEFAULT_GROUP)
    known = [g.name for g in groups]
    if foreground_raw is not None and len(problems) == start and foreground_raw not in known:
        problems.append(Problem(join(path, "foreground"), f"names no group: {foreground_raw!r} (groups: "
                                                          f"{', '.join(known)})"))
    if len(problems) > start:
        return None
    fg = next(g for g in groups if g.name == foreground).schedule
    return replace(scenario, workload=fg.workload, step_rates=fg.step_rates, step_settings=fg.step_settings,
                   steps_dimension=fg.steps_dimension, groups=tuple(groups), foreground=foreground)


# ------------------------------------------------------------------------------- client-setting steps
# Seed 003: steps that vary a client setting (one `vary` dimension with `values`, or a listed `sequence`), each
# at a scheduled rate or at `max` (closed loop). Checked here, before anything is provisioned.

# Max mode without a stated cap (`steps.max_rate`, total msg/s): the confirm window bounds the publisher; this
# per-publisher ceiling only sizes its sequence space (the per-message accounting arrays are preallocated).
DEFAULT_MAX_RATE_PER_PUBLISHER = 100_000.0
_SETTING_OF_WORKLOAD = {
    "confirms_in_flight": lambda w: w.publishers.confirms_in_flight,
    "prefetch": lambda w: w.consumers.prefetch,
    "multi_ack_every": lambda w: w.consumers.multi_ack_every,
    "auto_ack": lambda w: w.consumers.auto_ack,
    "message_size": lambda w: w.message.size_bytes,
    "processing_ms": lambda w: w.consumers.processing_ms,
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_setting(key: str, value: Any) -> str | None:
    """Why `value` is not valid for setting `key` (None: valid)."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if key == "rate":
        ok = value == RATE_MAX or (_is_number(value) and value > 0)
        return None if ok else f"must be a positive msg/s or 'max', got {value!r}"
    if key == "confirms_in_flight":
        return None if is_int and value >= 0 else f"must be an integer >= 0 (0: no confirms), got {value!r}"
    if key in ("prefetch", "multi_ack_every"):
        return None if is_int and value >= 1 else f"must be an integer >= 1, got {value!r}"
    if key == "auto_ack":
        return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
    if key == "message_size":
        return None if is_int and value >= 64 else f"must be an integer >= 64 (bytes), got {value!r}"
    if key == "processing_ms":
        return None if _is_number(value) and value >= 0 else f"must be a number >= 0 (ms), got {value!r}"
    return f"unknown step dimension {key!r} (known: {', '.join(STEP_DIMENSIONS)})"


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def step_label(setting: str, value: Any) -> str:
    """A client-setting step's label (its phase name): `prefetch=1000`."""
    return f"{setting}={_format_value(value)}"


def _parse_setting_steps(s: Fields, workload: Workload | None
                         ) -> tuple[tuple[StepSetting, ...] | None, str | None, bool]:
    """`steps: {vary: prefetch, values: [...]}` or `steps: {sequence: [{...}, ...]}`, plus `rate` (msg/s or
    `max`, the default for every step), `per_publisher`, `max_rate` (max mode's total cap) and `isolate`."""
    start = len(s.problems)
    per_publisher = bool(s.bool("per_publisher", False))
    isolate = bool(s.bool("isolate", False))
    cap = s.number("max_rate", None, minimum=0, exclusive=True)
    base_rate = s.raw("rate", RATE_MAX)
    if (reason := _check_setting("rate", base_rate)) is not None:
        s.fail("rate", reason)
    entries: list[tuple[str, dict[str, Any]]] = []  # (field path, the settings that entry sets)
    dimension: str | None = None
    if s.has("vary") and s.has("sequence"):
        s.fail("", "give either `vary` + `values` (one dimension) or `sequence` (a listed sequence), not both")
        s.seen.update({"vary", "values", "sequence"})
    elif s.has("vary"):
        dimension = s.str("vary")
        values = s.list("values") or []
        if dimension is not None and dimension not in STEP_DIMENSIONS:
            s.fail("vary", f"unknown step dimension {dimension!r} (known: {', '.join(STEP_DIMENSIONS)})")
            dimension = None
        if dimension is not None:
            entries = [(join(join(s.path, "values"), i), {dimension: v}) for i, v in enumerate(values)]
    else:
        dimension = "sequence"
        for i, item in enumerate(s.list("sequence") or []):
            path = join(join(s.path, "sequence"), i)
            if not isinstance(item, Mapping) or not item:
                s.problems.append(Problem(path, f"must be a mapping of settings, got {item!r}"))
                continue
            entries.append((path, dict(item)))
    if workload is None or len(s.problems) > start:
        return None, None, isolate
    pubs = workload.publishers.count
    settings: list[StepSetting] = []
    for path, entry in entries:
        values: dict[str, Any] = {key: get(workload) for key, get in _SETTING_OF_WORKLOAD.items()}
        values["rate"] = base_rate
        bad = False
        for key, value in entry.items():
            reason = _check_setting(key, value)
            if reason is not None:
                s.problems.append(Problem(path if dimension != "sequence" else join(path, key), reason))
                bad = True
            values[key] = value
        if bad:
            continue
        if values["multi_ack_every"] > values["prefetch"]:
            s.problems.append(Problem(path, f"multi_ack_every ({values['multi_ack_every']}) must be <= prefetch "
                                            f"({values['prefetch']}), or consumers stall"))
            continue
        is_max = values["rate"] == RATE_MAX
        if is_max and values["confirms_in_flight"] == 0 and cap is None:
            s.problems.append(Problem(path, "rate max with confirms_in_flight 0 has no window to bound it: give "
                                            "steps.max_rate (total msg/s cap) so the generator cannot starve itself"))
            continue
        if is_max:
            rate = cap if cap is not None else DEFAULT_MAX_RATE_PER_PUBLISHER * pubs
        else:
            rate = float(values["rate"]) * (pubs if per_publisher else 1)
        label = ",".join(step_label(key, value) for key, value in entry.items())
        settings.append(StepSetting(label, RATE_MAX if is_max else RATE_SCHEDULED, float(rate),
                                    values["confirms_in_flight"], values["prefetch"], values["multi_ack_every"],
                                    values["auto_ack"], values["message_size"], float(values["processing_ms"])))
    if len(s.problems) > start:
        return None, None, isolate
    if not isolate:
        for (path, _entry), before, after in zip(entries[1:], settings, settings[1:], strict=False):
            for reason in live_change_problems(before, after):
                s.problems.append(Problem(path, f"{reason}; set steps.isolate: true (a fresh run per value)"))
    return (tuple(settings) if len(s.problems) == start else None), dimension, isolate


def live_change_problems(before: StepSetting, after: StepSetting) -> list[str]:
    """Why the generator cannot change from `before` to `after` within one run (empty: it can)."""
    problems = []
    if (before.confirms_in_flight == 0) != (after.confirms_in_flight == 0):
        problems.append(f"confirms_in_flight cannot change live from {before.confirms_in_flight} to "
                        f"{after.confirms_in_flight}: {CONFIRM_MODE_LIVE}")
    if before.auto_ack != after.auto_ack:
        problems.append(f"auto_ack cannot change live: {STEP_DIMENSIONS['auto_ack']}")
    if before.size_bytes != after.size_bytes:
        problems.append(f"message_size cannot change live: {STEP_DIMENSIONS['message_size']}")
    return problems


def _workload_with(workload: Workload, setting: StepSetting) -> Workload:
    """The workload as the run starts it: the (first) step's settings applied."""
    return replace(
        workload,
        message=replace(workload.message, size_bytes=setting.size_bytes),
        publishers=replace(workload.publishers, confirms_in_flight=setting.confirms_in_flight),
        consumers=replace(workload.consumers, prefetch=setting.prefetch, multi_ack_every=setting.multi_ack_every,
                          auto_ack=setting.auto_ack, processing_ms=setting.processing_ms))


def isolated_runs(scenario: Scenario) -> list[Scenario]:
    """`isolate: true`: one single-phase scenario per step, named `<scenario>-<setting>-<value>` (client settings)
    or `<scenario>-rate-<rate>` (rate steps), each its own run (the runner declares and purges its queues), so a
    slow step cannot spoil the next (seed 003, #2) and every rate starts from an empty cluster (seed 000)."""
    if not scenario.step_settings:
        return [replace(scenario, name=f"{scenario.name}-rate-{rate:g}".replace(".", "p"), step_rates=(rate,),
                        isolated_from=scenario.name) for rate in scenario.step_rates or ()]
    runs = []
    for setting in scenario.step_settings:
        slug = setting.label.replace("=", "-").replace(",", "_").replace(".", "p")
        runs.append(replace(scenario, name=f"{scenario.name}-{slug}", step_rates=(setting.rate,),
                            step_settings=(setting,), workload=_workload_with(scenario.workload, setting),
                            isolated_from=scenario.name))
    return runs


def family_name(scenario: Scenario) -> str:
    """The scenario as written: an `isolate: true` scenario's runs are one family."""
    return scenario.isolated_from or scenario.name


def selected(scenario: Scenario, names: tuple[str, ...] | list[str] | None) -> bool:
    """A scenario filter (the DAG's `scenarios` param, `sizing plan`): empty selects everything; a name selects the
    scenario as written (every run of an isolated one) or one of its runs."""
    return not names or scenario.name in names or family_name(scenario) in names


def scenario_names(scenarios: tuple[Scenario, ...] | list[Scenario]) -> set[str]:
    """Every name a scenario filter accepts: the runs' and the families'."""
    return {s.name for s in scenarios} | {family_name(s) for s in scenarios}


def families(scenarios: tuple[Scenario, ...] | list[Scenario]) -> list[Scenario]:
    """One scenario per family, in spec order: an isolated family as its scenario as written (every step, its
    name), so that verdicts, findings and charts treat it as one scenario; a phase of member k is its step k."""
    out: dict[str, Scenario] = {}
    for scenario in scenarios:
        name = family_name(scenario)
        if name not in out:
            out[name] = replace(scenario, name=name, isolated_from=None)
        elif scenario.isolated_from:
            kept = out[name]
            out[name] = replace(kept, step_rates=(*(kept.step_rates or ()), *(scenario.step_rates or ())),
                                step_settings=(*(kept.step_settings or ()), *(scenario.step_settings or ()))
                                if scenario.step_settings else kept.step_settings)
    return list(out.values())


def as_family_row(row: Mapping[str, Any], phases: Mapping[str, tuple[str, int | None]]) -> dict[str, Any]:
    """A phase_summary row of an isolated run as a phase of its family (scenario = family, phase = step number);
    other rows unchanged. `phases`: family_phases of the campaign's scenarios."""
    family, number = phases.get(row["scenario"], (row["scenario"], None))
    return {**row, "scenario": family, "phase": number if number is not None else row["phase"]}


def family_phases(scenarios: tuple[Scenario, ...] | list[Scenario]) -> dict[str, tuple[str, int | None]]:
    """scenario name -> (its family, the phase number its one phase has in the family, None: keep its own)."""
    index: dict[str, int] = {}
    out: dict[str, tuple[str, int | None]] = {}
    for scenario in scenarios:
        name = family_name(scenario)
        if scenario.isolated_from:
            index[name] = index.get(name, 0) + 1
            out[scenario.name] = (name, index[name])
        else:
            out[scenario.name] = (name, None)
    return out


def parse_campaign(data: Any, source: str = "campaign", catalog: Catalog | None = None) -> Campaign:
    """Validate a campaign mapping. Raises SpecError with every problem found."""
    problems: list[Problem] = []
    root = Fields(data, "", problems)
    name = root.str("name")
    if name is not None and not all(ch.isalnum() or ch in "-_" for ch in name):
        root.fail("name", f"may only contain letters, digits, '-' and '_' (it names S3 partitions), got {name!r}")
    description = root.str("description", "") or ""
    deployment = root.str("deployment", "local", choices=DEPLOYMENTS)
    catalog_name = root.str("catalog")
    if catalog is None and catalog_name is not None:
        try:
            catalog = load_catalog(catalog_name)
        except SpecError as err:
            problems.extend(Problem("catalog", p.reason) for p in err.problems)
    t = root.sub("target")
    target = Target(rate=t.number("rate", minimum=0, exclusive=True) or 0.0,
                    p99_latency_ms=t.number("p99_latency_ms", minimum=0, exclusive=True) or 0.0)
    t.done()
    workload_raw = root.mapping("workload") or {}
    workload = _parse_workload(Fields(workload_raw, "workload", problems))
    clusters = _parse_clusters(root.sub("clusters"), catalog, deployment)
    if deployment == "local":
        for shape in clusters:
            if shape.nodes > MAX_LOCAL_NODES:
                problems.append(Problem("clusters", f"config {shape.config_id} asks for {shape.nodes} nodes; the "
                                                    f"local target runs at most {MAX_LOCAL_NODES} on one machine"))
    repeats = root.int("repeats", 1, minimum=1) or 1
    broker_config = root.mapping("broker_config", {}) or {}
    problems.extend(check_broker_config(broker_config, deployment))
    if workload is not None:
        problems.extend(check_message_size(workload.message.size_bytes, broker_config, "workload.message.size_bytes"))
    seed = root.int("seed", 2020) or 2020
    scenarios_raw = root.list("scenarios") or []
    scenarios: list[Scenario | None] = []
    for i, item in enumerate(scenarios_raw):
        parsed = _parse_scenario(item, join("scenarios", i), problems, workload_raw, workload, deployment,
                                 target.p99_latency_ms or None)
        # `isolate: true` gives one scenario (run, fresh queues) per step value, each a single phase.
        scenarios.extend(parsed if isinstance(parsed, tuple) else [parsed])
    for i, scenario in enumerate(scenarios):
        if scenario is None or workload is None:
            continue
        # a grouped scenario's workload is its foreground group's: each group is checked once, under its own path
        own = ([(f"scenarios[{i}].groups[{j}].workload", g.workload) for j, g in enumerate(scenario.groups)]
               or [(f"scenarios[{i}].workload", scenario.workload)])
        for where, w in own:
            if w.message.size_bytes != workload.message.size_bytes:
                problems.extend(check_message_size(w.message.size_bytes, broker_config, f"{where}.message.size_bytes"))
    names = [s.name for s in scenarios if s]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem("scenarios", f"scenario name {dup!r} is used more than once"))
    min_nodes = min((s.nodes for s in clusters), default=0)
    for i, scenario in enumerate(scenarios):
        for j, fault in enumerate(scenario.faults if scenario else ()):
            if fault.target == "node" and fault.node and fault.node > min_nodes:
                problems.append(Problem(
                    f"scenarios[{i}].faults[{j}].target.node",
                    f"node {fault.node} does not exist in the smallest cluster ({min_nodes} nodes)"))
    budget = _parse_budget(root)
    purpose = root.str("purpose", "size", choices=PURPOSES)
    comparison = _parse_comparison(root, purpose, clusters, scenarios)
    root.done()
    if problems or workload is None or catalog is None:
        raise SpecError(problems or [Problem("", "invalid")], source)
    campaign = Campaign(
        name=name or "", description=description, deployment=deployment or "local",
        catalog_name=catalog_name or "", catalog=catalog, target=target, workload=workload,
        clusters=tuple(clusters), scenarios=tuple(s for s in scenarios if s is not None),
        repeats=repeats, seed=seed, broker_config=broker_config, raw=copy.deepcopy(dict(data)), budget=budget,
        purpose=purpose or "size", comparison=comparison,
    )
    return campaign


def read_campaign_yaml(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a campaign file, resolving `extends: other.yaml` (deep merge; lists are replaced whole)."""
    path = Path(path).resolve()
    if not path.exists():
        raise SpecError([Problem("", f"campaign file {str(path)!r} does not exist")], str(path))
    if path in _chain:
        raise SpecError([Problem("extends", f"cycle: {' -> '.join(p.name for p in (*_chain, path))}")], str(path))
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpecError([Problem("", f"is not valid YAML: {err}")], str(path)) from err
    if isinstance(data, Mapping) and "extends" in data:
        parent = data["extends"]
        if not isinstance(parent, str):
            raise SpecError([Problem("extends", f"must be a file name, got {parent!r}")], str(path))
        base = read_campaign_yaml(path.parent / parent, (*_chain, path))
        data = deep_merge(base, {k: v for k, v in data.items() if k != "extends"})
    return data


def load_campaign(path: str | Path) -> Campaign:
    return parse_campaign(read_campaign_yaml(path), source=str(path))
