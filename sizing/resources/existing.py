"""`deployment: existing`: a campaign against a RabbitMQ cluster that is already running (bring your own cluster).

The spec names the cluster's endpoints; the credentials come from an Airflow connection, never from the spec
file (a spec is committed, shown in the UI and stored next to the results). No Terraform runs: the cluster is
attached before the load and left running after it, minus what the campaign created in it (its queues,
policies and exchanges, named by the workload). Its monthly cost is what the spec states, or none.

    deployment: existing
    existing:
      connection: rabbitmq_staging        # Airflow connection: login / password (default rabbitmq_existing)
      vhost: sizing                       # the campaign's vhost on that cluster (default "/"); it must exist
      monthly_cost: 1350.0                # what the cluster costs per month (leaderboards); omitted = none (0)
      nodes:                              # one per broker node
        - {amqp: "10.0.0.11:5672", management: "10.0.0.11:15672"}   # prometheus_port: 15692 (default)
      local: false                        # true: the nodes run on this machine (fault scenarios allowed)

Node figures come from each node's RabbitMQ Prometheus endpoint (the rabbitmq_prometheus plugin, on the AMQP host,
`prometheus_port`): the hosts are not ours, so host CPU, disk and NIC figures are not recorded. The connection's user
needs the `monitoring` tag (health check, node names), `policymaker` too for mirrored queues, and configure / write /
read permissions on the vhost.

Fault scenarios are refused unless the cluster is declared `local: true`: the local fault executor then kills,
stops and alarms its nodes with the control commands each node entry gives (`name`, `pid_file`, `start_cmd`,
`stop_cmd`, `ctl_cmd`; `ctl_env` for the cluster). Network faults need tc netem on the broker hosts: refused.
Pure: parsing and the ClusterInfo it describes; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sizing.documents.fields import MAX_PORT, MAX_TEXT, Fields, Problem, join, text_problem
from sizing.resources.cluster import ClusterInfo, NodeInfo

DEPLOYMENT = "existing"
# The policy the load generator gives mirrored queues (loadgen.broker.policy_request): one of the names a campaign
# creates in a vhost, so teardown on an existing cluster knows it.
POLICY_NAME = "loadgen-ha"
DEFAULT_CONNECTION = "rabbitmq_existing"
CREDENTIAL_KEYS = ("username", "password", "user", "login", "uri", "url", "credentials")
NODE_CONTROL_KEYS = ("name", "pid_file", "start_cmd", "stop_cmd", "ctl_cmd")
# Both matched against the whole value (fullmatch: `$` would let a trailing newline through).
_ENDPOINT = re.compile(r"(?:(?P<scheme>[a-z][a-z0-9+]*)://)?(?P<host>[A-Za-z0-9_.\-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):"
                       r"(?P<port>\d{1,5})/?")
_CONN_ID = re.compile(r"[A-Za-z0-9_.\-]{1,250}")


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    scheme: str = "http"


@dataclass(frozen=True)
class ExistingNode:
    amqp: Endpoint
    management: Endpoint
    name: str | None = None  # Erlang node name; discovered from the management API when not given
    prometheus_port: int = 15692  # RabbitMQ's Prometheus endpoint on the AMQP host: the node figures' source
    pid_file: str | None = None
    start_cmd: tuple[str, ...] | None = None
    stop_cmd: tuple[str, ...] | None = None
    ctl_cmd: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ExistingCluster:
    nodes: tuple[ExistingNode, ...]
    connection: str = DEFAULT_CONNECTION
    vhost: str = "/"
    local: bool = False
    monthly_cost: float | None = None
    ctl_env: Mapping[str, str] = field(default_factory=dict)

    def cluster_info(self, cluster_name: str, username: str = "", password: str = "",
                     node_names: Sequence[str] | None = None) -> ClusterInfo:
        """The cluster as the load generator, health check and fault injector see it. `node_names`: the names the
        management endpoints reported (in node order), for nodes the spec does not name."""
        nodes = []
        for number, node in enumerate(self.nodes, start=1):
            name = node.name or (node_names[number - 1] if node_names else None) or f"node-{number}"
            nodes.append(NodeInfo(number=number, name=name, host=node.amqp.host, amqp_port=node.amqp.port,
                                  management_port=node.management.port, prometheus_port=node.prometheus_port,
                                  management_scheme=node.management.scheme, pid_file=node.pid_file,
                                  start_cmd=node.start_cmd, stop_cmd=node.stop_cmd, ctl_cmd=node.ctl_cmd))
        return ClusterInfo(target=DEPLOYMENT, cluster_name=cluster_name, nodes=tuple(nodes), username=username,
                           password=password, vhost=self.vhost, ctl_env=dict(self.ctl_env))


def parse_endpoint(value: Any, where: Fields, key: str, web: bool) -> Endpoint | None:
    if not isinstance(value, str) or not (match := _ENDPOINT.fullmatch(value)):
        example = "10.0.0.11:15672 or https://broker.example.com:15671" if web else "10.0.0.11:5672"
        where.fail(key, f"must be host:port (e.g. {example}), got {value!r}")
        return None
    if match["scheme"] and not web:
        where.fail(key, f"is an AMQP endpoint: give host:port without a scheme, got {value!r}")
        return None
    if match["scheme"] not in (None, "http", "https"):
        where.fail(key, f"is the management API: http or https, got {value!r}")
        return None
    port = int(match["port"])
    if not 0 < port <= MAX_PORT:
        where.fail(key, f"port must be 1..{MAX_PORT}, got {port}")
        return None
    return Endpoint(match["host"].strip("[]"), port, match["scheme"] or "http")


def _command(e: Fields, key: str) -> tuple[str, ...] | None:
    value = e.list(key, None)
    if value is None:
        return None
    if not all(text_problem(part, MAX_TEXT) is None for part in value):
        e.fail(key, f"must be a list of non-empty strings (argv), got {value!r}")
        return None
    return tuple(value)


def _refuse_credentials(f: Fields) -> None:
    for key in CREDENTIAL_KEYS:
        if f.has(key):
            f.seen.add(key)
            f.fail(key, "credentials never go in the spec: put them in the Airflow connection named by "
                        "existing.connection (login and password)")


def _parse_node(value: Any, path: str, local: bool, problems: list[Problem]) -> ExistingNode | None:
    e = Fields(value, path, problems)
    start = len(problems)
    _refuse_credentials(e)
    amqp = parse_endpoint(e.raw("amqp"), e, "amqp", web=False) if e.has("amqp") else e.raw("amqp")
    management = (parse_endpoint(e.raw("management"), e, "management", web=True) if e.has("management")
                  else e.raw("management"))
    name = e.str("name", None)
    prometheus_port = e.int("prometheus_port", 15692, minimum=1, maximum=MAX_PORT)
    control = {"pid_file": e.str("pid_file", None), "start_cmd": _command(e, "start_cmd"),
               "stop_cmd": _command(e, "stop_cmd"), "ctl_cmd": _command(e, "ctl_cmd")}
    if not local:
        for key in NODE_CONTROL_KEYS[1:]:
            if control[key] is not None:
                e.fail(key, "node control commands are for a cluster declared `local: true` (its nodes run on "
                            "this machine); remove it or declare the cluster local")
    e.done()
    if len(problems) > start or amqp is None or management is None:
        return None
    return ExistingNode(amqp=amqp, management=management, name=name, prometheus_port=prometheus_port or 15692,
                        **control)


def _refuse_shared_endpoints(f: Fields, nodes: Sequence[ExistingNode | None]) -> None:
    """Two entries at one endpoint are one node counted twice: its figures would be taken twice and the cluster's
    size would be wrong. Host names compare without case, and a management endpoint without its scheme."""
    for key in ("amqp", "management"):
        first: dict[tuple[str, int], int] = {}
        for i, node in enumerate(nodes):
            if node is None:
                continue
            endpoint: Endpoint = getattr(node, key)
            where = (endpoint.host.lower(), endpoint.port)
            if where in first:
                f.fail(f"nodes[{i}].{key}", f"is existing.nodes[{first[where]}].{key} again "
                                            f"({endpoint.host}:{endpoint.port}): each node needs its own")
            else:
                first[where] = i


def parse_existing(root: Fields, deployment: str | None) -> ExistingCluster | None:
    """The `existing` section: required with `deployment: existing`, refused with any other deployment."""
    if deployment != DEPLOYMENT:
        if root.has("existing"):
            root.raw("existing")
            root.fail("existing", f"is only for `deployment: existing` (this campaign deploys to {deployment})")
        return None
    f = root.sub("existing")
    start = len(f.problems)
    _refuse_credentials(f)
    connection = f.str("connection", DEFAULT_CONNECTION)
    if connection and not _CONN_ID.fullmatch(connection):
        f.fail("connection", f"must be an Airflow connection id (letters, digits, '_', '-', '.'), got {connection!r}")
    vhost = f.str("vhost", "/")
    local = f.bool("local", False)
    monthly_cost = f.number("monthly_cost", None, minimum=0)
    ctl_env = f.mapping("ctl_env", None)
    if ctl_env is not None and not local:
        f.fail("ctl_env", "is for a cluster declared `local: true`")
    if ctl_env is not None and not all(isinstance(k, str) and text_problem(k) is None
                                       and text_problem(v, MAX_TEXT) is None for k, v in ctl_env.items()):
        f.fail("ctl_env", "must map names to one-line strings")
    raw_nodes = f.list("nodes") or []
    nodes = [_parse_node(value, join(join(f.path, "nodes"), i), bool(local), f.problems)
             for i, value in enumerate(raw_nodes)]
    _refuse_shared_endpoints(f, nodes)
    f.done()
    if len(f.problems) > start or any(n is None for n in nodes) or not nodes:
        return None
    return ExistingCluster(nodes=tuple(n for n in nodes if n is not None), connection=connection or DEFAULT_CONNECTION,
                           vhost=vhost or "/", local=bool(local), monthly_cost=monthly_cost,
                           ctl_env=dict(ctl_env or {}))


def existing_problems(existing: ExistingCluster, clusters: Sequence[Any], scenarios: Sequence[Any],
                      broker_config: Mapping[str, Any], network_faults: Sequence[str],
                      generator_faults: Sequence[str] = ()) -> list[Problem]:
    """What an existing cluster cannot do for this campaign: a cluster shape other than its own, broker settings
    (its rabbitmq.conf is not ours), faults without a way to reach its nodes (`generator_faults` need none)."""
    problems: list[Problem] = []
    count = len(existing.nodes)
    if len(clusters) != 1:
        problems.append(Problem("clusters", f"an existing cluster is one config: describe it with one "
                                            f"`clusters.list` entry of {count} node(s), got {len(clusters)} configs"))
    elif clusters[0].nodes != count:
        problems.append(Problem("clusters", f"config {clusters[0].config_id} has {clusters[0].nodes} node(s) but "
                                            f"existing.nodes names {count}"))
    for key in broker_config:
        problems.append(Problem(f"broker_config.{key}", "an existing cluster keeps its own rabbitmq.conf: "
                                                       "broker_config cannot be applied to it"))
    for i, scenario in enumerate(scenarios):
        for j, fault in enumerate(getattr(scenario, "faults", ()) or ()):
            where = f"scenarios[{i}].faults[{j}]"
            if fault.kind in generator_faults:
                continue
            if fault.kind in network_faults:
                problems.append(Problem(f"{where}.kind", f"{fault.kind} needs tc netem on the broker hosts, which "
                                                         f"an existing cluster gives no access to"))
            elif not existing.local:
                problems.append(Problem(where, "fault scenarios on an existing cluster need `existing.local: true` "
                                               "(its nodes on this machine, so the local fault executor can reach "
                                               "them): this campaign would only measure it"))
            elif missing := [f"existing.nodes[{n}].{key}" for n, node in enumerate(existing.nodes)
                             for key in NODE_CONTROL_KEYS if getattr(node, key) is None]:
                more = " ..." if len(missing) > 6 else ""
                problems.append(Problem(where, f"the local fault executor needs every node's control commands; "
                                               f"missing: {', '.join(missing[:6])}{more}"))
    return problems


@dataclass(frozen=True)
class CampaignObjects:
    """What a campaign's load runs create in a broker's vhost (what teardown on an existing cluster deletes)."""

    queues: tuple[str, ...]
    policies: tuple[str, ...]
    exchanges: tuple[str, ...] = ()  # the generator publishes through the default exchange: it declares none


def campaign_objects(campaign: Any) -> CampaignObjects:
    """Every queue (and the mirroring policy) the load generator declares for any scenario and workload group of
    the campaign (a sizing.campaign.Campaign; loadgen.broker.declare_queues makes them). It lives in the core because
    Airflow's plugin loader registers plugins/rabbit_sizing/*/loadgen.py as a top-level module `loadgen`: a task
    cannot import the loadgen package."""
    queues: dict[str, None] = {}
    policies: dict[str, None] = {}
    for scenario in campaign.scenarios:
        for group in scenario.workload_groups:
            queues.update(dict.fromkeys(group.workload.queues.names()))
            if group.workload.queues.policy:
                policies[POLICY_NAME] = None
    return CampaignObjects(tuple(queues), tuple(policies))
