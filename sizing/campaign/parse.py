"""Parsing a campaign mapping into the model: every problem collected with its field path (sizing.documents.fields),
nothing provisioned before `parse_campaign` succeeds."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from string import Formatter
from typing import Any

from sizing.campaign.brokerconf import check_broker_config, check_message_size
from sizing.campaign.groups import with_groups
from sizing.campaign.model import (
    COMPARE_BY,
    DEPLOYMENTS,
    FAULT_KINDS,
    LOOPBACK,
    NAMESPACE_FAULTS,
    NAMESPACES,
    NETWORK_FAULTS,
    NETWORKS,
    PARTITION,
    PARTITION_BOTH,
    PARTITION_DIRECTIONS,
    PURPOSES,
    QUEUE_TYPES,
    RATE_MAX,
    Budget,
    Campaign,
    ClusterShape,
    Comparison,
    ConsumerSpec,
    FaultSpec,
    MessageSpec,
    ProfileSegment,
    PublisherSpec,
    QueueSpec,
    Scenario,
    StepSetting,
    Target,
    Versus,
    Workload,
    client_queue,
)
from sizing.campaign.queueargs import check_queue_arguments
from sizing.campaign.steps import isolated_runs, parse_setting_steps, workload_with
from sizing.campaign.versionrules import configs_by_version, version_findings
from sizing.criteria import rules
from sizing.criteria.rules import CLIENT_LATENCY, GENERATOR_FAULTS
from sizing.criteria.search import SearchSpec
from sizing.documents.fields import (
    MAX_COUNT,
    MAX_DURATION_S,
    MAX_INT,
    MAX_RATE,
    MAX_REPEATS,
    Fields,
    Problem,
    SpecError,
    deep_merge,
    join,
    merged_document,
    not_recorded,
    number_problem,
    scalar_form,
    text_problem,
)
from sizing.documents.yamlload import document_problems
from sizing.resources.catalog import Catalog, load_catalog
from sizing.resources.cost import Volume
from sizing.resources.disks import DATA_ROLE, FILESYSTEMS, VOLUME_ROLES, RoleVolume
from sizing.resources.existing import existing_problems, parse_existing
from sizing.resources.localports import LOCAL_MAX_NODES, LOCAL_PORT_BLOCK
from sizing.resources.scalemodel import (
    DEFAULT_FACTORS,
    GENERATOR_FLOORS,
    MEMORY_OVERRIDE,
    MODEL_FACTORS,
    OFF,
    NodeEnvelope,
    ScaleFactors,
    envelope_problems,
    fitted_factors,
    node_envelope,
)
from sizing.resources.versions import version_problem

# Bounds of this module's fields (sizing.documents.fields has the shared ones: counts, rates, durations, repeats).
MAX_CLUSTER_NODES = 100
MAX_PREFETCH = 65535  # basic.qos prefetch-count is an AMQP short
MAX_CONFIRMS_IN_FLIGHT = 1_000_000
MAX_PROCESSING_MS = MAX_DURATION_S * 1000
MAX_LATENCY_MS = 3_600_000.0
MAX_QUEUE_NAME_BYTES = 255  # an AMQP shortstr
MAX_VOLUME_GB = 65536  # EBS: 64 TiB
MAX_PHASES = 10_000
MAX_CONFIGS = 1000  # clusters of one campaign (a matrix multiplies its lists)
MAX_LADDER = 200  # rungs of a search's ladder (start_rate x growth^k up to upper_rate)
MAX_SEED = 2**32 - 1  # what numpy's and random's seeding take without folding
# The parameters each fault kind reads (loadgen.faults.commands.netem_args, loadgen.faults.proxy); every other kind
# takes none. A parameter in FAULT_PARAMS_ZERO_OK may be 0 (no jitter; no delay in one direction).
FAULT_PARAMS: dict[str, dict[str, tuple[float, float]]] = {
    "network_delay": {"delay_ms": (0.0, 60_000.0), "jitter_ms": (0.0, 60_000.0)},
    "network_loss": {"loss_percent": (0.0, 100.0)},
    CLIENT_LATENCY: {"to_broker_ms": (0.0, 10_000.0), "to_client_ms": (0.0, 10_000.0)},
}
FAULT_PARAMS_OPTIONAL = ("jitter_ms",)
FAULT_PARAMS_ZERO_OK = ("jitter_ms", "to_broker_ms", "to_client_ms")
_NUMBER_FORMAT = re.compile(r"(0?[1-9]d?)?")  # `{n}`, `{n:03d}`, `{n:3}`: at most 9 wide
_INTERFACE = re.compile(r"[A-Za-z0-9_.:-]{1,15}")  # a Linux interface name (IFNAMSIZ 16, with its NUL)

# --------------------------------------------------------------------------------------------- parsing


def idle_consumers(queues: int, publishers: int, consumers: int) -> int:
    """Consumers left on queues no publisher feeds, with the generator's spread (client_queue, as
    loadgen.schedule.plan_clients deals them): a campaign with them measures idle consumers, not a backlog."""
    if not queues:
        return 0
    fed = {client_queue(i, queues) for i in range(publishers)}
    return sum(1 for j in range(consumers) if client_queue(j, queues) not in fed)


def _parse_workload(f: Fields) -> Workload | None:
    start = len(f.problems)
    q = f.sub("queues")
    qtype = q.str("type", choices=QUEUE_TYPES)
    pattern = q.str("name_pattern", "queue-{n}")
    count = q.int("count", minimum=1, maximum=MAX_COUNT)
    if pattern is not None and (reason := _name_pattern_problem(pattern, count or 1)) is not None:
        q.fail("name_pattern", reason)
        pattern = None
    arguments = q.mapping("arguments", {})
    policy = q.mapping("policy", None)
    if qtype == "mirrored" and not policy:
        q.fail("policy", "mirrored queues need an HA policy, e.g. {ha-mode: exactly, ha-params: 2}")
    if qtype not in (None, "mirrored") and policy and any(k.startswith("ha-") for k in policy):
        q.fail("policy", f"ha-* policy keys only apply to mirrored queues, not {qtype}")
    q.problems.extend(check_queue_arguments(arguments or {}, qtype, join(q.path, "arguments")))
    queues = QueueSpec(
        count=count or 0,
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
        count=p.int("count", minimum=1, maximum=MAX_COUNT) or 0,
        confirms_in_flight=p.int("confirms_in_flight", minimum=0, maximum=MAX_CONFIRMS_IN_FLIGHT) or 0,
        random_start_delay_s=p.number("random_start_delay_s", 0.0, minimum=0, maximum=MAX_DURATION_S) or 0.0,
        mandatory=bool(p.bool("mandatory", False)),
    )
    p.done()
    c = f.sub("consumers")
    consumers = ConsumerSpec(
        count=c.int("count", minimum=1, maximum=MAX_COUNT) or 0,
        prefetch=c.int("prefetch", minimum=1, maximum=MAX_PREFETCH) or 0,
        multi_ack_every=c.int("multi_ack_every", 1, minimum=1, maximum=MAX_PREFETCH) or 1,
        processing_ms=c.number("processing_ms", 0.0, minimum=0, maximum=MAX_PROCESSING_MS) or 0.0,
        auto_ack=bool(c.bool("auto_ack", False)),
    )
    if consumers.prefetch and consumers.multi_ack_every > consumers.prefetch:
        c.fail("multi_ack_every", f"must be <= prefetch ({consumers.prefetch}), or consumers stall waiting "
                                  f"for deliveries that never come")
    c.done()
    f.done()
    if idle := idle_consumers(queues.count, publishers.count, consumers.count):
        unfed = queues.count - publishers.count
        f.fail("publishers.count", f"{publishers.count} publisher(s) over {queues.count} queues: publisher i feeds "
                                   f"queue i mod {queues.count} (PerfTest's spread), so {unfed} queue(s) never get a "
                                   f"message and {idle} consumer(s) would idle on them; use at least {queues.count} "
                                   "publishers, or fewer queues")
    if qtype == "stream" and message.persistent is False:
        f.fail("message.persistent", "stream queues always persist; set persistent: true")
    if len(f.problems) > start:
        return None
    return Workload(queues, message, publishers, consumers)


def _name_pattern_problem(pattern: str, count: int) -> str | None:
    """Why `pattern` cannot name queues 1..count (None: it can): `{n}` is its only format field (a zero-padded width
    such as `{n:03d}` allowed), and the longest name fits AMQP's shortstr."""
    try:
        fields = [(name, spec, conversion) for _text, name, spec, conversion in Formatter().parse(pattern)
                  if name is not None]
    except ValueError as err:
        return f"is a format string with one field, {{n}}; {pattern!r}: {err} (write a literal brace as {{{{ or }}}})"
    if not any(name == "n" for name, _spec, _conversion in fields):
        return f"must contain '{{n}}' (the queue number), got {pattern!r}"
    for name, spec, conversion in fields:
        if name != "n" or conversion is not None or not _NUMBER_FORMAT.fullmatch(spec or ""):
            return (f"may hold one format field, {{n}} (the queue number, e.g. {{n}} or {{n:03d}}); got "
                    f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}} in {pattern!r}")
    longest = pattern.format(n=count)
    if len(longest.encode()) > MAX_QUEUE_NAME_BYTES:
        return (f"makes queue names of {len(longest.encode())} bytes ({longest[:40]!r}...); AMQP takes at most "
                f"{MAX_QUEUE_NAME_BYTES}")
    return None


def scenario_workloads(scenarios: list[Scenario | None]) -> Iterator[tuple[str, Workload]]:
    """Every workload the scenarios run, under its own path: a grouped scenario's groups' (its own workload is its
    foreground group's, so each is met once), else the scenario's."""
    for i, scenario in enumerate(scenarios):
        if scenario is None:
            continue
        yield from ([(f"scenarios[{i}].groups[{j}].workload", g.workload) for j, g in enumerate(scenario.groups)]
                    or [(f"scenarios[{i}].workload", scenario.workload)])


def _declaration(queues: QueueSpec) -> tuple[str, bool, tuple, tuple]:
    """What a queue keeps from its first declaration for its life: its type, durability and arguments (the broker
    refuses a declaration that differs, 406 PRECONDITION_FAILED), and the mirroring policy the generator puts on
    its name."""
    return (queues.type, queues.declared_durable, tuple(sorted((k, repr(v)) for k, v in queues.arguments.items())),
            tuple(sorted((k, repr(v)) for k, v in (queues.policy or {}).items())))


def redeclared_queues(scenarios: list[Scenario | None]) -> list[Problem]:
    """A queue name that two scenarios (or workload groups) of a trial declare differently: the scenarios run one
    after another on one cluster, so the second declaration would be refused mid-trial (a mirrored arm reusing a
    quorum arm's queue name: "inequivalent arg 'x-queue-type'"), or a classic queue would inherit a mirroring
    policy. Found before anything is provisioned, at the later workload's name_pattern."""
    first: dict[str, tuple[str, tuple]] = {}  # queue name -> (where first declared, its declaration)
    problems = []
    for where, workload in scenario_workloads(scenarios):
        declaration = _declaration(workload.queues)
        for name in workload.queues.names():
            if name in first and first[name][1] != declaration:
                where_first, before = first[name]
                here = (f"as a {declaration[0]} one" if before[0] != declaration[0]
                        else "with other durability, arguments or policy")
                problems.append(Problem(f"{where}.queues.name_pattern", (
                    f"queue {name!r} is declared at {where_first} as a {before[0]} queue and here {here}: a queue "
                    f"keeps its first declaration on the cluster, so the broker would refuse this one mid-trial; "
                    f"give this workload queue names of its own")))
                break
            first.setdefault(name, (where, declaration))
    return problems


def _workloads_to_check(workload: Workload | None, scenarios: list[Scenario | None]) -> list[tuple[str, Workload]]:
    """The campaign workload, and every scenario group's whose queues differ from it, each under its own path."""
    if workload is None:
        return []
    return [("workload", workload),
            *((where, w) for where, w in scenario_workloads(scenarios) if w.queues != workload.queues)]


def _parse_volume(value: Any, path: str, catalog: Catalog | None, problems: list[Problem], role: bool = False
                  ) -> Volume | None:
    """`volume: gp2` or `{type: gp2, size_gb: ...}`; `role`: an entry of `volumes` (its role checked by the caller)."""
    if isinstance(value, str):
        scalar_form(path)
        value = {"type": value}
    f = Fields(value, path, problems)
    if role:
        f.raw("role", None)
    vtype = f.str("type")
    price = catalog.volumes.get(vtype) if catalog is not None and vtype else None
    # Provisioned IOPS and MiB/s within the volume type's own limits (the catalog's max_iops / max_mib_s).
    max_iops = price.max_iops if price is not None and price.max_iops else MAX_INT
    max_mib_s = int(price.max_mib_s) if price is not None and price.max_mib_s else MAX_INT
    volume = Volume(
        type=vtype or "",
        size_gb=f.int("size_gb", None, minimum=1, maximum=MAX_VOLUME_GB),
        iops=f.int("iops", None, minimum=0, maximum=max_iops, widest=MAX_INT),
        throughput_mbps=f.int("throughput_mbps", None, minimum=0, maximum=max_mib_s, widest=MAX_INT),
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
    required; sizing/resources/disks.py), and an optional `filesystem`. None (with problems recorded) when invalid."""
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
        volume = _parse_volume(entry, where, catalog, e.problems, role=True)
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
            if (reason := number_problem(n, 1, MAX_CLUSTER_NODES, integer=True)) is not None:
                m.fail(f"nodes[{i}]", reason)
                nodes[i] = None
        for i, name in enumerate(instances):
            if (reason := text_problem(name)) is not None:
                m.fail(f"instance_types[{i}]", reason)
            else:
                _check_instance(m, f"instance_types[{i}]", name, catalog)
        parsed_volumes = [_parse_volume(v, join(m.path, f"volumes[{i}]"), catalog, f.problems)
                          for i, v in enumerate(volumes)]
        if len(nodes) * len(instances) * len(volumes) * len(versions) > MAX_CONFIGS:
            m.fail("", f"makes {len(nodes) * len(instances) * len(volumes) * len(versions)} configs; a campaign "
                       f"has at most {MAX_CONFIGS}")
            nodes = []
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
            n = e.int("nodes", minimum=1, maximum=MAX_CLUSTER_NODES)
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


def _parse_profile(value: Any, path: str, problems: list[Problem], minimum: float, maximum: float
                   ) -> tuple[ProfileSegment, ...]:
    """`[{hold: 10000, for_s: 300}, {ramp: [10000, 20000], for_s: 1200}, ...]`"""
    if not isinstance(value, list) or not value:
        problems.append(Problem(path, f"must be a non-empty list of holds and ramps, got {value!r}"))
        return ()
    segments: list[ProfileSegment] = []
    for i, item in enumerate(value):
        f = Fields(item, join(path, i), problems)
        duration = f.number("for_s", minimum=0, exclusive=True, maximum=MAX_DURATION_S)
        is_hold, is_ramp = f.has("hold"), f.has("ramp")
        if is_hold == is_ramp:
            f.fail("", "must be exactly one of `hold: value` or `ramp: [from, to]`")
            f.seen.update({"hold", "ramp"})
            f.done()
            continue
        if is_hold:
            start = end = f.number("hold", minimum=minimum, maximum=maximum)
        else:
            ramp = f.list("ramp")
            start = end = None
            if ramp is not None:
                reasons = [r for v in ramp if (r := number_problem(v, minimum, maximum)) is not None]
                if len(ramp) != 2:
                    f.fail("ramp", f"must be [from, to] numbers, got {ramp!r}")
                elif reasons:
                    f.fail("ramp", f"values {reasons[0]}")
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
    kind = f.str("kind", choices=FAULT_KINDS)  # what the local target's network carries: _parse_network
    if kind == PARTITION and deployment == "existing":
        f.fail("kind", f"{kind} cuts the cluster's own network: an existing cluster is not ours to cut")
    phases_raw = f.raw("phases", "all")
    phases: tuple[int, ...] | None = None
    if phases_raw != "all":
        if isinstance(phases_raw, int) and not isinstance(phases_raw, bool):
            phases_raw = [phases_raw]
        if not isinstance(phases_raw, list) or not phases_raw or len(phases_raw) > MAX_PHASES or any(
            number_problem(p, 1, MAX_PHASES, integer=True) for p in phases_raw
        ):
            f.fail("phases", f"must be `all` or a list of phase numbers (1-based), got {phases_raw!r}")
        else:
            phases = tuple(phases_raw)
    at_fraction = f.number("at", None, minimum=0)
    at_s = f.number("at_s", None, minimum=0, maximum=MAX_DURATION_S)
    if (at_fraction is None) == (at_s is None):
        f.fail("", "give exactly one of `at` (fraction of the phase, 0..1) or `at_s` (seconds into the phase)")
    if at_fraction is not None and at_fraction >= 1:
        f.fail("at", f"is a fraction of the phase and must be < 1, got {at_fraction}")
    target_raw = f.raw("target", "all" if kind in ("rolling_restart", *GENERATOR_FAULTS) else "random")
    target, node, queue = "random", None, None
    if target_raw in ("random", "all"):
        target = target_raw
    elif isinstance(target_raw, Mapping) and set(target_raw) == {"node"}:
        node = target_raw["node"]
        if (reason := number_problem(node, 1, MAX_CLUSTER_NODES, integer=True)) is not None:
            f.fail("target.node", f"is a node number: {reason}")
        target = "node"
    elif isinstance(target_raw, Mapping) and set(target_raw) == {"leader_of"}:
        queue = target_raw["leader_of"]
        if (reason := text_problem(queue, MAX_QUEUE_NAME_BYTES)) is not None:
            f.fail("target.leader_of", f"is a queue name: {reason}")
        target = "leader"
    else:
        f.fail("target", f"must be `random`, `all`, {{node: N}} or {{leader_of: queue}}; got {target_raw!r}")
    if kind == "rolling_restart" and target != "all":
        f.fail("target", "rolling_restart always restarts every node; use target: all")
    if kind == PARTITION and target == "all":
        f.fail("target", f"{kind} cuts one node off from the others: use target random, {{node: N}} or "
                         f"{{leader_of: queue}}")
    if kind in GENERATOR_FAULTS and target != "all":
        f.fail("target", f"{kind} delays the generator's connections to every node; use target: all")
    heal = f.number("heal_after_s", None, minimum=0, exclusive=True, maximum=MAX_DURATION_S)
    if kind == "rolling_restart" and heal is not None:
        f.fail("heal_after_s", "rolling_restart heals itself node by node; remove heal_after_s")
    params = _fault_params(f, kind)
    f.done()
    if len(problems) > start or kind is None:
        return None
    return FaultSpec(kind, phases, at_fraction, at_s, target, node, queue, heal, params)


def _fault_params(f: Fields, kind: str | None) -> dict[str, Any]:
    """A fault's `params`: the numbers its kind reads (FAULT_PARAMS), a partition's `direction` and, for network
    faults, `interface`; any other key is refused, so that a typo is not dropped and nothing unread rides along into
    the spec hash."""
    p = f.sub("params", required=False)
    if kind is None:
        p.seen.update(p.data)
        return {}
    known = FAULT_PARAMS.get(kind, {})
    params: dict[str, Any] = {}
    for name, (low, high) in known.items():
        if name not in FAULT_PARAMS_OPTIONAL and not p.has(name):
            p.seen.add(name)
            p.fail(name, f"{kind} needs params.{name}")
            continue
        value = p.number(name, None, minimum=low, maximum=high, exclusive=name not in FAULT_PARAMS_ZERO_OK)
        if value is not None:
            params[name] = value
    if kind == CLIENT_LATENCY and len(params) == len(known) and not any(params.values()):
        p.fail("", f"{kind} with no delay either way changes nothing; give to_broker_ms or to_client_ms > 0")
    if kind in NETWORK_FAULTS:
        interface = p.str("interface", None)
        if interface is not None and not _INTERFACE.fullmatch(interface):
            p.fail("interface", f"must be a network interface name (letters, digits, '_', '.', ':', '-'; at most "
                                f"15), got {interface!r}")
        elif interface is not None:
            params["interface"] = interface
    if kind == PARTITION:
        direction = p.str("direction", PARTITION_BOTH, choices=PARTITION_DIRECTIONS)
        if direction is not None and direction != PARTITION_BOTH:
            params["direction"] = direction
    elif not known and p.data:
        p.fail("", f"{kind} takes no params")
        p.seen.update(p.data)
    p.done()
    return params


def _scenario_workload(overrides: Mapping[str, Any], path: str, problems: list[Problem],
                       workload_raw: Mapping[str, Any], base: Workload | None) -> Workload | None:
    """The campaign workload with the scenario's overrides; reports only problems the overrides add."""
    if not overrides:
        return base
    own: list[Problem] = []
    with merged_document():
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
    elif number_problem(value, 0, MAX_RATE, exclusive=True) is None:
        return float(value), False
    elif value is not None:
        s.fail("resolution", f"must be a percentage of the rate (e.g. '2%') or msg/s (e.g. 500), got {value!r}")
    return None, False


def _parse_search(scenario: Fields, default_p99_ms: float | None) -> SearchSpec | None:
    """`search:` of a scenario; the SLO defaults to the campaign target's p99."""
    s = scenario.sub("search")
    start = len(s.problems)
    start_rate = s.number("start_rate", minimum=0, exclusive=True, maximum=MAX_RATE)
    upper_rate = s.number("upper_rate", minimum=0, exclusive=True, maximum=MAX_RATE)
    growth = s.number("growth", 2.0, minimum=1, exclusive=True, maximum=100)
    resolution, relative = _parse_resolution(s)
    warmup = s.number("warmup_s", minimum=0, maximum=MAX_DURATION_S)
    measure = s.number("measure_s", minimum=0, exclusive=True, maximum=MAX_DURATION_S)
    drain = s.number("drain_s", 60.0, minimum=0, maximum=MAX_DURATION_S)
    max_disagreements = s.int("max_disagreements", 1, minimum=0, maximum=100)
    slo = s.sub("slo", required=False)
    p99 = slo.number("p99_ms", default_p99_ms, minimum=0, exclusive=True, maximum=MAX_LATENCY_MS)
    p999 = slo.number("p999_ms", None, minimum=0, exclusive=True, maximum=MAX_LATENCY_MS)
    if p99 is None and not slo.has("p99_ms"):
        slo.fail("p99_ms", "is required (the campaign target gives none)")
    if p99 is not None and p999 is not None and p999 < p99:
        slo.fail("p999_ms", f"({p999:g} ms) must be >= the p99 SLO ({p99:g} ms)")
    slo.done()
    if start_rate is not None and upper_rate is not None and upper_rate < start_rate:
        s.fail("upper_rate", f"({upper_rate:g}) must be >= start_rate ({start_rate:g})")
    elif start_rate and upper_rate and growth and math.log(upper_rate / start_rate) / math.log(growth) > MAX_LADDER:
        s.fail("growth", f"({growth:g}) climbs from {start_rate:g} to {upper_rate:g} msg/s in more than {MAX_LADDER} "
                         f"rungs; raise growth or start_rate")
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
    description = c.str("description", "", text=True) or ""
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
            (base_name, base_step), (other_name, other_step) = parsed
            # without its own step, the baseline's step is each of other's steps by name: other's own
            if base_name == other_name and base_step in (None, other_step):
                v.fail("other", f"is the baseline itself ({base}): a pair compares two arms, e.g. two steps "
                                f"of {base_name} or {base_name} against another scenario")
                continue
            others = [other_step] if other_step else families[other_name]
            # each step of `other` is compared with the baseline's step of its name: none in common, no finding
            if not base_step and not set(others) & set(families[base_name]):
                v.fail("baseline", f"{base_name} has no step of {other_name}'s names ({', '.join(others)}; its own: "
                                   f"{', '.join(families[base_name])}), so nothing would be compared: name the "
                                   f"baseline step, e.g. `{base_name}/{families[base_name][0]}`")
                continue
            versus.append(Versus(base_name, other_name, base_step, other_step))
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
    max_hours = b.number("max_hours", None, minimum=0, exclusive=True, maximum=MAX_DURATION_S * 52 / 3600)
    parallelism = b.int("parallelism", 1, minimum=1, maximum=MAX_CLUSTER_NODES)
    if not b.has("max_cost_usd") and not b.has("max_hours"):
        b.fail("", "give max_cost_usd and/or max_hours")
    b.done()
    return Budget(max_cost, max_hours, parallelism or 1)


def _local_network_refusal(kind: str, network: str) -> str | None:
    """Why the local target's network cannot carry a network fault (None: it can). The one home of these rules; the
    local fault executor refuses the same kinds at run time (loadgen.faults.commands.local_network_refusal)."""
    if kind in NETWORK_FAULTS and kind not in NAMESPACE_FAULTS:
        return (f"{kind} needs tc netem on real hosts, which this kernel lacks: use deployment: aws, or "
                f"`{CLIENT_LATENCY}` for a delay between the clients and the nodes")
    if kind in NAMESPACE_FAULTS and network == LOOPBACK:
        return (f"{kind} drops packets between the nodes, which share one loopback interface on "
                f"`network: {LOOPBACK}`: set `network: {NAMESPACES}` (a namespace per node)")
    return None


def _parse_network(root: Fields, deployment: str | None, scenarios: list[Scenario | None]) -> str:
    """`network:` of the local target (NETWORKS), and each network fault the chosen network cannot carry refused."""
    network = root.str("network", LOOPBACK, choices=NETWORKS) or LOOPBACK
    if network != LOOPBACK and deployment != "local":
        root.fail("network", f"chooses the local target's network (deployment is {deployment}): remove it")
    if deployment == "local":
        for i, scenario in enumerate(scenarios):
            for j, fault in enumerate(scenario.faults if scenario else ()):
                if (reason := _local_network_refusal(fault.kind, network)) is not None:
                    root.fail(f"scenarios[{i}].faults[{j}].kind", reason)
    return network


def _parse_scale_model(root: Fields, deployment: str | None, catalog: Catalog | None, clusters: list[ClusterShape],
                       broker_config: Mapping[str, Any], parallelism: int, repeats: int) -> ScaleFactors | None:
    """`scale_model:` absent (the default factors on the local target), `off`, or a mapping of factors (each a
    positive number; the others keep their defaults). The model factors a campaign does not give follow the one rule
    (sizing.resources.scalemodel.fitted_factors). Only the local target has a scale model. Every config's envelope
    must hold a node (envelope_problems), on the default factors too: a campaign's own relative watermark can leave
    too little of it."""
    value = root.raw("scale_model", None)
    scalar_form("scale_model")  # `scale_model: off`, or a mapping of factors
    if value is None:
        if deployment != "local":
            return None
        factors = _fitted(DEFAULT_FACTORS, (), catalog, clusters, broker_config, parallelism, repeats)
        return _envelopes_hold_a_node(lambda reason: root.fail("scale_model", reason), factors, catalog, clusters,
                                      broker_config)
    if value is False or value == OFF:
        return None
    if deployment != "local":
        root.fail("scale_model", f"shapes the nodes of the local target only (deployment is {deployment}): there "
                                 "the instance and volume types themselves are measured; remove it")
        return None
    f = root.sub("scale_model")
    values = {}
    for name in ScaleFactors.field_names():
        floor = GENERATOR_FLOORS.get(name)
        if floor is None:
            values[name] = f.number(name, getattr(DEFAULT_FACTORS, name), minimum=0, exclusive=True, maximum=1e6)
        else:
            values[name] = f.number(name, getattr(DEFAULT_FACTORS, name), minimum=floor[0], maximum=1e6,
                                    why=floor[1])
    given = [name for name in MODEL_FACTORS if f.has(name)]
    f.done()
    if any(v is None and getattr(DEFAULT_FACTORS, name) is not None for name, v in values.items()):
        return None  # refused (a factor whose default is None, the link's, is refused through `f` if given wrong)
    factors = _fitted(ScaleFactors(**values), given, catalog, clusters, broker_config, parallelism, repeats)
    return _envelopes_hold_a_node(lambda reason: f.fail("", reason), factors, catalog, clusters, broker_config)


def _fitted(factors: ScaleFactors, given: Iterable[str], catalog: Catalog | None, clusters: list[ClusterShape],
            broker_config: Mapping[str, Any], parallelism: int, repeats: int) -> ScaleFactors:
    """The campaign's factors under the one rule (fitted_factors), its clusters' envelopes built as admission will."""
    if catalog is None:
        return factors

    def envelopes(candidate: ScaleFactors) -> dict[str, tuple[NodeEnvelope, int]]:
        return {shape.config_id: (envelope, shape.nodes)
                for shape, envelope in _node_envelopes(catalog, clusters, broker_config, candidate)}

    return fitted_factors(factors, envelopes, parallelism, given, repeats)


def _node_envelopes(catalog: Catalog, clusters: list[ClusterShape], broker_config: Mapping[str, Any],
                    factors: ScaleFactors) -> list[tuple[ClusterShape, NodeEnvelope]]:
    """Each config's node envelope under `factors`, built as admission will (an unknown instance type is the
    clusters' own problem, reported where they are parsed)."""
    return [(shape, node_envelope(catalog, shape.instance_type, shape.volumes, factors, shape.rabbitmq_version,
                                  broker_config))
            for shape in clusters if shape.instance_type in catalog.instances]


def _envelopes_hold_a_node(fail: Callable[[str], None], factors: ScaleFactors, catalog: Catalog | None,
                           clusters: list[ClusterShape], broker_config: Mapping[str, Any]) -> ScaleFactors:
    if catalog is not None:
        for shape, envelope in _node_envelopes(catalog, clusters, broker_config, factors):
            for reason in envelope_problems(envelope, shape.config_id):
                fail(reason)
    return factors


def _parse_scenario(value: Any, path: str, problems: list[Problem], workload_raw: Mapping[str, Any],
                    base_workload: Workload | None, deployment: str | None,
                    default_p99_ms: float | None = None) -> Scenario | tuple[Scenario, ...] | None:
    f = Fields(value, path, problems)
    start = len(problems)
    name = f.name("name")
    description = f.str("description", "", text=True) or ""
    overrides = f.mapping("workload", {}) or {}
    workload = _scenario_workload(overrides, join(path, "workload"), problems, workload_raw, base_workload)
    warmup = f.number("warmup_s", 0.0, minimum=0, maximum=MAX_DURATION_S) or 0.0
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
            step_settings, steps_dimension, isolate = parse_setting_steps(s, workload)
            if step_settings:
                step_rates = tuple(x.rate for x in step_settings)
        else:
            rates = s.list("rates") or []
            # PerfTest style (`--rate 50` x 200 producers): the values are per publisher.
            per_publisher = s.bool("per_publisher", False)
            factor = workload.publishers.count if per_publisher and workload else 1
            if any(number_problem(r, 0, MAX_RATE, exclusive=True) for r in rates):
                s.fail("rates", f"must be positive msg/s {'per publisher' if per_publisher else 'totals'}, "
                                f"got {rates!r}")
            else:
                step_rates = tuple(float(r) * factor for r in rates)
            # Seed 000 ran each rate as its own 30-minute PerfTest run (`-z 1800`): `isolate: true` does that.
            isolate = bool(s.bool("isolate", False))
        step_duration = s.number("duration_s", minimum=0, exclusive=True, maximum=MAX_DURATION_S)
        s.done()
        if step_duration is not None and warmup >= step_duration:
            f.fail("warmup_s", f"({warmup:g}s) must be shorter than each step ({step_duration:g}s)")
    else:
        publish_rate = _parse_profile(f.raw("publish_rate"), join(path, "publish_rate"), problems, 0.0, MAX_RATE)
    if f.has("consumer_processing_ms"):
        processing = _parse_profile(f.raw("consumer_processing_ms"), join(path, "consumer_processing_ms"),
                                    problems, 0.0, MAX_PROCESSING_MS)
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
    adverse_faults = [x for x in faults if x is None or x.kind not in GENERATOR_FAULTS]
    if step_settings and adverse_faults and any(x.rate_mode == RATE_MAX for x in step_settings):
        f.fail("faults", "a max-rate step has no target rate, and a scenario with faults is judged against its "
                         "target rate (held_target); use a scheduled rate for fault scenarios")
    if step_settings and processing:
        f.fail("consumer_processing_ms", "client-setting steps set processing time per step "
                                         "(vary: processing_ms, or processing_ms in a sequence entry)")
    groups_raw = f.list("groups", None)
    foreground_raw = f.str("foreground", None)
    tolerance = f.number("publish_tolerance_s", 0.0, minimum=0, maximum=MAX_DURATION_S) or 0.0
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
        return with_groups(scenario, value, groups_raw, foreground_raw, path, problems, workload_raw,
                           base_workload, deployment, isolate, _parse_scenario)
    if step_settings:
        first = step_settings[0]
        scenario = replace(scenario, workload=workload_with(workload, first))
    if isolate:
        return tuple(isolated_runs(scenario))
    return scenario




def parse_campaign(data: Any, source: str = "campaign", catalog: Catalog | None = None) -> Campaign:
    """Validate a campaign mapping. Raises SpecError with every problem found."""
    problems = document_problems(data)
    if problems:  # a document with a non-finite number (or nested past the bound) is not read any further
        raise SpecError(problems, source)
    root = Fields(data, "", problems)
    name = root.name("name")
    description = root.str("description", "", text=True) or ""
    deployment = root.str("deployment", "local", choices=DEPLOYMENTS)
    catalog_name = root.str("catalog")
    if catalog is None and catalog_name is not None:
        try:
            with not_recorded():  # the catalog is a document of its own, not part of the campaign's schema
                catalog = load_catalog(catalog_name)
        except SpecError as err:  # the catalog file's own field paths, under the campaign's `catalog`
            problems.extend(Problem("catalog", f"{err.source}: {p}") for p in err.problems)
    t = root.sub("target")
    target = Target(rate=t.number("rate", minimum=0, exclusive=True, maximum=MAX_RATE) or 0.0,
                    p99_latency_ms=t.number("p99_latency_ms", minimum=0, exclusive=True, maximum=MAX_LATENCY_MS) or 0.0)
    t.done()
    workload_raw = root.mapping("workload") or {}
    workload = _parse_workload(Fields(workload_raw, "workload", problems))
    # An existing cluster's entry only labels it (its price is existing.monthly_cost): any instance or volume name.
    clusters = _parse_clusters(root.sub("clusters"), None if deployment == "existing" else catalog, deployment)
    if deployment == "local":
        # Only the port block bounds the node count here; whether the nodes' envelopes fit the machine's cores and
        # memory is validation's check (adapters.planning.envelope_fit_problems), which knows the machine.
        for shape in clusters:
            if shape.nodes > LOCAL_MAX_NODES:
                problems.append(Problem("clusters", f"config {shape.config_id} asks for {shape.nodes} nodes; a local "
                                                    f"cluster's {LOCAL_PORT_BLOCK}-port block holds at most "
                                                    f"{LOCAL_MAX_NODES} nodes"))
    repeats = root.int("repeats", 1, minimum=1, maximum=MAX_REPEATS) or 1
    broker_config = root.mapping("broker_config", {}) or {}
    problems.extend(check_broker_config(broker_config, deployment))
    if workload is not None:
        problems.extend(check_message_size(workload.message.size_bytes, broker_config, "workload.message.size_bytes"))
    seed = root.int("seed", 2020, minimum=0, maximum=MAX_SEED)
    seed = 2020 if seed is None else seed
    scenarios_raw = root.list("scenarios") or []
    scenarios: list[Scenario | None] = []
    for i, item in enumerate(scenarios_raw):
        parsed = _parse_scenario(item, join("scenarios", i), problems, workload_raw, workload, deployment,
                                 target.p99_latency_ms or None)
        # `isolate: true` gives one scenario (run, fresh queues) per step value, each a single phase.
        scenarios.extend(parsed if isinstance(parsed, tuple) else [parsed])
    for where, w in scenario_workloads(scenarios) if workload is not None else ():
        if w.message.size_bytes != workload.message.size_bytes:
            problems.extend(check_message_size(w.message.size_bytes, broker_config, f"{where}.message.size_bytes"))
    names = [s.name for s in scenarios if s]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem("scenarios", f"scenario name {dup!r} is used more than once"))
    problems.extend(redeclared_queues(scenarios))
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
    scale_model = _parse_scale_model(root, deployment, catalog, clusters, broker_config,
                                     budget.parallelism if budget else 1, repeats)
    if scale_model is not None and MEMORY_OVERRIDE in broker_config:
        root.fail(f"broker_config.{MEMORY_OVERRIDE}", "is set by the scale model (the node's memory envelope, so the "
                                                     "high watermark is relative to it); remove it, or set "
                                                     "scale_model.memory_mib_per_gib")
    network = _parse_network(root, deployment, scenarios)
    existing = parse_existing(root, deployment)
    if existing is not None:
        problems.extend(existing_problems(existing, clusters, [s for s in scenarios if s], broker_config,
                                          NETWORK_FAULTS, GENERATOR_FAULTS))
    findings = version_findings(_workloads_to_check(workload, scenarios),
                                configs_by_version(clusters, deployment or "local"))
    problems.extend(findings.errors)
    root.done()
    if problems or workload is None or catalog is None:
        raise SpecError(problems or [Problem("", "invalid")], source)
    campaign = Campaign(
        name=name or "", description=description, deployment=deployment or "local",
        catalog_name=catalog_name or "", catalog=catalog, target=target, workload=workload,
        clusters=tuple(clusters), scenarios=tuple(s for s in scenarios if s is not None),
        repeats=repeats, seed=seed, broker_config=broker_config, raw=copy.deepcopy(dict(data)), budget=budget,
        purpose=purpose or "size", comparison=comparison, existing=existing, scale_model=scale_model,
        network=network, warnings=findings.warnings,
    )
    return campaign
