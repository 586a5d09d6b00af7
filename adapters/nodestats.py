"""Resource counters of one broker node: /proc and the node's Prometheus endpoint (local), prometheus-node-exporter
and the same endpoint (AWS). The sampler (loadgen.nodes) turns two snapshots into one NODE_SECONDS row.

Parsing and the snapshot -> row arithmetic are pure (unit tested on captured text); the readers at the bottom do
the I/O. What each column means on each target, and why:

- CPU, local: the Erlang VM's utime/stime from /proc/<pid>/stat (every scheduler thread of the VM), its
  block-I/O delay (field 42, delayacct_blkio_ticks; 0 when the kernel does not account it) as iowait; steal is
  not visible per process. The fraction is of the machine's cores, which every local node and the load generator
  share (`shared_cores`). AWS: node_cpu_seconds_total of the instance (the VM is the only busy process there).
  Both are in 10 ms units (`cpu_source` 'ticks'): each second is a whole number of them, at 0.1 cores 0.6-1.1 of
  the quota per second under RabbitMQ, 0.9/1.1 for a busy loop (issue 44).
- CPU, local node in an envelope (`cpu_source` 'cgroup', issue 44): the node's cgroup's own counter, what its CFS
  quota is charged against (v1 cpuacct.usage, v2 cpu.stat usage_usec): exact, for every process of the envelope
  (the server's process tree; the CLI tools run outside it). user and system are that exact total split in the
  proportion of the group's user/system counters over the span (v1 cpuacct.stat in ticks, v2 user_usec/system_usec:
  both apportioned by the scheduler tick, so only the total is exact); null when no tick fell in the span (the total
  stands). A second whose cgroup could not be read falls back to ticks, and says so. Per second the figure is within
  a CFS tick (4 ms here) of what the kernel let the group run (tests/test_envelope_cpu.py).
- Local scale model (sizing/resources/scalemodel.py): a node in an envelope uses at most its CPU quota, so the CPU
  fractions are of that quota (`cpu_quota_cores`), the cores are not shared, and each volume is its own loop device: its
  writes and bytes are the device's own counters (/sys/dev/block/<maj:min>/stat), by role, as on AWS, and the disk
  sums are over those devices. Read from the node's envelope record (adapters/envelope.py).
- Disk bytes, local without a scale model: /proc/<pid>/io read_bytes/write_bytes, what the VM caused to be read from
  / sent to the storage layer (page-cache writes are charged when dirtied, so a file truncated before write-back is
  counted too). Disk ops are not attributable to one process, so they stay null locally: syscw counts socket writes
  too (under load mostly sockets) and is recorded as write_syscalls, not as IOPS. AWS: node_disk_*_total summed over
  every volume of the node (data, and logs/wal/segments where the layout gives them their own volume), each device
  found through node_filesystem_size_bytes at its mount point (sizing.resources.disks.AWS_MOUNT_POINTS); the root volume
  is not RabbitMQ's and is not counted. Each volume's own writes are recorded beside the sums, by the role it holds
  (`<role>_write_bytes_per_s`, `<role>_write_ops_per_s`), so that each meets its own limit.
- fsyncs: rabbitmq_io_sync_ops_total (classic message store and queue index; 3.10 does not count the quorum
  WAL's syncs). No per-process fsync counter exists in /proc.
- Network: AMQP clients from rabbitmq_connection_{incoming,outgoing}_bytes_total (summed over live
  connections), inter-node from erlang_vm_dist_{recv,send}_bytes per peer node (Erlang distribution, CLI
  tools excluded); net = client + inter-node. Not erlang_vm_statistics_bytes_*: on 3.10 every /metrics scrape
  adds ~86 KB to both of them (measured on an idle node), so the sampler would measure itself. Per-port socket
  accounting is not needed. AWS adds the NIC's totals from node-exporter, less the sampler's own scrapes; so does a
  local node with a namespace of its own (`network: namespaces`): its link's kernel counters (adapters/netns.py
  counters, the bridge-side end's /sys/class/net statistics turned round), every byte the node's link carried
  (Ethernet frames: headers included, as the tbf envelope counts them), less the sampler's own scrapes.
- Quorum queues: deltas of rabbitmq_raft_log_last_written_index (entries written to the WAL) and
  rabbitmq_raft_log_snapshot_index (entries released by snapshots), summed over the node's members.
"""

from __future__ import annotations

import gzip
import http.client
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from adapters import netns
from adapters.envelope import CgroupCpu, detect_cgroups, parse_cgroup_cpu, read_record
from sizing.contract.records import CPU_SOURCE_CGROUP, CPU_SOURCE_TICKS
from sizing.resources.cluster import NodeInfo
from sizing.resources.disks import AWS_MOUNT_POINTS, VOLUME_ROLES

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
NODE_EXPORTER_PORT = 9100
RABBITMQ_DATA_MOUNT = AWS_MOUNT_POINTS["data"]
VOLUME_MOUNTS = tuple(AWS_MOUNT_POINTS.values())  # every role's mount point; only those with a volume are mounts
CLI_PEER = "rabbitmqcli"  # rabbitmqctl & co. connect as rabbitmqcli-<n>-<node>: not inter-node traffic

Metrics = dict[tuple[str, tuple[tuple[str, str], ...]], float]

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


# ------------------------------------------------------------------------------------------ parsing (pure)


def parse_prometheus(text: str) -> Metrics:
    """Prometheus text exposition -> {(name, sorted labels): value}; comments and NaN-free junk lines skipped."""
    out: Metrics = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        out[(name, tuple(sorted(_LABEL.findall(labels or ""))))] = number
    return out


def metric_sum(metrics: Metrics, name: str, **labels: str) -> float | None:
    """Sum of every series of `name` whose labels include `labels`; None when there is none."""
    values = [v for (n, ls), v in metrics.items() if n == name and all((k, w) in ls for k, w in labels.items())]
    return sum(values) if values else None


def metric_labels(metrics: Metrics, name: str) -> list[dict[str, str]]:
    return [dict(ls) for (n, ls) in metrics if n == name]


@dataclass(frozen=True)
class ProcStat:
    ppid: int
    utime_ticks: int
    stime_ticks: int
    blkio_ticks: int
    rss_pages: int
    start_ticks: int  # identifies the process: a restarted VM with a reused pid still differs here
    children_ticks: int = 0  # cutime + cstime: what the children it has waited for were charged


def parse_proc_pid_stat(text: str) -> ProcStat:
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); field n is fields[n - 3]
    blkio = int(fields[42 - 3]) if len(fields) > 42 - 3 else 0
    return ProcStat(ppid=int(fields[4 - 3]), utime_ticks=int(fields[14 - 3]), stime_ticks=int(fields[15 - 3]),
                    blkio_ticks=blkio, rss_pages=int(fields[24 - 3]), start_ticks=int(fields[22 - 3]),
                    children_ticks=int(fields[16 - 3]) + int(fields[17 - 3]))


def parse_proc_pid_io(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value.strip():
            out[key.strip()] = int(value)
    return out


@dataclass(frozen=True)
class MachineCpu:
    busy_ticks: int  # user + nice + system + irq + softirq + steal
    idle_ticks: int  # idle + iowait
    cores: int
    # Parts of busy_ticks no process is charged for: steal is the hypervisor's, never any task's; interrupt
    # (irq + softirq) is charged to the task it interrupted, under tick accounting, and to no one if that was idle.
    steal_ticks: int = 0
    interrupt_ticks: int = 0
    uptime_s: float | None = None  # /proc/uptime, read with /proc/stat

    @property
    def busy_s(self) -> float:
        """Busy CPU seconds since boot. With the time since boot, the cores' time less their idle: under tick
        accounting the busy fields are sampled at each tick and miss bursts that start and end between two
        (measured here: 1.21 s of 1.60 s for 0.1 ms bursts every 0.5 ms), while idle (NO_HZ's measured sleeps) and
        the uptime are exact."""
        if self.uptime_s is None:
            return self.busy_ticks / CLK_TCK
        return self.cores * self.uptime_s - self.idle_ticks / CLK_TCK


def parse_proc_stat(text: str, uptime: str | None = None) -> MachineCpu:
    """/proc/stat, and /proc/uptime when given (its first field: seconds since boot)."""
    cores = 0
    total: list[int] = []
    for line in text.splitlines():
        if line.startswith("cpu "):
            total = [int(v) for v in line.split()[1:]]
        elif line.startswith("cpu"):
            cores += 1
    user, nice, system, idle, iowait, irq, softirq, steal = (total + [0] * 8)[:8]
    return MachineCpu(busy_ticks=user + nice + system + irq + softirq + steal, idle_ticks=idle + iowait,
                      cores=cores, steal_ticks=steal, interrupt_ticks=irq + softirq,
                      uptime_s=float(uptime.split()[0]) if uptime else None)


# ------------------------------------------------------------------------------------------ snapshots (pure)


@dataclass(frozen=True)
class Snapshot:
    """Cumulative counters of one node at one time (`t`: monotonic seconds at the response)."""

    t: float
    identity: str  # pid + start time (local) or boot/uptime marker: counters only subtract within one identity
    cores: int | None
    shared_cores: bool
    cpu_quota_cores: float | None = None  # the local scale model's CPU envelope: CPU fractions are of it
    counters: Mapping[str, float | None] = field(default_factory=dict)  # cumulative, seconds / bytes / counts
    gauges: Mapping[str, float | None] = field(default_factory=dict)  # point values (rss, run queue)
    # The scrape that produced this snapshot: its response left the node after the counters were read, so it
    # shows in the NEXT delta, and rates() takes it out there (the sampler's own traffic is not the workload's).
    own_bytes_in: int = 0
    own_bytes_out: int = 0
    own_nic_bytes_in: int = 0
    own_nic_bytes_out: int = 0
    # False: the node's own Prometheus endpoint did not answer this time (a node at its CPU quota may not, within
    # the sampler's second); its figures are unknown, the operating system's still stand (local target).
    broker_metrics: bool = True
    # The node's envelope's CPU counter (local scale model): when both snapshots of a span have it, it is the CPU's
    # source (cpu_source 'cgroup'); the /proc tick counters stay in `counters` as the fallback.
    cgroup_cpu: CgroupCpu | None = None


# cumulative counter -> (column, divisor): the column is delta / span / divisor
RATE_COLUMNS = {
    "cpu_user_s": "cpu_user", "cpu_system_s": "cpu_system", "cpu_iowait_s": "cpu_iowait", "cpu_steal_s": "cpu_steal",
    "disk_read_bytes": "disk_read_bytes_per_s", "disk_write_bytes": "disk_write_bytes_per_s",
    "disk_read_ops": "disk_read_ops_per_s", "disk_write_ops": "disk_write_ops_per_s",
    "write_syscalls": "write_syscalls_per_s", "fsyncs": "fsyncs_per_s",
    "client_in_bytes": "client_in_bytes_per_s", "client_out_bytes": "client_out_bytes_per_s",
    "nic_in_bytes": "nic_in_bytes_per_s", "nic_out_bytes": "nic_out_bytes_per_s",
    "raft_written": "raft_written_per_s", "raft_snapshot": "raft_snapshot_per_s",
    "machine_busy_s": "machine_cpu_busy_s",
    **{f"{role}_write_{what}": f"{role}_write_{what}_per_s" for role in VOLUME_ROLES for what in ("bytes", "ops")},
}
# counter -> the previous scrape's own bytes it contains
OWN_TRAFFIC = {
    "nic_in_bytes": lambda snap: snap.own_nic_bytes_in, "nic_out_bytes": lambda snap: snap.own_nic_bytes_out,
}
CPU_COUNTERS = ("cpu_user_s", "cpu_system_s", "cpu_iowait_s", "cpu_steal_s")
FIGURE_COLUMNS = ("cores", "cpu_quota_cores", "shared_cores", "cpu_user", "cpu_system", "cpu_iowait", "cpu_steal",
                  "cpu_busy", "cpu_s", "cpu_source",
                  "machine_cpu_busy_s", "machine_cores", "mem_rss_bytes", "run_queue", "disk_read_bytes_per_s",
                  "disk_write_bytes_per_s", "disk_read_ops_per_s", "disk_write_ops_per_s", "write_syscalls_per_s",
                  "fsyncs_per_s", "net_in_bytes_per_s", "net_out_bytes_per_s", "client_in_bytes_per_s",
                  "client_out_bytes_per_s", "internode_in_bytes_per_s", "internode_out_bytes_per_s",
                  "nic_in_bytes_per_s", "nic_out_bytes_per_s", "raft_written_per_s", "raft_snapshot_per_s", "span_s",
                  *(f"{role}_write_{what}_per_s" for role in VOLUME_ROLES for what in ("bytes", "ops")))


def missing_figures() -> dict[str, None]:
    return dict.fromkeys(FIGURE_COLUMNS)


def cgroup_cpu_rates(before: CgroupCpu, after: CgroupCpu,
                     span_s: float) -> tuple[float, float | None, float | None] | None:
    """(CPU seconds, user, system) per second between two readings of a cgroup's counters. The total is exact (the
    ns counter's delta over the span); user and system split it in the proportion of the split counters' deltas,
    so they add up to it, and are None when those did not advance (no tick in the span: the split is unknown, the
    total stands). None when the total went backwards (not the same group) or no time passed."""
    used_ns = after.usage_ns - before.usage_ns
    if span_s <= 0 or used_ns < 0:
        return None
    total = used_ns / 1e9 / span_s
    user, system = after.user - before.user, after.system - before.system
    if user < 0 or system < 0 or user + system == 0:
        return total, None, None
    return total, total * user / (user + system), total * system / (user + system)


def rates(previous: Snapshot, current: Snapshot) -> dict[str, float | int | str | None] | None:
    """The NODE_SECONDS figures between two snapshots, or None when they cannot be subtracted (another process
    identity, a counter that went backwards, no time between them)."""
    span = current.t - previous.t
    if previous.identity != current.identity or span <= 0:
        return None
    out: dict[str, float | int | str | None] = missing_figures()
    for counter, column in RATE_COLUMNS.items():
        before, after = previous.counters.get(counter), current.counters.get(counter)
        if before is None or after is None:
            continue
        # Sums over live objects (connections, peers, queues) drop when one goes away: that column is unknown
        # for this second, the others stand (a restarted process changes `identity` and drops the whole row).
        if after >= before:
            out[column] = (after - before - OWN_TRAFFIC.get(counter, lambda _: 0)(previous)) / span
    for direction in ("in", "out"):  # inter-node: per peer, over the peers connected at both ends of the span
        key = f"dist_{direction}:"
        deltas = [current.counters[k] - v for k, v in previous.counters.items()  # type: ignore[operator]
                  if k.startswith(key) and current.counters.get(k) is not None and v is not None]
        if deltas and min(deltas) >= 0:
            out[f"internode_{direction}_bytes_per_s"] = sum(deltas) / span
        elif current.broker_metrics and not any(k.startswith(key) for k in current.counters):
            out[f"internode_{direction}_bytes_per_s"] = 0.0  # no peer (a 1-node cluster)
    cores = current.cpu_quota_cores or current.cores
    out["cores"], out["span_s"] = current.cores, span
    out["cpu_quota_cores"], out["shared_cores"] = current.cpu_quota_cores, current.shared_cores
    out["machine_cores"] = int(current.gauges["machine_cores"]) if current.gauges.get("machine_cores") else None
    exact = (cgroup_cpu_rates(previous.cgroup_cpu, current.cgroup_cpu, span)
             if previous.cgroup_cpu is not None and current.cgroup_cpu is not None else None)
    cpu_seconds = [out[RATE_COLUMNS[c]] for c in ("cpu_user_s", "cpu_system_s")]
    if exact is not None:
        out["cpu_s"], out["cpu_user"], out["cpu_system"] = exact
        out["cpu_source"] = CPU_SOURCE_CGROUP
    elif all(v is not None for v in cpu_seconds):
        out["cpu_s"] = float(sum(cpu_seconds))  # type: ignore[arg-type]
        out["cpu_source"] = CPU_SOURCE_TICKS
    if cores:
        for counter in CPU_COUNTERS:
            column = RATE_COLUMNS[counter]
            if out[column] is not None:
                out[column] = out[column] / cores  # type: ignore[operator]
        if out["cpu_s"] is not None:
            out["cpu_busy"] = out["cpu_s"] / cores  # type: ignore[operator]
    for direction in ("in", "out"):
        client, internode = out[f"client_{direction}_bytes_per_s"], out[f"internode_{direction}_bytes_per_s"]
        if client is not None and internode is not None:
            out[f"net_{direction}_bytes_per_s"] = client + internode  # type: ignore[operator]
    rss = current.gauges.get("mem_rss_bytes")
    out["mem_rss_bytes"] = int(rss) if rss is not None else None
    out["run_queue"] = current.gauges.get("run_queue")
    return out


def rabbitmq_counters(metrics: Metrics) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """Counters and gauges every target reads from the node's own Prometheus endpoint (aggregated /metrics)."""
    counters = {
        "fsyncs": metric_sum(metrics, "rabbitmq_io_sync_ops_total"),
        "client_in_bytes": metric_sum(metrics, "rabbitmq_connection_incoming_bytes_total") or 0.0,
        "client_out_bytes": metric_sum(metrics, "rabbitmq_connection_outgoing_bytes_total") or 0.0,
        "raft_written": metric_sum(metrics, "rabbitmq_raft_log_last_written_index"),
        "raft_snapshot": metric_sum(metrics, "rabbitmq_raft_log_snapshot_index"),
    }
    for (name, labels), value in metrics.items():  # Erlang distribution bytes per peer node (not CLI tools)
        peer = dict(labels).get("peer", "")
        if name in ("erlang_vm_dist_recv_bytes", "erlang_vm_dist_send_bytes") and not peer.startswith(CLI_PEER):
            counters[f"dist_{'in' if name.endswith('recv_bytes') else 'out'}:{peer}"] = value
    gauges = {"run_queue": metric_sum(metrics, "rabbitmq_erlang_scheduler_run_queue"),
              "mem_rss_bytes": metric_sum(metrics, "rabbitmq_process_resident_memory_bytes")}
    return counters, gauges


def parse_block_stat(text: str) -> tuple[float, float]:
    """(writes completed, bytes written) from /sys/dev/block/<maj:min>/stat (sectors are 512 bytes there)."""
    fields = text.split()
    return float(fields[4]), float(fields[6]) * 512


def local_snapshot(t: float, pid_stat: str, pid_io: str, machine_stat: str, metrics: Metrics | None,
                   pid: int, uptime: str | None = None, cpu_quota_cores: float | None = None,
                   volume_stats: Mapping[str, str] | None = None, cgroup_cpu: CgroupCpu | None = None,
                   link: netns.LinkCounters | None = None) -> Snapshot:
    """A local node: its VM's /proc files, the machine's /proc/stat and /proc/uptime, and the node's Prometheus
    metrics (None: its endpoint did not answer, so its figures are unknown and the others stand); on the scale
    model, its CPU quota, each volume's block-device stat by role and its cgroup's CPU counter; in a namespace of its
    own, its link's counters (the NIC's figures, as on AWS)."""
    stat, io = parse_proc_pid_stat(pid_stat), parse_proc_pid_io(pid_io)
    machine = parse_proc_stat(machine_stat, uptime)
    if metrics is None:
        known, gauges = rabbitmq_counters({})
        counters: dict[str, float | None] = dict.fromkeys(known)
        gauges = dict.fromkeys(gauges)
    else:
        counters, gauges = rabbitmq_counters(metrics)
    counters.update({
        "cpu_user_s": stat.utime_ticks / CLK_TCK, "cpu_system_s": stat.stime_ticks / CLK_TCK,
        "cpu_iowait_s": stat.blkio_ticks / CLK_TCK,
        "disk_read_bytes": float(io["read_bytes"]) if "read_bytes" in io else None,
        "disk_write_bytes": float(io["write_bytes"]) if "write_bytes" in io else None,
        "write_syscalls": float(io["syscw"]) if "syscw" in io else None,
        "machine_busy_s": machine.busy_s,
    })
    if volume_stats:  # each volume its own device: the device's counters, as on AWS
        devices = {role: parse_block_stat(text) for role, text in volume_stats.items()}
        for role, (ops, written) in devices.items():
            counters[f"{role}_write_ops"], counters[f"{role}_write_bytes"] = ops, written
        counters["disk_write_ops"] = sum(ops for ops, _ in devices.values())
        counters["disk_write_bytes"] = sum(written for _, written in devices.values())
    if link is not None:
        counters["nic_in_bytes"], counters["nic_out_bytes"] = float(link.rx_bytes), float(link.tx_bytes)
    gauges = {**gauges, "mem_rss_bytes": float(stat.rss_pages * PAGE_SIZE), "machine_cores": float(machine.cores)}
    return Snapshot(t=t, identity=f"{pid}:{stat.start_ticks}", cores=machine.cores,
                    shared_cores=cpu_quota_cores is None, cpu_quota_cores=cpu_quota_cores,
                    counters=counters, gauges=gauges, broker_metrics=metrics is not None, cgroup_cpu=cgroup_cpu)


def volume_devices(node_metrics: Metrics, mounts: tuple[str, ...] = VOLUME_MOUNTS) -> list[str]:
    """node-exporter's device names of the filesystems mounted at any of `mounts` (each device once, sorted).

    A role without its own volume is a directory on the data volume, not a mount, so it adds no device."""
    devices = {labels.get("device", "").removeprefix("/dev/")
               for labels in metric_labels(node_metrics, "node_filesystem_size_bytes")
               if labels.get("mountpoint") in mounts}
    return sorted(d for d in devices if d)


def role_devices(node_metrics: Metrics, mounts: tuple[str, ...] = VOLUME_MOUNTS) -> dict[str, str]:
    """role -> node-exporter's device name of the volume mounted at that role's mount point (roles without a volume
    of their own have no mount and no entry)."""
    roles = {mount: role for role, mount in AWS_MOUNT_POINTS.items()}
    out = {}
    for labels in metric_labels(node_metrics, "node_filesystem_size_bytes"):
        mount, device = labels.get("mountpoint"), labels.get("device", "").removeprefix("/dev/")
        if mount in mounts and mount in roles and device:
            out[roles[mount]] = device
    return out


def aws_snapshot(t: float, node_metrics: Metrics, metrics: Metrics,
                 mounts: tuple[str, ...] = VOLUME_MOUNTS) -> Snapshot:
    """An EC2 node: prometheus-node-exporter (CPU, disk of every RabbitMQ volume, NIC) and the node's RabbitMQ
    metrics."""
    counters, gauges = rabbitmq_counters(metrics)
    cpus = {labels["cpu"] for labels in metric_labels(node_metrics, "node_cpu_seconds_total") if "cpu" in labels}
    busy_modes = ("user", "nice", "system", "irq", "softirq", "steal")
    busy = [metric_sum(node_metrics, "node_cpu_seconds_total", mode=m) for m in busy_modes]
    devices = volume_devices(node_metrics, mounts)
    nics = [labels["device"] for labels in metric_labels(node_metrics, "node_network_receive_bytes_total")
            if labels.get("device") not in (None, "lo")]

    def disk(name: str) -> float | None:  # a device without the counter makes the sum unknown, not smaller
        return _add(*(metric_sum(node_metrics, name, device=d) for d in devices)) if devices else None

    def nic(name: str) -> float | None:
        values = [metric_sum(node_metrics, name, device=d) for d in nics]
        return sum(v for v in values if v is not None) if nics else None

    counters.update({
        "cpu_user_s": _add(metric_sum(node_metrics, "node_cpu_seconds_total", mode="user"),
                           metric_sum(node_metrics, "node_cpu_seconds_total", mode="nice")),
        "cpu_system_s": _add(metric_sum(node_metrics, "node_cpu_seconds_total", mode="system"),
                             metric_sum(node_metrics, "node_cpu_seconds_total", mode="irq"),
                             metric_sum(node_metrics, "node_cpu_seconds_total", mode="softirq")),
        "cpu_iowait_s": metric_sum(node_metrics, "node_cpu_seconds_total", mode="iowait"),
        "cpu_steal_s": metric_sum(node_metrics, "node_cpu_seconds_total", mode="steal"),
        "machine_busy_s": _add(*busy),
        "disk_read_bytes": disk("node_disk_read_bytes_total"),
        "disk_write_bytes": disk("node_disk_written_bytes_total"),
        "disk_read_ops": disk("node_disk_reads_completed_total"),
        "disk_write_ops": disk("node_disk_writes_completed_total"),
        "nic_in_bytes": nic("node_network_receive_bytes_total"),
        "nic_out_bytes": nic("node_network_transmit_bytes_total"),
        **{f"{role}_write_{what}": metric_sum(node_metrics, name, device=device)
           for role, device in role_devices(node_metrics, mounts).items()
           for what, name in (("bytes", "node_disk_written_bytes_total"), ("ops", "node_disk_writes_completed_total"))},
    })
    boot = metric_sum(node_metrics, "node_boot_time_seconds")
    gauges = {**gauges, "machine_cores": float(len(cpus)) if cpus else None}
    return Snapshot(t=t, identity=f"boot:{boot}", cores=len(cpus) or None, shared_cores=False,
                    counters=counters, gauges=gauges)


def _add(*values: float | None) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ readers (I/O)


class NodeUnavailable(Exception):
    """The node's process or one of its endpoints did not answer: the sampler records missing seconds."""


@dataclass(frozen=True)
class Scrape:
    """An endpoint's text and the bytes the scrape itself put on the node's sockets (HTTP payload: request and
    response lines, headers, gzip body), so that the sampler can take its own traffic out of the node's."""

    text: str
    bytes_to_node: int
    bytes_from_node: int


def http_scrape(url: str, timeout_s: float) -> Scrape:
    """GET a Prometheus endpoint (gzip: the 3.10 /metrics text is ~80 KB, ~10x smaller compressed)."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Host": parts.netloc, "Accept-Encoding": "gzip", "Connection": "close"}
    request_line = f"GET {parts.path} HTTP/1.1\r\n"
    sent = len(request_line) + sum(len(k) + len(v) + 4 for k, v in headers.items()) + 2
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    try:
        connection.putrequest("GET", parts.path, skip_host=True, skip_accept_encoding=True)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise NodeUnavailable(f"{url}: HTTP {response.status}")
    except (OSError, http.client.HTTPException) as err:  # refused, reset, timed out, half a response
        raise NodeUnavailable(f"{url}: {err}") from err
    finally:
        connection.close()
    received = (len(f"HTTP/1.1 {response.status} {response.reason}\r\n")
                + sum(len(k) + len(v) + 4 for k, v in response.getheaders()) + 2 + len(body))
    if response.getheader("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return Scrape(body.decode("utf-8", "replace"), bytes_to_node=sent, bytes_from_node=received)


def read_machine_cpu(proc: str = "/proc") -> MachineCpu:
    """The machine's CPU counters now (/proc/stat and /proc/uptime)."""
    with open(f"{proc}/stat", encoding="ascii") as stat, open(f"{proc}/uptime", encoding="ascii") as uptime:
        return parse_proc_stat(stat.read(), uptime.read())


@dataclass(frozen=True)
class EnvelopeCounters:
    """Where a local node's envelope keeps its counters, from its envelope record (none: no scale model)."""

    cpu_quota_cores: float | None = None  # None: no enforced CPU envelope
    volume_stat_files: Mapping[str, str] = field(default_factory=dict)  # role -> /sys/dev/block/<maj:min>/stat
    cgroup_version: int | None = None
    cpu_files: tuple[str, str] | None = None  # the cgroup's CPU time files (envelope.Cgroups.cpu_files)

    def read_cgroup_cpu(self) -> CgroupCpu | None:
        """The cgroup's CPU counter now; None without one or when it cannot be read (that second's CPU falls back
        to the /proc ticks, and its row says so)."""
        if self.cpu_files is None or self.cgroup_version is None:
            return None
        try:
            return parse_cgroup_cpu(self.cgroup_version, *(Path(f).read_text() for f in self.cpu_files))
        except (OSError, ValueError, KeyError):
            return None


def node_envelope_counters(node_dir: Path) -> EnvelopeCounters:
    """A local node's envelope counters: its CPU quota, each volume's block stat file by role, its cgroup's CPU
    files (when the node runs in cgroups)."""
    record = read_record(node_dir)
    if record is None:
        return EnvelopeCounters()
    quota = record.envelope.get("cpu_cores") if record.enforced.get("cpu") else None
    stats = {v.role: f"/sys/dev/block/{v.devno}/stat" for v in record.volumes if v.devno}
    cgroups = detect_cgroups() if record.procs and record.cgroup else None
    cpu_files = tuple(str(f) for f in cgroups.cpu_files(record.cgroup)) if cgroups is not None else None
    return EnvelopeCounters(float(quota) if quota else None, stats, cgroups.version if cgroups else None,
                            cpu_files)  # type: ignore[arg-type]


class LocalNodeReader:
    """Reads a local node: its pid file, /proc/<pid>/{stat,io}, /proc/stat and http://host:<prometheus>/metrics; and
    its link's counters when it has a namespace of its own (`network_slot`, its cluster's: ClusterNetwork.slot)."""

    target = "local"

    def __init__(self, node: NodeInfo, timeout_s: float, proc: str = "/proc", network_slot: int | None = None,
                 sys_net: Path = netns.SYS_NET) -> None:
        if not node.pid_file or not node.prometheus_port:
            raise ValueError(f"node {node.name}: a local node needs pid_file and prometheus_port")
        self.node, self.timeout_s, self.proc = node, timeout_s, proc
        self.url = f"http://{node.host}:{node.prometheus_port}/metrics"
        self.envelope = node_envelope_counters(Path(node.pid_file).parent)
        self.link = netns.NodeNet(network_slot, node.number) if network_slot else None
        self.sys_net = sys_net

    def _link_counters(self) -> netns.LinkCounters | None:
        """The link's counters now; None without a link or when they cannot be read (its figures unknown this
        second, the others stand)."""
        try:
            return netns.counters(self.link, self.sys_net) if self.link is not None else None
        except (OSError, ValueError):
            return None

    def read(self, now: Callable[[], float] = time.monotonic) -> Snapshot:
        # The operating system's counters first, and the time with them: they need nothing from the node. Its own
        # endpoint is asked after, with a third of the time: a node at its CPU quota answers late or not at all,
        # and waiting for it would stretch the span past what a row may cover and lose the OS figures too.
        try:
            with open(self.node.pid_file) as f:  # type: ignore[arg-type]
                pid = int(f.read().strip())
            with open(f"{self.proc}/{pid}/stat") as f:
                pid_stat = f.read()
            with open(f"{self.proc}/{pid}/io") as f:
                pid_io = f.read()
            with open(f"{self.proc}/stat") as f, open(f"{self.proc}/uptime") as g:
                machine, uptime = f.read(), g.read()
            volume_stats = {role: Path(path).read_text() for role, path in self.envelope.volume_stat_files.items()}
        except (OSError, ValueError) as err:
            raise NodeUnavailable(f"{self.node.name}: {err}") from err
        link = self._link_counters()
        cgroup_cpu = self.envelope.read_cgroup_cpu()  # last of the OS's counters, nearest the time taken with them
        t = now()
        try:
            scrape: Scrape | None = http_scrape(self.url, self.timeout_s / 3)
        except NodeUnavailable:  # its figures are unknown this second; the process's stand
            scrape = None
        metrics = parse_prometheus(scrape.text) if scrape is not None else None
        snapshot = local_snapshot(t, pid_stat, pid_io, machine, metrics, pid, uptime, self.envelope.cpu_quota_cores,
                                  volume_stats, cgroup_cpu, link)
        if scrape is None:
            return snapshot
        own_link = link is not None  # the scrape crossed the node's link too
        return replace(snapshot, own_bytes_in=scrape.bytes_to_node, own_bytes_out=scrape.bytes_from_node,
                       own_nic_bytes_in=scrape.bytes_to_node if own_link else 0,
                       own_nic_bytes_out=scrape.bytes_from_node if own_link else 0)


class AwsNodeReader:
    """Reads an EC2 node: prometheus-node-exporter (cloud-init installs it) and the node's RabbitMQ metrics."""

    target = "aws"

    def __init__(self, node: NodeInfo, timeout_s: float, exporter_port: int = NODE_EXPORTER_PORT) -> None:
        self.node, self.timeout_s = node, timeout_s
        self.exporter_url = f"http://{node.host}:{exporter_port}/metrics"
        self.url = f"http://{node.host}:{node.prometheus_port or 15692}/metrics"

    def read(self, now: Callable[[], float] = time.monotonic) -> Snapshot:
        exporter = http_scrape(self.exporter_url, self.timeout_s)
        rabbit = http_scrape(self.url, self.timeout_s)
        snapshot = aws_snapshot(now(), parse_prometheus(exporter.text), parse_prometheus(rabbit.text))
        return replace(snapshot, own_bytes_in=rabbit.bytes_to_node, own_bytes_out=rabbit.bytes_from_node,
                       own_nic_bytes_in=rabbit.bytes_to_node + exporter.bytes_to_node,
                       own_nic_bytes_out=rabbit.bytes_from_node + exporter.bytes_from_node)


class ExistingNodeReader:
    """Reads a node of an existing cluster (sizing/resources/existing.py): its RabbitMQ Prometheus endpoint only (the
    rabbitmq_prometheus plugin, port 15692 unless the spec says otherwise). The hosts are not ours: no node exporter
    is assumed, so host CPU, disk and NIC figures stay unknown; RabbitMQ's own are recorded."""

    target = "existing"

    def __init__(self, node: NodeInfo, timeout_s: float) -> None:
        self.node, self.timeout_s = node, timeout_s
        self.url = f"http://{node.host}:{node.prometheus_port or 15692}/metrics"

    def read(self, now: Callable[[], float] = time.monotonic) -> Snapshot:
        rabbit = http_scrape(self.url, self.timeout_s)
        snapshot = aws_snapshot(now(), {}, parse_prometheus(rabbit.text))
        return replace(snapshot, own_bytes_in=rabbit.bytes_to_node, own_bytes_out=rabbit.bytes_from_node)


def reader_for(target: str, node: NodeInfo, timeout_s: float,
               network_slot: int | None = None) -> LocalNodeReader | AwsNodeReader | ExistingNodeReader:
    """The reader of a node on `target`; a local node in a namespace of its own reads its link too (`network_slot`)."""
    if target == "existing":
        return ExistingNodeReader(node, timeout_s)
    if target == "local":
        return LocalNodeReader(node, timeout_s, network_slot=network_slot)
    return AwsNodeReader(node, timeout_s)
