"""adapters/envelope.py without root: cgroup v1 and v2 detection from mountinfo text, the files each version is
written, a node's envelope made in a fake v2 hierarchy (a plain directory), and the one-line support summary.

This machine mounts v1 controllers (tests/test_envelope_cluster.py runs there on real nodes); v2 (cpu.max,
memory.max, io.max), which most current distributions mount alone, is checked here on the files it writes: the
known answers are the kernel's documented formats (Documentation/admin-guide/cgroup-v2.rst).
"""

from __future__ import annotations

from pathlib import Path

from adapters import envelope as env
from sizing.resources.scalemodel import GeneratorEnvelope, NodeEnvelope, VolumeEnvelope

V1_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
31 25 0:27 / /sys/fs/cgroup/cpuacct rw,nosuid - cgroup cgroup rw,cpuacct
32 25 0:28 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
33 25 0:29 / /sys/fs/cgroup/blkio rw,nosuid - cgroup cgroup rw,blkio
34 25 0:30 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
"""

NODE = NodeEnvelope(instance_type="c5.2xlarge", cpu_cores=0.2, cpu_period_us=20_000, cpu_quota_us=4_000,
                    memory_bytes=1 << 30, volumes=(VolumeEnvelope("data", "gp2", 4000, 300, 26_214_400, 3000.0,
                                                                  262.144),))


def v2_root(tmp_path: Path, controllers: str = "cpuset cpu io memory pids") -> tuple[Path, str]:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    return root, f"40 25 0:31 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def test_v1_controllers_are_used_where_they_are_mounted():
    cgroups = env.detect_cgroups(mountinfo=V1_MOUNTINFO)
    assert cgroups is not None and cgroups.version == 1
    assert cgroups.available == {"cpu", "memory", "io"}
    assert cgroups.dirs("rabbit-sizing/x-p1/node-1") == {
        "cpu": Path("/sys/fs/cgroup/cpu/rabbit-sizing/x-p1/node-1"),
        "cpuacct": Path("/sys/fs/cgroup/cpuacct/rabbit-sizing/x-p1/node-1"),
        "memory": Path("/sys/fs/cgroup/memory/rabbit-sizing/x-p1/node-1")}
    # v1 throttles live in the root blkio group (writeback is charged there), one file per direction and unit
    assert env.Cgroups(1, {"blkio": Path("/b")}, frozenset({"io"})).io_writes("g", "7:3", 300, None) == [
        ("/b/blkio.throttle.read_iops_device", "7:3 300"), ("/b/blkio.throttle.read_bps_device", "7:3 0"),
        ("/b/blkio.throttle.write_iops_device", "7:3 300"), ("/b/blkio.throttle.write_bps_device", "7:3 0")]


def test_v2_alone_uses_cpu_max_memory_max_and_io_max(tmp_path):
    root, mountinfo = v2_root(tmp_path)
    cgroups = env.detect_cgroups(mountinfo=mountinfo)
    assert cgroups is not None and cgroups.version == 2 and cgroups.available == {"cpu", "io", "memory"}
    g = "rabbit-sizing/x-p1/node-1"
    assert cgroups.cpu_writes(g, 4000, 20_000, boot=False) == [
        (str(root / g / "cpu.max"), "4000 20000"), (str(root / g / "cpu.weight"), str(env.RUN_WEIGHT))]
    assert cgroups.cpu_writes(g, None, 20_000, boot=True) == [
        (str(root / g / "cpu.max"), "max 20000"), (str(root / g / "cpu.weight"), "1")]
    assert cgroups.memory_writes(g, 1 << 30) == [(str(root / g / "memory.max"), str(1 << 30))]
    assert cgroups.io_writes(g, "7:3", 300, 26_214_400) == [
        (str(root / g / "io.max"), "7:3 riops=300 wiops=300 rbps=26214400 wbps=26214400")]
    assert cgroups.clear_io_writes(g, "7:3") == [(str(root / g / "io.max"), "7:3 riops=max wiops=max rbps=max "
                                                                              "wbps=max")]


def test_a_v2_root_without_cpu_or_memory_offers_nothing(tmp_path):
    _, mountinfo = v2_root(tmp_path, controllers="pids")
    assert env.detect_cgroups(mountinfo=mountinfo) is None


def test_a_node_envelope_in_a_v2_hierarchy_writes_its_limits_and_scripts(tmp_path):
    root, mountinfo = v2_root(tmp_path)
    support = env.Support(env.detect_cgroups(mountinfo=mountinfo), loops=False, missing=("no loop devices",))
    node_dir = tmp_path / "node-1"
    node_dir.mkdir()
    record = env.create_node(node_dir, NODE, "rabbit-sizing/x-p1/node-1", support)
    group = root / "rabbit-sizing" / "x-p1" / "node-1"
    assert (group / "memory.max").read_text() == f"{1 << 30}\n"
    assert (group / "cpu.max").read_text() == "4000 20000\n"  # at rest in run mode; boot lifts it, run sets it back
    # every level passes the controllers down (cgroup v2's "no internal process" and delegation rules)
    assert (root / "cgroup.subtree_control").read_text() == "+cpu +io +memory"
    assert (root / "rabbit-sizing" / "x-p1" / "cgroup.subtree_control").read_text() == "+cpu +io +memory"
    assert "max 20000" in (node_dir / env.BOOT_SCRIPT).read_text()
    assert "4000 20000" in (node_dir / env.RUN_SCRIPT).read_text()
    assert record.enforced == {"cpu": True, "memory": True, "disk": False} and record.volumes == []
    assert f"ENVELOPE_PROCS={group / 'cgroup.procs'}" in (node_dir / env.ENV_FILE).read_text()
    assert env.read_record(node_dir) == record
    # destroy removes the group (a plain directory here: rmdir needs it empty of files, so we clear them first)
    for f in group.iterdir():
        f.unlink()
    env.destroy(node_dir, cgroups=support.cgroups)
    assert not group.exists() and env.read_record(node_dir) is None


def test_the_generator_gets_its_own_group_and_runs_inside_it(tmp_path):
    root, mountinfo = v2_root(tmp_path)
    support = env.Support(env.detect_cgroups(mountinfo=mountinfo), loops=False, missing=())
    cluster_dir = tmp_path / "cluster"
    cluster_dir.mkdir()
    env.create_generator(cluster_dir, GeneratorEnvelope(1.0, 20_000, 20_000, 2 << 30), "rabbit-sizing/x-p1", support)
    procs = str(root / "rabbit-sizing" / "x-p1" / "generator" / "cgroup.procs")
    command = env.generator_command(cluster_dir, ["python", "-m", "loadgen", "run"])
    assert command[:2] == ["env", f"ENVELOPE_PROCS={procs}"] and command[-4:] == ["python", "-m", "loadgen", "run"]
    assert env.generator_command(None, ["x"]) == ["x"]  # no cluster directory (an existing cluster): as it is
    assert env.enforcement(cluster_dir) == "enforced: cpu, memory"


def test_the_summary_says_what_is_missing_and_what_the_run_does_instead(tmp_path):
    assert env.detect_support(euid=1000).summary() == (
        "scale model not enforced (not root: cgroups and loop devices need root (run the set-up as root, or with "
        "sudo)): nodes share the machine's cores, nodes share the machine's memory, volumes are directories of one "
        "filesystem; the run records this and its tables say so")
    _, mountinfo = v2_root(tmp_path, controllers="cpu pids")
    partial = env.detect_support(mountinfo=mountinfo, euid=0)
    assert partial.enforced["cpu"] and not partial.enforced["memory"]
    assert partial.summary().startswith("scale model partly enforced (no cgroup memory controller")


def test_a_groups_cpu_time_is_read_from_the_counter_its_quota_is_charged_against(tmp_path):
    """Known answers, the kernel's formats: v1 cpuacct.usage (ns) with cpuacct.stat (user/system in USER_HZ ticks);
    v2 cpu.stat (usage_usec, user_usec, system_usec in microseconds, one file for both)."""
    v1 = env.parse_cgroup_cpu(1, "162417514343\n", "user 11544\nsystem 4636\n")
    assert v1 == env.CgroupCpu(usage_ns=162_417_514_343, user=11544.0, system=4636.0)
    v2_stat = "usage_usec 2500123\nuser_usec 2000100\nsystem_usec 500023\nnr_periods 10\nnr_throttled 2\n"
    v2 = env.parse_cgroup_cpu(2, v2_stat, v2_stat)
    assert v2 == env.CgroupCpu(usage_ns=2_500_123_000, user=2_000_100.0, system=500_023.0)
    root, mountinfo = v2_root(tmp_path)
    cgroups = env.detect_cgroups(mountinfo=mountinfo)
    group = root / "rabbit-sizing" / "x-p1" / "node-1"
    group.mkdir(parents=True)
    (group / "cpu.stat").write_text(v2_stat)
    assert cgroups.cpu_files("rabbit-sizing/x-p1/node-1") == (group / "cpu.stat", group / "cpu.stat")
    assert cgroups.cpu_usage_ns("rabbit-sizing/x-p1/node-1") == 2_500_123_000
    v1_files = env.detect_cgroups(mountinfo=V1_MOUNTINFO).cpu_files("rabbit-sizing/x-p1/node-1")
    assert v1_files == (Path("/sys/fs/cgroup/cpuacct/rabbit-sizing/x-p1/node-1/cpuacct.usage"),
                        Path("/sys/fs/cgroup/cpuacct/rabbit-sizing/x-p1/node-1/cpuacct.stat"))


def test_a_devices_mounts_are_found_by_its_number_not_its_name():
    """Known answer: the mountinfo lines of block device 7:3 (its third field), wherever and however often it is
    mounted; a mount of 7:30 or of a path that merely contains the device's name is not one of them."""
    mountinfo = (
        "65 44 7:3 / /state/node-1/volumes/data rw,relatime - ext4 /dev/loop3 rw\n"
        "66 44 7:30 / /state/node-2/volumes/data rw,relatime - ext4 /dev/loop30 rw\n"
        "67 60 7:3 / /root/state/node-1/volumes/data rw,relatime - ext4 /dev/loop3 rw\n"
        "68 44 0:5 / /tmp/7:3 rw - tmpfs tmpfs rw\n"
    )
    assert env.mount_points_of(mountinfo, "7:3") == ["/state/node-1/volumes/data", "/root/state/node-1/volumes/data"]
    assert env.mount_points_of(mountinfo, "7:4") == []
