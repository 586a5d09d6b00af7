"""A private network for the scale model's nodes (issue 46, its foundation only): a network namespace per node on a
bridge attached to nothing else, a bandwidth envelope on each node's link, and the network faults: partitions
(two-way and one-way) and random loss. The Terraform local module runs a cluster's nodes in them when it is given a
network slot (terraform/modules/local_cluster: cluster.sh calls this module's command line, runtime.sh enters the
node's namespace).

    build_cluster(1, 3, mbit=8)   rs-1-1 .. rs-1-3, 198.18.1.1 .. 198.18.1.3 on the bridge rsbr0 (host: 198.18.0.1)
    partition([[n1], [n2, n3]])   nftables drops between the groups; heal(1) lets everything through again
    loss(n1, 50)                  half of n1's outgoing packets dropped at random
    counters(n1)                  the node's bytes and packets, from its link's /sys/class/net statistics
    teardown(1), reclaim()        remove one cluster's, or everything the project made (found by name)

Layout and why:
- Addresses come from 198.18.0.0/16, inside 198.18.0.0/15 (RFC 2544, benchmarking): no one else's. A blackhole
  route for the whole /15 in the host's namespace stays even after teardown, so nothing addressed there can leave
  the machine when the bridge is gone (the bridge's /16 is more specific and wins while it exists).
- A node's namespace has only the bridge's /16 route, no default route: it reaches the host (198.18.0.1) and the
  other nodes, and nothing else, even on a host that forwards packets.
- A cluster is named by its slot (1-254), which gives its namespaces (`rs-<slot>-<n>`), host-side veth ends
  (`rsv<slot>-<n>`, within Linux's 15-character interface names) and addresses (198.18.<slot>.<n>).
- Filtering is done by an nftables table (`inet rabbit_sizing`) inside each node's namespace, not on the host: the
  host's forward hook sees bridged traffic only while br_netfilter's bridge-nf-call-iptables is 1, which is a machine
  setting; a namespace's own input and output hooks are always traversed. The table goes with its namespace.
- Bandwidth: a `tbf` qdisc on both ends of the node's veth: the namespace end's egress is the node's egress, the
  bridge end's egress is the node's ingress.
- Names: each node's host name is its namespace's name (`rs-<slot>-<n>`), listed with its address in a hosts file
  for every namespace of its cluster (/etc/netns/<namespace>/hosts, which `ip netns exec` mounts on /etc/hosts), so
  Erlang's short node names (`rabbit-...@rs-1-2`) resolve inside the cluster and nowhere else: the CLI
  (rabbitmqctl) runs in its node's namespace, as it runs on its node's instance on aws.

Commands are built by pure functions (argv lists) and executed by `run`, which names the command and its stderr on
failure. Everything here needs root, `ip`/`tc` (iproute2) and `nft` (the nftables package): `available()` says what
is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.filelock import held

BRIDGE = "rsbr0"
HOST_ADDRESS = "198.18.0.1"
PREFIX_LEN = 16  # the nodes' and the host's subnet, 198.18.0.0/16
BLACKHOLE = "198.18.0.0/15"
TABLE = "rabbit_sizing"  # nftables table (family inet) in each node's namespace
INNER = "eth0"  # the veth end inside a node's namespace: its only interface besides lo
NAMESPACE_RE = re.compile(r"^rs-(\d{1,3})-(\d{1,3})$")
VETH_RE = re.compile(r"^rsv(\d{1,3})-(\d{1,3})$")
LOCK = Path("/run/rabbit-sizing-netns.lock")  # builds and removals of clusters exclude each other (the bridge)
SYS_NET = Path("/sys/class/net")
NETNS_ETC = Path("/etc/netns")  # per-namespace files `ip netns exec` mounts over /etc (ip-netns(8))
RECORD = "network.slot"  # in a cluster's directory: the slot its namespaces were built in, written before them
# tbf: the bucket holds 10 ms of the rate (at least a few full frames), so over any window of W seconds the rate is
# exceeded by at most 10 ms / W; the queue holds 50 ms of the rate, beyond which packets are dropped (as a cloud
# network's rate limit drops) rather than queued for seconds.
BURST_S, MIN_BURST_BYTES, QUEUE_LATENCY_MS = 0.010, 8 * 1514, 50
LOSS_SCALE = 10_000  # random drop in hundredths of a percent (loss_percent is a float on aws as well)
COMMAND_TIMEOUT_S = 30


class NetnsError(RuntimeError):
    """A command of this module failed; the message names the command and its stderr."""


# ---------------------------------------------------------------------------------------------- pure: naming


@dataclass(frozen=True)
class NodeNet:
    """One node's place on the project network; `mbit` is its bandwidth envelope (None: unlimited)."""

    cluster: int  # the cluster's slot, 1-254
    number: int  # the node's number in its cluster, 1-254
    mbit: float | None = None

    def __post_init__(self) -> None:
        if not (1 <= self.cluster <= 254 and 1 <= self.number <= 254):
            raise ValueError(f"cluster slot and node number must be 1-254: {self.cluster}, {self.number}")

    @property
    def namespace(self) -> str:
        return f"rs-{self.cluster}-{self.number}"

    @property
    def veth(self) -> str:
        """The host-side (bridge-side) end of the node's veth pair."""
        return f"rsv{self.cluster}-{self.number}"

    @property
    def address(self) -> str:
        return f"198.18.{self.cluster}.{self.number}"


def hosts_text(nodes: Sequence[NodeNet]) -> str:
    """The hosts file of every namespace of a cluster: each node's name (its namespace's) at its address."""
    lines = ["127.0.0.1\tlocalhost", *(f"{node.address}\t{node.namespace}" for node in nodes)]
    return "\n".join(lines) + "\n"


def in_namespace(namespace: str, argv: Sequence[str]) -> list[str]:
    """argv run inside a namespace (`ip netns exec` also mounts the namespace's own /sys)."""
    return ["ip", "netns", "exec", namespace, *argv]


# ---------------------------------------------------------------------------------------------- pure: commands


def network_commands(ipv6: bool = True) -> list[list[str]]:
    """The bridge with the host's address, and the blackhole route (`replace`: idempotent). The bridge is created by
    the caller only when missing (`ip link add` is not idempotent)."""
    commands = [["ip", "link", "add", BRIDGE, "type", "bridge"]]
    if ipv6:  # we use IPv4 only: no router solicitations or MLD reports on our links (they would count as traffic)
        commands.append(["sysctl", "-q", "-w", f"net.ipv6.conf.{BRIDGE}.disable_ipv6=1"])
    return [*commands, ["ip", "addr", "add", f"{HOST_ADDRESS}/{PREFIX_LEN}", "dev", BRIDGE],
            ["ip", "link", "set", BRIDGE, "up"], blackhole_command()]


def blackhole_command() -> list[str]:
    return ["ip", "route", "replace", "blackhole", BLACKHOLE]


def table_script() -> str:
    """The node's nftables table: a set of source addresses it may not hear from (partitions) and a chain of its
    outgoing link's random drop (loss), each rule counting what it drops."""
    t = f"inet {TABLE}"
    return "; ".join([
        f"add table {t}",
        f"add set {t} cut {{ type ipv4_addr; }}",
        f"add chain {t} input {{ type filter hook input priority filter; policy accept; }}",
        f"add rule {t} input ip saddr @cut counter drop",
        f"add chain {t} loss_out",
        f"add chain {t} output {{ type filter hook output priority filter; policy accept; }}",
        f'add rule {t} output oifname "{INNER}" jump loss_out',
    ])


def node_commands(node: NodeNet, ipv6: bool = True) -> list[list[str]]:
    """A node's namespace, its veth pair into the bridge (the inner end created inside the namespace), its address,
    its nftables table and, with an envelope, its tbf qdiscs."""
    ns = node.namespace
    commands = [["ip", "netns", "add", ns],
                ["ip", "link", "add", node.veth, "type", "veth", "peer", "name", INNER, "netns", ns]]
    if ipv6:
        commands += [["sysctl", "-q", "-w", f"net.ipv6.conf.{node.veth}.disable_ipv6=1"],
                     in_namespace(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                                       "net.ipv6.conf.default.disable_ipv6=1"])]
    commands += [["ip", "link", "set", node.veth, "master", BRIDGE, "up"],
                 ["ip", "-n", ns, "link", "set", "lo", "up"],
                 ["ip", "-n", ns, "addr", "add", f"{node.address}/{PREFIX_LEN}", "dev", INNER],
                 ["ip", "-n", ns, "link", "set", INNER, "up"],
                 in_namespace(ns, ["nft", table_script()])]
    if node.mbit is not None:
        commands += bandwidth_commands(node, node.mbit)
    return commands


def tbf_args(mbit: float) -> list[str]:
    """tbf's parameters for a rate in Mbit/s (10^6 bits)."""
    if mbit <= 0:
        raise ValueError(f"a bandwidth envelope must be positive: {mbit} Mbit/s")
    rate_bps = round(mbit * 1e6)
    burst = max(MIN_BURST_BYTES, round(rate_bps / 8 * BURST_S))
    return ["tbf", "rate", f"{rate_bps}bit", "burst", str(burst), "latency", f"{QUEUE_LATENCY_MS}ms"]


def bandwidth_commands(node: NodeNet, mbit: float) -> list[list[str]]:
    """tbf on both ends of the node's link (`replace`: setting a new rate is the same command)."""
    args = tbf_args(mbit)
    return [["tc", "-n", node.namespace, "qdisc", "replace", "dev", INNER, "root", *args],  # the node's egress
            ["tc", "qdisc", "replace", "dev", node.veth, "root", *args]]  # the node's ingress


def partition_plan(groups: Sequence[Sequence[NodeNet]], one_way: bool = False) -> dict[str, list[str]]:
    """namespace -> the source addresses it drops. Two-way: every node drops the other groups' packets. One-way:
    packets from the first group to the others are dropped, the others' packets to the first group pass (so a TCP
    connection either way fails: its handshake needs both directions; datagrams pass one way)."""
    if len(groups) < 2 or any(not group for group in groups):
        raise ValueError("a partition needs at least two non-empty groups")
    nodes = [node for group in groups for node in group]
    if len({node.namespace for node in nodes}) != len(nodes):
        raise ValueError("a node is in more than one group")
    plan: dict[str, list[str]] = {}
    for i, group in enumerate(groups):
        if one_way:
            sources = [] if i == 0 else [node.address for node in groups[0]]
        else:
            sources = [node.address for j, other in enumerate(groups) if j != i for node in other]
        for node in group:
            plan[node.namespace] = sources
    return plan


def cut_commands(namespace: str, sources: Sequence[str]) -> list[list[str]]:
    """Replace the namespace's set of dropped sources (empty: heal)."""
    script = f"flush set inet {TABLE} cut"
    if sources:
        script += f"; add element inet {TABLE} cut {{ {', '.join(sources)} }}"
    return [in_namespace(namespace, ["nft", script])]


def loss_commands(node: NodeNet, percent: float) -> list[list[str]]:
    """Random drop of `percent` of the node's outgoing packets (0: none), as tc netem's loss on aws's root qdisc:
    the node's egress."""
    if not 0 <= percent <= 100:
        raise ValueError(f"loss_percent must be 0-100: {percent}")
    script = f"flush chain inet {TABLE} loss_out"
    threshold = round(percent * LOSS_SCALE / 100)
    if threshold:
        script += f"; add rule inet {TABLE} loss_out numgen random mod {LOSS_SCALE} < {threshold} counter drop"
    return [in_namespace(node.namespace, ["nft", script])]


# ---------------------------------------------------------------------------------------------- pure: parsing


@dataclass(frozen=True)
class LinkCounters:
    """A node's traffic as the node sees it (rx: into the node), from its link's kernel counters."""

    rx_bytes: int
    rx_packets: int
    tx_bytes: int
    tx_packets: int


def node_counters(host_side: dict[str, int]) -> LinkCounters:
    """The bridge-side veth end's statistics turned round: what it transmits, the node receives."""
    return LinkCounters(rx_bytes=host_side["tx_bytes"], rx_packets=host_side["tx_packets"],
                        tx_bytes=host_side["rx_bytes"], tx_packets=host_side["rx_packets"])


def drop_counts(listing: str) -> dict[str, int]:
    """Packets dropped by a node's partition rule and loss rule, from `nft -j list table inet rabbit_sizing`."""
    counts = {"partition": 0, "loss": 0}
    for item in json.loads(listing).get("nftables", []):
        rule = item.get("rule")
        if not rule:
            continue
        for expr in rule.get("expr", []):
            if "counter" in expr:
                key = "partition" if rule["chain"] == "input" else "loss" if rule["chain"] == "loss_out" else None
                if key:
                    counts[key] += int(expr["counter"]["packets"])
    return counts


def parse_netns_list(text: str) -> list[str]:
    """Names from `ip netns list` ("name" or "name (id: 3)")."""
    return [line.split()[0] for line in text.splitlines() if line.strip()]


def parse_link_names(listing: str) -> list[str]:
    """Interface names from `ip -j link show ...`."""
    return [link["ifname"] for link in json.loads(listing or "[]")]


# ---------------------------------------------------------------------------------------------- running


def run(argv: Sequence[str]) -> str:
    """Run one command; its stdout, or NetnsError naming the command and its stderr."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetnsError(f"`{shlex.join(argv)}` could not run: {exc}") from exc
    if proc.returncode != 0:
        raise NetnsError(f"`{shlex.join(argv)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def available() -> str | None:
    """None when this machine can build the network, else one line saying what is missing."""
    missing = []
    if os.geteuid() != 0:
        missing.append("not root")
    missing += [f"no `{tool}` ({package})" for tool, package in
                (("ip", "iproute2"), ("tc", "iproute2"), ("nft", "apt-get install nftables"))
                if shutil.which(tool) is None]
    if not Path("/proc/self/ns/net").exists():
        missing.append("no network namespaces in this kernel")
    return f"no private network for the nodes: {'; '.join(missing)}" if missing else None


def _ipv6() -> bool:
    return Path("/proc/sys/net/ipv6").exists()


def _namespaces() -> list[str]:
    return [name for name in parse_netns_list(run(["ip", "netns", "list"])) if NAMESPACE_RE.match(name)]


def _veths() -> list[str]:
    return [name for name in parse_link_names(run(["ip", "-j", "link", "show", "type", "veth"])) if VETH_RE.match(name)]


def _bridge_exists() -> bool:
    return BRIDGE in parse_link_names(run(["ip", "-j", "link", "show", "type", "bridge"]))


def _host_table_exists() -> bool:
    return f"table inet {TABLE}" in run(["nft", "list", "tables"]).splitlines()


def _build_network() -> None:
    if _bridge_exists():
        run(blackhole_command())
        return
    for argv in network_commands(_ipv6()):
        run(argv)


def build_network() -> None:
    """The bridge with the host's address and the blackhole route; idempotent."""
    with held(LOCK):
        _build_network()


def build_cluster(cluster: int, nodes: int, mbit: float | None = None) -> list[NodeNet]:
    """Nodes 1..`nodes` of a cluster slot, each with the envelope `mbit` (None: unlimited). Refused if anything of
    the slot exists (a slot is one cluster's); on a failure, what was built of the slot is removed."""
    made = [NodeNet(cluster, number, mbit) for number in range(1, nodes + 1)]
    with held(LOCK):
        taken = [n for n in _namespaces() + _veths() if slot_of(n) == cluster]
        if taken:
            raise NetnsError(f"cluster slot {cluster} is in use: {', '.join(taken)}")
        _build_network()
        try:
            for node in made:
                for argv in node_commands(node, _ipv6()):
                    run(argv)
                (NETNS_ETC / node.namespace).mkdir(parents=True, exist_ok=True)
                (NETNS_ETC / node.namespace / "hosts").write_text(hosts_text(made))
        except BaseException:
            _teardown(cluster)
            raise
    return made


def set_bandwidth(node: NodeNet, mbit: float) -> dict[str, Any]:
    """A new envelope on a built node's link, both directions."""
    for argv in bandwidth_commands(node, mbit):
        run(argv)
    return {"node": node.namespace, "mbit": mbit, "tbf": tbf_args(mbit)}


def partition(groups: Sequence[Sequence[NodeNet]], one_way: bool = False) -> dict[str, Any]:
    """Cut the groups apart (see partition_plan); what was done, for the run's record."""
    plan = partition_plan(groups, one_way)
    for namespace, sources in plan.items():
        for argv in cut_commands(namespace, sources):
            run(argv)
    return {"fault": "partition", "one_way": one_way, "groups": [[n.address for n in g] for g in groups],
            "dropped_sources": plan}


def heal(cluster: int | None = None) -> dict[str, Any]:
    """Every partition of a cluster (None: of every project namespace) removed; loss is left as it is."""
    healed = [ns for ns in _namespaces() if cluster is None or slot_of(ns) == cluster]
    for namespace in healed:
        for argv in cut_commands(namespace, []):
            run(argv)
    return {"fault": "heal", "namespaces": healed}


def loss(node: NodeNet, percent: float) -> dict[str, Any]:
    """Random loss of the node's outgoing packets (0: none); what was done, for the run's record."""
    for argv in loss_commands(node, percent):
        run(argv)
    return {"fault": "network_loss", "node": node.namespace, "loss_percent": percent,
            "rule": f"numgen random mod {LOSS_SCALE} < {round(percent * LOSS_SCALE / 100)} drop"}


def dropped(node: NodeNet) -> dict[str, int]:
    """Packets the node's partition and loss rules have dropped (nftables' own counters; the loss counter restarts
    at each loss())."""
    return drop_counts(run(in_namespace(node.namespace, ["nft", "-j", "list", "table", "inet", TABLE])))


def counters(node: NodeNet, root: Path = SYS_NET) -> LinkCounters:
    """The node's bytes and packets so far, from the bridge-side end's /sys/class/net statistics (readable from
    the host's namespace: the sampler needs no namespace of its own)."""
    stats = root / node.veth / "statistics"
    return node_counters({name: int((stats / name).read_text()) for name in
                          ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")})


# ---------------------------------------------------------------------------------------------- removal


def slot_of(name: str) -> int | None:
    """The cluster slot in one of our names (rs-<slot>-<node>, rsv<slot>-<node>); None for another name."""
    match = NAMESPACE_RE.match(name) or VETH_RE.match(name)
    return int(match.group(1)) if match else None


def _remove(namespaces: Iterable[str], veths: Iterable[str], etc_dirs: Iterable[Path]) -> dict[str, list[Any]]:
    removed: dict[str, list[Any]] = {"killed": [], "veths": [], "namespaces": [], "hosts_files": []}
    namespaces = list(namespaces)
    for namespace in namespaces:
        # A process left inside keeps the namespace alive (and its veth pair) after `ip netns del`: they are ours.
        for pid in (int(p) for p in run(["ip", "netns", "pids", namespace]).split()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                removed["killed"].append(pid)
    for veth in veths:  # deleting one end deletes the pair, and the qdiscs on both
        with contextlib.suppress(NetnsError):  # gone since it was listed (its namespace went first)
            run(["ip", "link", "del", veth])
            removed["veths"].append(veth)
    for namespace in namespaces:  # with it go its table, its loopback and the veth end inside
        run(["ip", "netns", "del", namespace])
        removed["namespaces"].append(namespace)
    for etc in etc_dirs:  # a namespace's hosts file, also one whose namespace is already gone
        shutil.rmtree(etc, ignore_errors=True)
        removed["hosts_files"].append(etc.name)
    return removed


def _etc_dirs() -> list[Path]:
    return sorted(p for p in NETNS_ETC.glob("rs-*") if NAMESPACE_RE.match(p.name)) if NETNS_ETC.is_dir() else []


def _teardown(cluster: int) -> dict[str, Any]:
    removed: dict[str, Any] = _remove([n for n in _namespaces() if slot_of(n) == cluster],
                                      [v for v in _veths() if slot_of(v) == cluster],
                                      [e for e in _etc_dirs() if slot_of(e.name) == cluster])
    removed["bridge"] = False
    if not _veths() and _bridge_exists():  # the last cluster's teardown removes the bridge; the blackhole stays
        run(["ip", "link", "del", BRIDGE])
        removed["bridge"] = True
    return removed


def teardown(cluster: int) -> dict[str, Any]:
    """Remove a cluster slot's namespaces, veths, qdiscs and tables (and the bridge if no other cluster uses it);
    idempotent, also when half-built. The blackhole route stays."""
    with held(LOCK):
        return _teardown(cluster)


def reclaim() -> dict[str, Any]:
    """Remove everything of the project's network on this machine, whoever made it (a crashed run's leftovers,
    found by name): every `rs-*` namespace, `rsv*` veth, the bridge and a host table of ours. Not the blackhole."""
    with held(LOCK):
        removed: dict[str, Any] = _remove(_namespaces(), _veths(), _etc_dirs())
        removed["bridge"] = _bridge_exists()
        if removed["bridge"]:
            run(["ip", "link", "del", BRIDGE])
        removed["host_table"] = _host_table_exists()
        if removed["host_table"]:
            run(["nft", "delete", "table", "inet", TABLE])
        return removed


def recorded_slots(state_root: Path | str) -> list[int]:
    """The network slots of the clusters under a state root (their records, RECORD), whether built or not."""
    root = Path(state_root)
    slots = set()
    for record in root.rglob(RECORD) if root.is_dir() else ():
        with contextlib.suppress(OSError, ValueError):
            slots.add(int(record.read_text().strip()))
    return sorted(slots)


def reclaim_recorded(slots: Sequence[int]) -> list[str]:
    """Remove the networks a crash left of the recorded slots (recorded_slots: a kill -9 of an apply between
    `cluster.sh init` and Terraform recording the cluster, or of the task that would have destroyed it): each
    slot's namespaces, links, tables and hosts files. What was removed, one line per slot."""
    done = []
    for slot in slots:
        removed = teardown(slot)
        if removed["namespaces"] or removed["veths"] or removed["hosts_files"]:
            done.append(f"network slot {slot}: removed {len(removed['namespaces'])} namespace(s), "
                        f"{len(removed['veths'])} link(s), killed {len(removed['killed'])} process(es)")
    return done


def leftover_slots(slots: Sequence[int]) -> list[int]:
    """Those of the recorded slots whose namespaces, links or hosts files still exist."""
    return [slot for slot in slots if leftovers(slot).names()]


@dataclass(frozen=True)
class Leftovers:
    namespaces: list[str]
    veths: list[str]
    bridge: bool
    host_table: bool
    hosts_files: list[str]

    def names(self) -> list[str]:
        """The namespaces, links and hosts files (what belongs to one cluster slot)."""
        return [*self.namespaces, *self.veths, *self.hosts_files]

    def empty(self) -> bool:
        return not (self.names() or self.bridge or self.host_table)


def leftovers(slot: int | None = None) -> Leftovers:
    """What of the project's network exists now, from the kernel's own lists; of one cluster slot's when given (the
    bridge and the host table belong to every slot, so they are reported either way)."""
    def mine(names: Iterable[str]) -> list[str]:
        return [name for name in names if slot is None or slot_of(name) == slot]

    return Leftovers(mine(_namespaces()), mine(_veths()), _bridge_exists(), _host_table_exists(),
                     mine(e.name for e in _etc_dirs()))


# ---------------------------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """The Terraform local module's calls (cluster.sh init and destroy): one line on stderr on failure."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m adapters.netns", description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build-cluster", help="a cluster slot's namespaces, links, tables and hosts files")
    build.add_argument("slot", type=int)
    build.add_argument("nodes", type=int)
    build.add_argument("--mbit", type=float, default=None, help="each node's bandwidth envelope (default: none)")
    down = actions.add_parser("teardown", help="remove a cluster slot's network (idempotent)")
    down.add_argument("slot", type=int)
    actions.add_parser("reclaim", help="remove everything of the project's network on this machine")
    args = parser.parse_args(argv)
    try:
        if args.action == "build-cluster":
            if missing := available():
                raise NetnsError(missing)
            made = build_cluster(args.slot, args.nodes, args.mbit)
            print(json.dumps({"namespaces": [n.namespace for n in made], "addresses": [n.address for n in made],
                              "mbit": args.mbit}))
        elif args.action == "teardown":
            print(json.dumps(teardown(args.slot)))
        else:
            print(json.dumps(reclaim()))
    except (NetnsError, ValueError) as exc:
        print(f"adapters.netns {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
