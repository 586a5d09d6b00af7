"""adapters.nodestats parsing and snapshot arithmetic on captured text (no node, no HTTP), and the machine's busy
counter against a forked child's exact runtime.

Captured: tests/data/nodestats/rabbitmq_3.10_metrics.txt (a 3.10 node's /metrics, the series we read),
node_exporter_1.5_metrics.txt (Debian's prometheus-node-exporter 1.5 on this machine), proc_*.txt (Linux /proc).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from adapters import nodestats
from adapters.envelope import CgroupCpu
from sizing.contract import records

DATA = Path(__file__).parent / "data" / "nodestats"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_prometheus_text_parses_to_the_values_in_the_file():
    metrics = nodestats.parse_prometheus(text("rabbitmq_3.10_metrics.txt"))
    # known answers: the captured lines themselves
    assert nodestats.metric_sum(metrics, "rabbitmq_process_resident_memory_bytes") == 159035392
    assert nodestats.metric_sum(metrics, "erlang_vm_statistics_bytes_output_total") == 74692
    assert nodestats.metric_sum(metrics, "erlang_vm_statistics_bytes_received_total") == 20866
    assert nodestats.metric_sum(metrics, "no_such_metric") is None


def test_labelled_series_are_summed_by_label_filter():
    metrics = nodestats.parse_prometheus(text("node_exporter_1.5_metrics.txt"))
    # cpu0 user 1763.45 + cpu1 user 2035.42 (the captured lines)
    assert nodestats.metric_sum(metrics, "node_cpu_seconds_total", mode="user") == pytest.approx(3798.87)
    assert nodestats.volume_devices(metrics, mounts=("/",)) == ["vda"]
    assert nodestats.volume_devices(metrics) == []  # no RabbitMQ volume mount on this machine


def test_proc_files_parse_to_their_fields():
    stat = nodestats.parse_proc_pid_stat(text("proc_pid_stat.txt"))
    assert stat.rss_pages == 414  # field 24 of the captured line
    assert stat.start_ticks == 285393  # field 22
    assert stat.ppid == 29734  # field 4
    machine = nodestats.parse_proc_stat(text("proc_stat.txt"))
    assert machine.cores == 2
    # user + nice + system + irq + softirq + steal of the "cpu " line
    assert machine.busy_ticks == 378491 + 38 + 69300 + 0 + 5372 + 1612
    assert (machine.steal_ticks, machine.interrupt_ticks) == (1612, 0 + 5372)
    assert machine.busy_s == pytest.approx(machine.busy_ticks / nodestats.CLK_TCK)  # without /proc/uptime
    with_uptime = nodestats.parse_proc_stat(text("proc_stat.txt"), "3000.50 5800.25\n")
    # idle 109836 + iowait 4209 ticks (the "cpu " line): the rest of 2 cores x 3000.5 s was busy
    assert with_uptime.busy_s == pytest.approx(2 * 3000.5 - (109836 + 4209) / nodestats.CLK_TCK)
    assert nodestats.parse_proc_pid_io(text("proc_pid_io.txt"))["rchar"] == 6976


def test_a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields():
    line = text("proc_pid_stat.txt").replace("(cat)", "(beam (smp) x)")
    assert nodestats.parse_proc_pid_stat(line).rss_pages == 414


def test_a_process_counts_its_own_cpu_apart_from_that_of_the_children_it_waited_for():
    fields = text("proc_pid_stat.txt").split()
    fields[13:17] = ["7", "3", "11", "5"]  # utime, stime, cutime, cstime (fields 14-17)
    stat = nodestats.parse_proc_pid_stat(" ".join(fields))
    assert (stat.utime_ticks, stat.stime_ticks, stat.children_ticks) == (7, 3, 16)


def test_the_machine_busy_counter_misses_no_burst_a_process_ran():
    """Known answer: the exact runtime the scheduler charged a child that runs 0.1 ms bursts every 0.5 ms (its
    rusage). The tick-sampled busy fields of /proc/stat saw 76 % of it here; the cores' time less idle sees it all,
    plus whatever else ran meanwhile."""
    before = nodestats.read_machine_cpu()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        end = time.monotonic() + 3
        while time.monotonic() < end:
            burst = time.monotonic()
            while time.monotonic() - burst < 0.0001:
                pass
            time.sleep(0.0005)
        os._exit(0)
    _, _, usage = os.wait4(pid, 0)
    after = nodestats.read_machine_cpu()
    child = usage.ru_utime + usage.ru_stime
    assert after.busy_s - before.busy_s >= 0.97 * child, (after.busy_s - before.busy_s, child)


def local_pair(cpu_ticks: int, write_bytes: int, client_in: float, first_kw: dict | None = None,
               second_kw: dict | None = None):
    metrics = nodestats.parse_prometheus(text("rabbitmq_3.10_metrics.txt"))
    fields = text("proc_pid_stat.txt").split()
    fields[13] = str(int(fields[13]) + cpu_ticks)  # utime (field 14)
    io = text("proc_pid_io.txt").replace("write_bytes: 0", f"write_bytes: {write_bytes}")
    peer, cli = (("peer", "rabbit-2@host"),), (("peer", "rabbitmqcli-1-rabbit-1@host"),)
    metrics = {**metrics, ("erlang_vm_dist_recv_bytes", peer): 100.0, ("erlang_vm_dist_recv_bytes", cli): 5.0}
    first = nodestats.local_snapshot(10.0, text("proc_pid_stat.txt"), text("proc_pid_io.txt"),
                                     text("proc_stat.txt"), metrics, pid=7, **(first_kw or {}))
    later = dict(metrics)
    later[("erlang_vm_dist_recv_bytes", peer)] += 2 * client_in
    later[("erlang_vm_dist_recv_bytes", cli)] += 10**6  # a CLI tool's traffic is not inter-node
    later[("rabbitmq_connection_incoming_bytes_total", ())] = client_in
    second = nodestats.local_snapshot(12.0, " ".join(fields), io, text("proc_stat.txt"), later, pid=7,
                                      **(second_kw or {}))
    return first, second


def test_rates_divide_deltas_by_the_span_and_cpu_by_the_cores():
    first, second = local_pair(cpu_ticks=nodestats.CLK_TCK, write_bytes=4_000_000, client_in=1000.0)
    figures = nodestats.rates(first, second)
    assert figures is not None and figures["span_s"] == 2.0
    assert figures["cpu_s"] == pytest.approx(0.5)  # 1 CPU second over 2 s
    assert figures["cpu_busy"] == pytest.approx(0.25)  # of the machine's 2 cores
    assert figures["disk_write_bytes_per_s"] == pytest.approx(2_000_000)
    assert figures["client_in_bytes_per_s"] == pytest.approx(500.0)
    assert figures["internode_in_bytes_per_s"] == pytest.approx(1000.0)  # 2000 from the peer over 2 s
    assert figures["net_in_bytes_per_s"] == pytest.approx(1500.0)  # client + inter-node
    assert figures["disk_write_ops_per_s"] is None  # not attributable locally: never invented
    assert set(figures) <= set(records.column_names("node_seconds"))


def test_no_rates_across_a_restart_and_no_column_from_a_sum_that_dropped():
    first, second = local_pair(cpu_ticks=10, write_bytes=10, client_in=1.0)
    assert nodestats.rates(first, replace(second, identity="8:1")) is None  # another VM: nothing subtracts
    # a client connection closed: its bytes left the sum, so the client column is unknown; CPU still stands
    closed = replace(second, t=14.0, counters={**second.counters, "client_in_bytes": 0.0})
    figures = nodestats.rates(second, closed)
    assert figures["client_in_bytes_per_s"] is None and figures["net_in_bytes_per_s"] is None
    assert figures["cpu_s"] == 0.0


def test_aws_snapshot_reads_cpu_modes_disk_of_the_data_mount_and_nics():
    node = nodestats.parse_prometheus(text("node_exporter_1.5_metrics.txt"))
    rabbit = nodestats.parse_prometheus(text("rabbitmq_3.10_metrics.txt"))
    snap = nodestats.aws_snapshot(1.0, node, rabbit, mounts=("/",))
    assert snap.cores == 2 and not snap.shared_cores
    assert snap.counters["cpu_steal_s"] == pytest.approx(10.74 + 11.63)
    assert snap.counters["disk_write_ops"] == 1.433645e06  # device vda, found through the "/" mount
    later = nodestats.aws_snapshot(2.0, {**node, ("node_disk_writes_completed_total", (("device", "vda"),)):
                                         1.433645e06 + 3000}, rabbit, mounts=("/",))
    assert nodestats.rates(snap, later)["disk_write_ops_per_s"] == pytest.approx(3000)


def node_exporter_text(disks: dict[str, tuple[str, float, float]]) -> str:
    """node-exporter 1.5 exposition lines (the captured file's format) for {device: (mountpoint, written bytes,
    writes completed)}, plus CPU lines so that the snapshot has cores."""
    lines = ['node_cpu_seconds_total{cpu="0",mode="user"} 10', 'node_cpu_seconds_total{cpu="0",mode="system"} 5']
    for device, (mountpoint, written, writes) in disks.items():
        lines += [f'node_filesystem_size_bytes{{device="/dev/{device}",fstype="xfs",mountpoint="{mountpoint}"}} 1e+11',
                  f'node_disk_written_bytes_total{{device="{device}"}} {written}',
                  f'node_disk_writes_completed_total{{device="{device}"}} {writes}',
                  f'node_disk_read_bytes_total{{device="{device}"}} 0',
                  f'node_disk_reads_completed_total{{device="{device}"}} 0']
    return "\n".join(lines) + "\n"


def test_aws_disk_figures_sum_every_rabbitmq_volume_of_the_node_and_not_the_root_volume():
    """Issue 15, multi-volume layouts (sizing.resources.disks: data, wal, segments, logs each on their own EBS volume):
    known answer = the sum over the four RabbitMQ devices of the deltas written into the text; the root
    volume's writes (nvme0n1 at /) are excluded."""
    from sizing.resources.disks import AWS_MOUNT_POINTS

    mounts = {"nvme0n1": "/", "nvme1n1": AWS_MOUNT_POINTS["data"], "nvme2n1": AWS_MOUNT_POINTS["wal"],
              "nvme3n1": AWS_MOUNT_POINTS["segments"], "nvme4n1": AWS_MOUNT_POINTS["logs"]}
    before = {d: (m, 1e9, 1000.0) for d, m in mounts.items()}
    grown = {"nvme0n1": 7e6, "nvme1n1": 1e6, "nvme2n1": 40e6, "nvme3n1": 20e6, "nvme4n1": 0.5e6}
    after = {d: (m, 1e9 + grown[d], 1000.0 + grown[d] / 4096) for d, m in mounts.items()}
    parse = nodestats.parse_prometheus
    assert nodestats.volume_devices(parse(node_exporter_text(before))) == ["nvme1n1", "nvme2n1", "nvme3n1", "nvme4n1"]
    first = nodestats.aws_snapshot(1.0, parse(node_exporter_text(before)), {})
    second = nodestats.aws_snapshot(3.0, parse(node_exporter_text(after)), {})
    figures = nodestats.rates(first, second)
    rabbit_bytes = grown["nvme1n1"] + grown["nvme2n1"] + grown["nvme3n1"] + grown["nvme4n1"]
    assert figures["disk_write_bytes_per_s"] == pytest.approx(rabbit_bytes / 2.0)
    assert figures["disk_write_ops_per_s"] == pytest.approx(rabbit_bytes / 4096 / 2.0)
    # one-volume layout: only the data mount exists, so only its device counts (the pre-multi-volume figure)
    single = {"nvme0n1": before["nvme0n1"], "nvme1n1": before["nvme1n1"]}
    single_after = {"nvme0n1": after["nvme0n1"], "nvme1n1": after["nvme1n1"]}
    figures = nodestats.rates(nodestats.aws_snapshot(1.0, parse(node_exporter_text(single)), {}),
                              nodestats.aws_snapshot(2.0, parse(node_exporter_text(single_after)), {}))
    assert figures["disk_write_bytes_per_s"] == pytest.approx(grown["nvme1n1"])
    # a volume's device without the counter: the sum is unknown, never the smaller sum of the rest
    partial = parse(node_exporter_text(after))
    del partial[("node_disk_written_bytes_total", (("device", "nvme3n1"),))]
    assert nodestats.aws_snapshot(3.0, partial, {}).counters["disk_write_bytes"] is None


def test_each_rabbitmq_volume_is_read_by_the_role_it_holds():
    """Issue 22: an AWS node with data and WAL on volumes of their own (seed 001's rabbitmq4/13 layouts) records each
    volume's writes beside the sums, by role; roles without a volume (logs, segments) stay unknown, not zero."""
    lines = ['node_filesystem_size_bytes{device="/dev/nvme1n1",fstype="ext4",mountpoint="/var/lib/rabbitmq"} 1e12',
             'node_filesystem_size_bytes{device="/dev/nvme2n1",fstype="ext4",mountpoint="/var/lib/rabbitmq-wal"} 1e12',
             'node_filesystem_size_bytes{device="/dev/nvme0n1p1",fstype="ext4",mountpoint="/"} 8e9',
             'node_disk_written_bytes_total{device="nvme1n1"} 1000',
             'node_disk_written_bytes_total{device="nvme2n1"} 5000',
             'node_disk_written_bytes_total{device="nvme0n1p1"} 99999',
             'node_disk_writes_completed_total{device="nvme1n1"} 10',
             'node_disk_writes_completed_total{device="nvme2n1"} 40']
    node = nodestats.parse_prometheus("\n".join(lines) + "\n")
    assert nodestats.role_devices(node) == {"data": "nvme1n1", "wal": "nvme2n1"}
    before = nodestats.aws_snapshot(0.0, node, {})
    after_lines = [line.replace(" 1000", " 3000").replace(" 5000", " 25000").replace(" 40", " 140") for line in lines]
    after = nodestats.aws_snapshot(2.0, nodestats.parse_prometheus("\n".join(after_lines) + "\n"), {})
    row = nodestats.rates(before, after)
    assert (row["data_write_bytes_per_s"], row["wal_write_bytes_per_s"]) == (1000.0, 10000.0)
    assert row["wal_write_ops_per_s"] == 50.0 and row["disk_write_bytes_per_s"] == 11000.0  # the root disk is not ours
    assert row["segments_write_bytes_per_s"] is None and row["logs_write_ops_per_s"] is None


def test_on_the_scale_model_cpu_is_a_fraction_of_the_quota_and_each_volume_is_its_own_device():
    """Known answer: 1 CPU second over 2 s is 0.5 cores, 2.5 times a 0.2-core quota; the block-device stat lines
    (fields 5 and 7: writes completed, 512-byte sectors written) advance by 600 writes and 2,048,000 sectors."""
    def block(writes: int, sectors: int) -> str:
        return f"10 0 80 5 {writes} 3 {sectors} 40 0 30 45 0 0 0 0 0 0"

    volumes = {"data": (block(100, 1000), block(700, 2_049_000)), "wal": (block(5, 8), block(25, 8 + 2048))}
    first, second = local_pair(
        cpu_ticks=nodestats.CLK_TCK, write_bytes=4_000_000, client_in=1000.0,
        first_kw={"cpu_quota_cores": 0.2, "volume_stats": {role: pair[0] for role, pair in volumes.items()}},
        second_kw={"cpu_quota_cores": 0.2, "volume_stats": {role: pair[1] for role, pair in volumes.items()}})
    figures = nodestats.rates(first, second)
    assert figures["cpu_quota_cores"] == 0.2 and figures["shared_cores"] is False
    assert figures["cpu_busy"] == pytest.approx(2.5)  # a quota cannot be exceeded: the real-node test checks that
    assert figures["data_write_ops_per_s"] == pytest.approx(300) and figures["wal_write_ops_per_s"] == 10
    assert figures["data_write_bytes_per_s"] == pytest.approx(2_048_000 * 512 / 2)
    assert figures["cores"] == 2  # the machine's, kept beside the quota
    # the disk sums are over the devices, not the VM's /proc/<pid>/io
    assert figures["disk_write_ops_per_s"] == pytest.approx(310)


def test_a_node_whose_endpoint_did_not_answer_still_has_its_operating_system_figures():
    """A node at its CPU quota may not answer /metrics within the sampler's second (seen on 5 x 0.08-core nodes:
    the busiest node's rows were missing for whole phases). Its CPU and disk come from /proc, so they stand; what
    only the broker knows is unknown, never zero (no inter-node traffic is not "no peer")."""
    _, second = local_pair(cpu_ticks=nodestats.CLK_TCK, write_bytes=4_000_000, client_in=1000.0)
    fields = text("proc_pid_stat.txt").split()
    fields[13] = str(int(fields[13]) + 3 * nodestats.CLK_TCK)  # 2 CPU seconds after `second`
    silent = replace(nodestats.local_snapshot(14.0, " ".join(fields), text("proc_pid_io.txt"),
                                              text("proc_stat.txt"), None, pid=7), t=14.0)
    assert not silent.broker_metrics and second.broker_metrics
    figures = nodestats.rates(second, silent)
    assert figures["cpu_s"] == pytest.approx(1.0)  # 2 CPU seconds over 2 s: the /proc counter's
    for column in ("client_in_bytes_per_s", "internode_in_bytes_per_s", "internode_out_bytes_per_s",
                   "net_in_bytes_per_s", "fsyncs_per_s", "raft_written_per_s", "run_queue"):
        assert figures[column] is None, column
    assert figures["mem_rss_bytes"] is not None  # from /proc/<pid>/stat
    back = nodestats.rates(silent, replace(second, t=16.0, identity=silent.identity))
    assert back["client_in_bytes_per_s"] is None  # nothing to subtract from until two answers in a row


def test_the_local_reader_reads_the_process_when_the_endpoint_is_closed(tmp_path):
    """Known answer: this test's own process stands in for the node (its pid file), and nothing listens on the
    endpoint's port (a port bound and closed again); the snapshot's CPU counter is this process's /proc one."""
    import socket

    from sizing.resources.cluster import NodeInfo

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    pid_file = tmp_path / "node.pid"
    pid_file.write_text(str(os.getpid()))
    node = NodeInfo(number=1, name="rabbit-1@localhost", host="127.0.0.1", amqp_port=1, management_port=2,
                    prometheus_port=closed_port, pid_file=str(pid_file))
    before = time.process_time()
    snapshot = nodestats.LocalNodeReader(node, timeout_s=0.5).read()
    after = time.process_time()
    assert not snapshot.broker_metrics
    own = snapshot.counters["cpu_user_s"] + snapshot.counters["cpu_system_s"]
    assert before - 0.05 <= own <= after + 0.05  # /proc/self's ticks (1/100 s) against the process clock
    assert snapshot.counters["client_in_bytes"] is None and snapshot.own_bytes_in == 0


def test_cpu_per_second_from_two_readings_of_a_cgroups_counter():
    """Known answers (issue 44): 100 ms of the group's ns counter over 1 s is 0.1 CPU-s/s, over 2 s 0.05; its user
    and system are that total split 8:2 as the split counters advanced (ticks), so they add up to it exactly."""
    before = CgroupCpu(usage_ns=10_000_000_000, user=500.0, system=100.0)
    after = CgroupCpu(usage_ns=10_100_000_000, user=508.0, system=102.0)
    assert nodestats.cgroup_cpu_rates(before, after, 1.0) == pytest.approx((0.1, 0.08, 0.02))
    assert nodestats.cgroup_cpu_rates(before, after, 2.0) == pytest.approx((0.05, 0.04, 0.01))
    # 4 ms and no tick in the span: the exact total stands, its split is unknown (never a guess)
    no_tick = CgroupCpu(usage_ns=10_004_000_000, user=500.0, system=100.0)
    assert nodestats.cgroup_cpu_rates(before, no_tick, 1.0) == (pytest.approx(0.004), None, None)
    assert nodestats.cgroup_cpu_rates(after, before, 1.0) is None  # backwards: not the same group
    assert nodestats.cgroup_cpu_rates(before, after, 0.0) is None


def test_in_an_envelope_the_cpu_figures_come_from_the_cgroups_counter_and_say_so():
    """The same pair of snapshots: /proc's ticks say 1 CPU-s over 2 s (5 quotas of 0.1 cores, which the kernel
    cannot have let happen), the cgroup's counter 0.19 s: 0.95 of the quota. Without the counter in either snapshot
    (a second whose cgroup could not be read, or no envelope) the ticks stand, and cpu_source says which."""
    first, second = local_pair(
        cpu_ticks=nodestats.CLK_TCK, write_bytes=0, client_in=0.0,
        first_kw={"cpu_quota_cores": 0.1, "cgroup_cpu": CgroupCpu(7_000_000_000, 40.0, 10.0)},
        second_kw={"cpu_quota_cores": 0.1, "cgroup_cpu": CgroupCpu(7_190_000_000, 58.0, 11.0)})
    figures = nodestats.rates(first, second)
    assert figures["cpu_source"] == records.CPU_SOURCE_CGROUP
    assert figures["cpu_s"] == pytest.approx(0.095)
    assert figures["cpu_busy"] == pytest.approx(0.95)
    assert figures["cpu_user"] == pytest.approx(0.95 * 18 / 19) and figures["cpu_system"] == pytest.approx(0.05)
    assert figures["cpu_user"] + figures["cpu_system"] == pytest.approx(figures["cpu_busy"])
    ticks = nodestats.rates(first, replace(second, cgroup_cpu=None))
    assert ticks["cpu_source"] == records.CPU_SOURCE_TICKS and ticks["cpu_busy"] == pytest.approx(5.0)
    assert nodestats.missing_figures()["cpu_source"] is None  # a missing second says nothing of a source


def test_a_node_with_a_link_of_its_own_reports_the_links_bytes_less_the_samplers_scrapes():
    """Issue 46: a namespaced node's NIC figures are its link's kernel counters (adapters/netns.counters), as node-
    exporter's are on AWS. Known answer: 3,000,000 bytes in and 1,000,000 out over 2 s, of which the sampler's own
    scrape put 500 bytes in and 20,500 out: 1,499,750 and 489,750 bytes/s. On the loopback the figures stay null."""
    from adapters.netns import LinkCounters

    first, second = local_pair(cpu_ticks=0, write_bytes=0, client_in=0.0,
                               first_kw={"link": LinkCounters(10_000, 10, 20_000, 20)},
                               second_kw={"link": LinkCounters(3_010_000, 2010, 1_020_000, 1020)})
    # the scrape that made `first` answered after its counters were read: it shows in the next span
    first = replace(first, own_nic_bytes_in=500, own_nic_bytes_out=20_500)
    figures = nodestats.rates(first, second)
    assert figures["nic_in_bytes_per_s"] == pytest.approx(1_499_750)
    assert figures["nic_out_bytes_per_s"] == pytest.approx(489_750)
    plain = nodestats.rates(*local_pair(cpu_ticks=0, write_bytes=0, client_in=0.0))
    assert plain["nic_in_bytes_per_s"] is None and plain["nic_out_bytes_per_s"] is None


def test_the_local_reader_reads_a_links_counters_by_its_cluster_and_node_number(tmp_path):
    """Known answer: the reader of node 2 of network slot 9 reads rsv9-2's statistics (here a directory laid out as
    /sys/class/net is), turned round to the node's view; a link that is gone leaves the figures unknown."""
    from adapters import netns
    from sizing.resources.cluster import NodeInfo

    stats = tmp_path / "rsv9-2" / "statistics"
    stats.mkdir(parents=True)
    for name, value in {"rx_bytes": 700, "rx_packets": 7, "tx_bytes": 9000, "tx_packets": 9}.items():
        (stats / name).write_text(f"{value}\n")
    pid_file = tmp_path / "node.pid"
    pid_file.write_text(str(os.getpid()))
    node = NodeInfo(number=2, name="rabbit-1@rs-9-2", host="127.0.0.1", amqp_port=1, management_port=2,
                    prometheus_port=1, pid_file=str(pid_file))
    assert nodestats.reader_for("local", node, 0.3, network_slot=9).link == netns.NodeNet(9, 2)
    reader = nodestats.LocalNodeReader(node, 0.3, network_slot=9, sys_net=tmp_path)
    snapshot = reader.read()
    assert snapshot.counters["nic_in_bytes"] == 9000 and snapshot.counters["nic_out_bytes"] == 700
    (tmp_path / "rsv9-2" / "statistics" / "rx_bytes").unlink()
    assert "nic_in_bytes" not in reader.read().counters
    assert "nic_in_bytes" not in nodestats.reader_for("local", node, 0.3).read().counters
