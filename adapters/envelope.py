"""Resource envelopes of the local scale model (sizing/resources/scalemodel.py) on this machine's kernel: cgroups for
CPU and memory (v1 or v2), a loop device with its own filesystem per volume, and block-I/O throttles on each.

Who calls what (the Terraform local module, through `python -m adapters.envelope`):

    node.sh configure   create-node NODE_DIR     cgroups, one loop volume per role, throttles; writes the record
    node.sh start       (sources NODE_DIR/envelope/boot.sh, then run.sh: a node boots outside its CPU quota)
    node.sh destroy     destroy-node NODE_DIR    unmount, clear throttles, detach, delete images, remove cgroups
    cluster.sh init     create-generator CLUSTER_DIR   the load generator's cgroup
    cluster.sh destroy  destroy-cluster CLUSTER_DIR    the generator's cgroup, and any node envelope left behind
    make stop, start-up reclaim STATE_ROOT       whatever a crashed run left under a state root

How each limit is enforced, and what this kernel cannot do (README "The local scale model"):
- CPU: a CFS quota per node (v1 cpu.cfs_quota_us / cfs_period_us, v2 cpu.max). A node *boots* outside its quota at the
  lowest CPU weight (boot.sh), then run.sh sets the quota: RabbitMQ 3.10 spends ~5 CPU-s booting, 25 s at 0.2 cores,
  and a boot time scaled like the steady state would say nothing about a cloud VM's.
- Memory: a hard limit (v1 memory.limit_in_bytes, v2 memory.max) of the scaled RAM plus the version's idle footprint;
  the broker is told the total sizing.resources.scalemodel.node_envelope computes
  (total_memory_available_override_value), so that its high watermark is the idle footprint plus its relative share of
  the scaled RAM.
- Disks: each volume is an ext4 filesystem on a loop device (direct I/O to its sparse image), throttled in IOPS and
  bytes per second, reads and writes. On v1 the throttle is set in the root blkio cgroup, where writeback and fsync
  I/O is charged; on v2 in the node's own cgroup (io.max). The instance's EBS ceiling caps each volume; the sum over a
  node's volumes is not capped: blk-throttle has no limit across devices, there is no device-mapper here, and a loop
  device stacked on a throttled loop device amplifies each fsync about twentyfold (measured), so the bottleneck
  rule checks that sum instead.
Every path this module creates carries the owner (a hash of the Terraform state root) so that a reclaim touches only
what one checkout's runs made.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sizing.resources.disks import LOCAL_DIRS
from sizing.resources.scalemodel import GeneratorEnvelope, NodeEnvelope

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "rabbit-sizing"  # every cgroup of ours lives under <controller>/rabbit-sizing/
RECORD = "envelope.json"  # in a node's or cluster's directory: what was created, for destroy and the sampler
ENV_FILE = "envelope.env"  # ENVELOPE_PROCS and ENVELOPE_BROKER_MEMORY_BYTES, for node.sh and runtime.sh
BOOT_SCRIPT, RUN_SCRIPT = "envelope-boot.sh", "envelope-run.sh"
V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "blkio")
# Weights: a quota caps a node but guarantees it nothing, and under CFS every process outside our groups (Airflow,
# the S3 server, Spark, the test runner) weighs as much as a whole envelope. Running envelopes, and every group above
# them, take the highest weight, so they get what their quotas allow whatever else runs; the quotas, which sum to less
# than the machine (sizing.resources.scalemodel.fit_problems), bound what that leaves the rest. A booting node (no quota
# yet) takes the lowest.
BOOT_SHARES, RUN_SHARES = 2, 262_144  # v1 cpu.shares: the lowest and the highest the kernel takes
BOOT_WEIGHT, RUN_WEIGHT = 1, 10_000  # v2 cpu.weight, likewise


class EnvelopeError(RuntimeError):
    """An envelope could not be created or removed; the message names the step and the path."""


# ---------------------------------------------------------------------------------------------- pure: naming


def owner_of(state_root: Path | str) -> str:
    """The tag of one Terraform state root: its runs' cgroups are <PARENT>/<owner>-<cluster>."""
    return hashlib.sha1(str(Path(state_root).resolve()).encode()).hexdigest()[:8]


def cluster_cgroup(state_root: Path | str, port_base: int) -> str:
    """The cgroup (relative to a hierarchy's root) of one cluster: unique on the machine while it runs, because two
    running clusters never share a port block."""
    return f"{PARENT}/{owner_of(state_root)}-p{port_base}"


# ---------------------------------------------------------------------------------------------- pure: commands


def attach_command(image: Path) -> list[str]:
    # direct I/O: the loop device writes through to its image, so the page cache above the volume's own filesystem
    # is the only one, as on a real block device
    return ["losetup", "--direct-io=on", "--find", "--show", str(image)]


def mkfs_command(device: str) -> list[str]:
    return ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", device]


def mount_command(device: str, target: Path) -> list[str]:
    return ["mount", "-o", "noatime", device, str(target)]


def enter_command(procs_files: Sequence[str], argv: Sequence[str]) -> list[str]:
    """`argv` run inside cgroups: a shell writes its own pid into each cgroup.procs, then execs (same pid), so the
    program and every process it starts are charged to the envelope from their first instruction."""
    script = 'for p in $ENVELOPE_PROCS; do echo $$ >"$p" || exit 2; done; exec "$@"'
    return ["env", f"ENVELOPE_PROCS={' '.join(procs_files)}", "/bin/sh", "-c", script, "envelope", *argv]


def enforcement(cluster_dir: str | Path | None) -> str | None:
    """What the machine enforced of a running local cluster's envelopes, in one line for the run's manifest and the
    `runs` table (None: the cluster has no envelopes: scale model off, or not local)."""
    if not cluster_dir:
        return None
    records = [r for r in (read_record(d) for d in [Path(cluster_dir), *sorted(Path(cluster_dir).glob("node-*"))])
               if r is not None]
    if not records:
        return None
    enforced = sorted({name for r in records for name, on in r.enforced.items() if on})
    missing = sorted({m for r in records for m in r.missing})
    return (f"enforced: {', '.join(enforced) or 'nothing'}" + (f"; missing: {'; '.join(missing)}" if missing else ""))


def generator_command(cluster_dir: str | Path | None, argv: Sequence[str]) -> list[str]:
    """The load generator's command for a local cluster: inside the cluster's generator envelope when it has one
    (the record create-generator wrote), as it is otherwise (scale model off, an existing cluster)."""
    record = read_record(cluster_dir) if cluster_dir else None
    if record is None or record.kind != "generator" or not record.procs:
        return list(argv)
    return enter_command(record.procs, argv)


def writes_script(writes: Iterable[tuple[str, str]]) -> str:
    """A shell script that writes each value into its cgroup file (node.sh sources it)."""
    lines = ["# generated by adapters/envelope.py: cgroup writes of one CPU mode"]
    lines += [f"printf '%s\\n' {shlex.quote(value)} >{shlex.quote(path)}" for path, value in writes]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- cgroup hierarchies


def parse_mountinfo(text: str) -> dict[str, tuple[int, Path]]:
    """controller -> (cgroup version, mount point), from /proc/self/mountinfo. A v2 mount lists no controllers here:
    they are read from its cgroup.controllers (`unified` key)."""
    found: dict[str, tuple[int, Path]] = {}
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        parts, rest = left.split(), right.split()
        if len(parts) < 5 or len(rest) < 3:
            continue
        mount, fstype, options = Path(parts[4]), rest[0], rest[2].split(",")
        if fstype == "cgroup2":
            found.setdefault("unified", (2, mount))
        elif fstype == "cgroup":
            for option in options:
                if option in V1_CONTROLLERS:
                    found[option] = (1, mount)
    return found


def mount_points_of(mountinfo: str, devno: str) -> list[str]:
    """Where one mountinfo (/proc/PID/mountinfo) has a filesystem of block device `devno` (`7:3`) mounted."""
    points = []
    for line in mountinfo.splitlines():
        parts = line.partition(" - ")[0].split()
        if len(parts) >= 5 and parts[2] == devno:
            points.append(parts[4])
    return points


@dataclass(frozen=True)
class Cgroups:
    """Where our cgroups go on this machine: v1 (one mount per controller) or v2 (one unified tree)."""

    version: int
    mounts: Mapping[str, Path]  # v1: controller -> mount; v2: {"unified": mount}
    available: frozenset[str]  # the controllers we can use: cpu, memory, and io (v1 blkio / v2 io)

    def dirs(self, relative: str) -> dict[str, Path]:
        """The group's directory per hierarchy we write (v1: cpu, cpuacct, memory; v2: one)."""
        if self.version == 2:
            return {"unified": self.mounts["unified"] / relative}
        return {c: self.mounts[c] / relative for c in ("cpu", "cpuacct", "memory") if c in self.mounts}

    def procs_files(self, relative: str) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs(relative).values()]

    def cpu_writes(self, relative: str, quota_us: int | None, period_us: int, boot: bool) -> list[tuple[str, str]]:
        """CPU quota (None: unlimited) and weight of a group, as (file, value) writes."""
        if "cpu" not in self.available:
            return []
        if self.version == 2:
            d = self.mounts["unified"] / relative
            quota = "max" if quota_us is None else str(quota_us)
            return [(str(d / "cpu.max"), f"{quota} {period_us}"),
                    (str(d / "cpu.weight"), str(BOOT_WEIGHT if boot else RUN_WEIGHT))]
        d = self.mounts["cpu"] / relative
        return [(str(d / "cpu.cfs_period_us"), str(period_us)),
                (str(d / "cpu.cfs_quota_us"), str(-1 if quota_us is None else quota_us)),
                (str(d / "cpu.shares"), str(BOOT_SHARES if boot else RUN_SHARES))]

    def memory_writes(self, relative: str, limit_bytes: int) -> list[tuple[str, str]]:
        if "memory" not in self.available:
            return []
        if self.version == 2:
            return [(str(self.mounts["unified"] / relative / "memory.max"), str(limit_bytes))]
        return [(str(self.mounts["memory"] / relative / "memory.limit_in_bytes"), str(limit_bytes))]

    def io_writes(self, relative: str, devno: str, iops: int | None, bps: int | None) -> list[tuple[str, str]]:
        """Throttles of one device (0 / max: none). v1: the root blkio group's rules, where writeback is charged."""
        if "io" not in self.available:
            return []
        if self.version == 2:
            def v(x: int | None) -> str:
                return "max" if x is None else str(x)
            return [(str(self.mounts["unified"] / relative / "io.max"),
                     f"{devno} riops={v(iops)} wiops={v(iops)} rbps={v(bps)} wbps={v(bps)}")]
        root = self.mounts["blkio"]
        return [(str(root / f"blkio.throttle.{what}_{unit}_device"), f"{devno} {value or 0}")
                for what in ("read", "write") for unit, value in (("iops", iops), ("bps", bps))]

    def clear_io_writes(self, relative: str, devno: str) -> list[tuple[str, str]]:
        return self.io_writes(relative, devno, None, None)

    def cpu_files(self, relative: str) -> tuple[Path, Path]:
        """The group's CPU time files: (exact total, user/system split); v2 has both in cpu.stat."""
        if self.version == 2:
            stat = self.mounts["unified"] / relative / "cpu.stat"
            return stat, stat
        d = self.mounts["cpuacct"] / relative
        return d / "cpuacct.usage", d / "cpuacct.stat"

    def cpu_usage(self, relative: str) -> CgroupCpu:
        usage, split = self.cpu_files(relative)
        return parse_cgroup_cpu(self.version, usage.read_text(), split.read_text())

    def cpu_usage_ns(self, relative: str) -> int:
        """The group's CPU time since it was made (the OS's own counter: v1 cpuacct.usage, v2 cpu.stat usage_usec)."""
        return self.cpu_usage(relative).usage_ns


@dataclass(frozen=True)
class CgroupCpu:
    """A cgroup's CPU time since it was made, as the kernel counts it for every task in it.

    `usage_ns` is exact: the scheduler's runtime of the group's tasks, in ns (v1 cpuacct.usage; v2 cpu.stat usage_usec,
    exact to the microsecond), the time a CFS quota is charged against. `user` and `system` split it, in units only
    their ratio means: v1 cpuacct.stat's USER_HZ ticks, v2 cpu.stat's user_usec / system_usec; either way the kernel
    apportions them by what each scheduler tick found running, so their proportion is an estimate, not exact."""

    usage_ns: int
    user: float
    system: float


def parse_cgroup_cpu(version: int, usage_text: str, stat_text: str) -> CgroupCpu:
    """The texts of Cgroups.cpu_files (the same text twice on v2)."""
    stat = {key: int(value) for key, value in (line.split() for line in stat_text.splitlines() if line.strip())}
    if version == 2:
        return CgroupCpu(stat["usage_usec"] * 1000, float(stat["user_usec"]), float(stat["system_usec"]))
    return CgroupCpu(int(usage_text), float(stat["user"]), float(stat["system"]))


def detect_cgroups(root: Path = CGROUP_ROOT, mountinfo: str | None = None) -> Cgroups | None:
    """The hierarchies to use: v1 where cpu and memory are v1 controllers (as on this machine), else v2 where its root
    offers them; None when neither has cpu or memory."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return None
    mounts = parse_mountinfo(mountinfo)
    v1 = {c: path for c, (version, path) in mounts.items() if version == 1}
    if "cpu" in v1 or "memory" in v1:
        available = {c for c in ("cpu", "memory") if c in v1} | ({"io"} if "blkio" in v1 else set())
        return Cgroups(1, v1, frozenset(available))
    if "unified" in mounts:
        unified = mounts["unified"][1]
        try:
            offered = set((unified / "cgroup.controllers").read_text().split())
        except OSError:
            return None
        available = offered & {"cpu", "memory", "io"}
        if available & {"cpu", "memory"}:
            return Cgroups(2, {"unified": unified}, frozenset(available))
    return None


# ---------------------------------------------------------------------------------------------- what can be enforced


@dataclass(frozen=True)
class Support:
    """What this machine lets the scale model enforce, and why not where it cannot."""

    cgroups: Cgroups | None
    loops: bool
    missing: tuple[str, ...]

    @property
    def enforced(self) -> dict[str, bool]:
        available = self.cgroups.available if self.cgroups else frozenset()
        return {"cpu": "cpu" in available, "memory": "memory" in available,
                "disk": self.loops and "io" in available}

    def summary(self) -> str:
        """One line: what is enforced, what is missing, and what the run does instead."""
        on = [name for name, ok in self.enforced.items() if ok]
        off = [name for name, ok in self.enforced.items() if not ok]
        if not off:
            return "scale model enforced: cpu, memory and disk envelopes"
        instead = {"cpu": "nodes share the machine's cores", "memory": "nodes share the machine's memory",
                   "disk": "volumes are directories of one filesystem"}
        return (f"scale model {'partly ' if on else 'not '}enforced ({'; '.join(self.missing)}): "
                f"{', '.join(instead[name] for name in off)}; the run records this and its tables say so")


def detect_support(root: Path = CGROUP_ROOT, mountinfo: str | None = None, euid: int | None = None) -> Support:
    missing = []
    if (os.geteuid() if euid is None else euid) != 0:
        return Support(None, False, ("not root: cgroups and loop devices need root (run the set-up as root, or "
                                     "with sudo)",))
    cgroups = detect_cgroups(root, mountinfo)
    if cgroups is None:
        missing.append("no cgroup cpu or memory controller (neither v1 nor v2)")
    else:
        missing += [f"no cgroup {c} controller" for c in ("cpu", "memory", "io") if c not in cgroups.available]
    loops = Path("/dev/loop-control").exists() and bool(shutil.which("losetup")) and bool(shutil.which("mkfs.ext4"))
    if not loops:
        missing.append("no loop devices (/dev/loop-control, losetup, mkfs.ext4)")
    return Support(cgroups, loops, tuple(missing))


# ---------------------------------------------------------------------------------------------- I/O helpers


def _run(argv: Sequence[str], what: str) -> str:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EnvelopeError(f"{what}: {' '.join(argv)}: {err}") from err
    if proc.returncode != 0:
        raise EnvelopeError(f"{what}: {' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def _write(path: str, value: str) -> None:
    try:
        Path(path).write_text(value + "\n")
    except OSError as err:
        raise EnvelopeError(f"cannot write {value!r} to {path}: {err}") from err


def _apply(writes: Iterable[tuple[str, str]]) -> None:
    for path, value in writes:
        _write(path, value)


def _make_groups(cgroups: Cgroups, relative: str) -> None:
    if cgroups.version == 2:  # every level must pass our controllers down (a group's own cgroup.subtree_control)
        unified = cgroups.mounts["unified"]
        enable = " ".join(f"+{c}" for c in sorted(cgroups.available))
        parts = Path(relative).parts
        for depth in range(len(parts)):
            level = unified.joinpath(*parts[:depth])
            level.joinpath(parts[depth]).mkdir(exist_ok=True)
            with contextlib.suppress(OSError):  # already enabled, or not delegable here: then limits fail loudly
                (level / "cgroup.subtree_control").write_text(enable)
            if depth < len(parts) - 1 and "cpu" in cgroups.available:  # the ancestors weigh as the envelopes do
                _write(str(level / parts[depth] / "cpu.weight"), str(RUN_WEIGHT))
        return
    for d in cgroups.dirs(relative).values():
        d.mkdir(parents=True, exist_ok=True)
    if "cpu" in cgroups.available:  # every group above the envelope, up to PARENT: a weight counts among siblings only
        for ancestor in list(Path(relative).parents)[:-1]:
            _write(str(cgroups.mounts["cpu"] / ancestor / "cpu.shares"), str(RUN_SHARES))


def _procs(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove_groups(cgroups: Cgroups, relative: str) -> list[int]:
    """Remove a group (its children first); a process still inside is killed first (a VM left behind by a crash).
    Returns the pids it had to kill."""
    killed: list[int] = []
    for d in cgroups.dirs(relative).values():
        if not d.exists():
            continue
        for child in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            killed += _remove_dir(child)
        killed += _remove_dir(d)
    return sorted(set(killed))


def _remove_dir(d: Path) -> list[int]:
    killed = []
    for _attempt in range(50):
        pids = _procs(d)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed += pids
        try:
            d.rmdir()
            return killed
        except FileNotFoundError:
            return killed
        except OSError as err:
            if err.errno != errno.EBUSY:
                raise EnvelopeError(f"cannot remove cgroup {d}: {err}") from err
            time.sleep(0.1)
    raise EnvelopeError(f"cgroup {d} still busy after killing {sorted(set(killed))}")


def devno_of(device: str) -> str:
    """`7:3` for /dev/loop3 (the key blkio and io.max take)."""
    return Path(f"/sys/class/block/{Path(device).name}/dev").read_text().strip()


def mounted_at(target: Path) -> bool:
    target = str(target.resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def unmount(target: Path) -> None:
    """umount, retried while busy (a loop device just detached below it lets go asynchronously), lazily at last."""
    for _attempt in range(50):
        if not mounted_at(target):
            return
        proc = subprocess.run(["umount", str(target)], capture_output=True, text=True)
        if proc.returncode == 0:
            return
        time.sleep(0.1)
    _run(["umount", "--lazy", str(target)], f"unmount {target}")


DETACH_WITHIN_S = 60.0


def namespace_copies(devno: str) -> dict[int, list[str]]:
    """Copies of a device's filesystem in other mount namespaces: {a pid in that namespace: its mount points}.

    A process that unshares its mount namespace while a volume is mounted (a 4.0 node's runtime.sh, `ip netns exec`)
    holds a copy of that mount which the host's umount does not reach (propagation is private): the filesystem, and
    the loop device under it, stay open until the last process of that namespace exits."""
    own = os.readlink("/proc/self/ns/mnt")
    copies: dict[str, tuple[int, list[str]]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            namespace = os.readlink(proc / "ns" / "mnt")
            if namespace == own or namespace in copies:
                continue
            points = mount_points_of((proc / "mountinfo").read_text(), devno)
        except OSError:  # gone, or a kernel thread
            continue
        if points:
            copies[namespace] = (int(proc.name), points)
    return dict(copies.values())


def release_copies(devno: str) -> None:
    """Lazily unmount every other namespace's copy of the device's filesystem (see namespace_copies)."""
    for pid, points in namespace_copies(devno).items():
        for point in sorted(points, key=len, reverse=True):
            with contextlib.suppress(EnvelopeError):  # the namespace may have gone meanwhile
                _run(["nsenter", f"--mount=/proc/{pid}/ns/mnt", "umount", "--lazy", point], f"release {point}")


def _holders(devno: str) -> str:
    copies = namespace_copies(devno)
    if not copies:
        return "no other mount namespace holds it (an open file, or writeback)"
    return "held by " + ", ".join(f"pid {pid} ({_comm(pid)}) at {', '.join(points)}" for pid, points in copies.items())


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "gone"


def detach(device: str, image: str | None = None) -> None:
    """losetup --detach, then wait until the kernel has let the device go (it does so asynchronously).

    The kernel clears the device when its last opener closes it: at once on a quiet machine, seconds later on a busy
    one (a lazily unmounted filesystem above it lets go only then; CI saw 5 s beside another test), and never while
    another mount namespace holds a copy of its filesystem: those copies are released here."""
    name = Path(device).name
    backing = Path(f"/sys/class/block/{name}/loop/backing_file")
    try:
        current = backing.read_text().strip()
        devno = devno_of(device)
    except OSError:
        return  # already detached
    if image is not None and current.removesuffix(" (deleted)") != image:
        return  # the device was reused by someone else since: not ours any more
    with contextlib.suppress(EnvelopeError):
        _run(["losetup", "--detach", device], f"detach {device}")
    deadline, next_release = time.monotonic() + DETACH_WITHIN_S, time.monotonic() + 1.0
    while time.monotonic() < deadline:
        if not backing.exists():
            return
        if time.monotonic() >= next_release:  # a copy made while we waited is released too
            release_copies(devno)
            next_release = time.monotonic() + 1.0
        time.sleep(0.05)
    raise EnvelopeError(f"{device} still attached to {current} {DETACH_WITHIN_S:g} s after losetup --detach: "
                        f"{_holders(devno)}")


# ---------------------------------------------------------------------------------------------- records


@dataclass
class VolumeRecord:
    role: str
    image: str
    mount: str
    device: str | None = None
    devno: str | None = None


@dataclass
class EnvelopeRecord:
    """What create-node / create-generator made, as written to RECORD (destroy, the sampler and the runs read it)."""

    kind: str  # node | generator
    cgroup: str  # relative to each hierarchy's root
    cgroup_version: int | None
    enforced: dict[str, bool]
    missing: list[str]
    envelope: dict[str, Any]
    volumes: list[VolumeRecord] = field(default_factory=list)
    procs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "cgroup": self.cgroup, "cgroup_version": self.cgroup_version,
                "enforced": self.enforced, "missing": self.missing, "envelope": self.envelope,
                "volumes": [vars(v) for v in self.volumes], "procs": self.procs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvelopeRecord:
        return cls(kind=data["kind"], cgroup=data["cgroup"], cgroup_version=data.get("cgroup_version"),
                   enforced=dict(data.get("enforced") or {}), missing=list(data.get("missing") or ()),
                   envelope=dict(data.get("envelope") or {}),
                   volumes=[VolumeRecord(**v) for v in data.get("volumes") or ()], procs=list(data.get("procs") or ()))

    def save(self, directory: Path) -> None:
        tmp = directory / f"{RECORD}.tmp"
        tmp.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True))
        tmp.replace(directory / RECORD)


def read_record(directory: Path | str) -> EnvelopeRecord | None:
    try:
        return EnvelopeRecord.from_dict(json.loads((Path(directory) / RECORD).read_text()))
    except (OSError, ValueError, KeyError):
        return None


# ---------------------------------------------------------------------------------------------- nodes


def create_node(node_dir: Path, envelope: NodeEnvelope, cgroup: str, support: Support | None = None) -> EnvelopeRecord:
    """A node's cgroups (CPU quota written to the run script, not yet applied: node.sh start boots first), its memory
    limit, and each volume of its layout mounted where the node keeps that role. Idempotent per node_dir: a record
    left by an earlier create is destroyed first. Every step written to the record as it is made, so that destroy
    (and a reclaim after a crash) finds it all."""
    support = support or detect_support()
    old = read_record(node_dir)
    if old is not None:
        destroy(node_dir, old, support.cgroups)
    record = EnvelopeRecord("node", cgroup, support.cgroups.version if support.cgroups else None,
                            support.enforced, list(support.missing), envelope.to_dict())
    cgroups, enforced = support.cgroups, support.enforced
    if cgroups is not None and (enforced["cpu"] or enforced["memory"]):
        _make_groups(cgroups, cgroup)
        record.procs = cgroups.procs_files(cgroup)
        record.save(node_dir)
        _apply(cgroups.memory_writes(cgroup, envelope.memory_bytes))
    boot, run = [], []
    if cgroups is not None and enforced["cpu"]:
        boot = cgroups.cpu_writes(cgroup, None, envelope.cpu_period_us, boot=True)
        run = cgroups.cpu_writes(cgroup, envelope.cpu_quota_us, envelope.cpu_period_us, boot=False)
        _apply(run)  # until the node boots, the group holds nothing: the run mode is its resting state
    (node_dir / BOOT_SCRIPT).write_text(writes_script(boot))
    (node_dir / RUN_SCRIPT).write_text(writes_script(run))
    if enforced["disk"] and cgroups is not None:
        volume_dir = node_dir / "volumes"
        volume_dir.mkdir(exist_ok=True)
        for volume in envelope.volumes:
            mount = node_dir / LOCAL_DIRS[volume.role]
            item = VolumeRecord(volume.role, str(volume_dir / f"{volume.role}.img"), str(mount))
            record.volumes.append(item)
            _create_volume(item, volume.image_mib, cgroups, cgroup, volume.iops, volume.bps, record, node_dir)
        if "logs" not in {v.role for v in envelope.volumes}:
            _logs_on_data_volume(node_dir)
    record.save(node_dir)
    _write_env(node_dir, record, envelope.broker_memory_bytes or envelope.memory_bytes)
    return record


def _create_volume(item: VolumeRecord, image_mib: int, cgroups: Cgroups, cgroup: str, iops: int | None,
                   bps: int | None, record: EnvelopeRecord, node_dir: Path) -> None:
    image, mount = Path(item.image), Path(item.mount)
    with open(image, "wb") as f:  # sparse: costs no disk until written
        f.truncate(image_mib * 1024 * 1024)
    item.device = _run(attach_command(image), f"attach {image}")
    item.devno = devno_of(item.device)
    record.save(node_dir)  # from here on, destroy knows the device
    _apply(cgroups.io_writes(cgroup, item.devno, iops, bps))  # before anything is written to it: mkfs is throttled too
    _run(mkfs_command(item.device), f"format {item.device}")
    mount.mkdir(parents=True, exist_ok=True)
    _run(mount_command(item.device, mount), f"mount {item.device}")


def _logs_on_data_volume(node_dir: Path) -> None:
    """A layout without a logs volume keeps the logs on the data volume (sizing/resources/disks.py): node_dir/log points
    there."""
    logs = node_dir / LOCAL_DIRS["logs"]
    target = node_dir / LOCAL_DIRS["data"] / "log"
    target.mkdir(exist_ok=True)
    if logs.is_symlink():
        return
    if logs.is_dir():
        for item in logs.iterdir():
            shutil.move(str(item), target / item.name)
        logs.rmdir()
    logs.symlink_to(target)


def _write_env(directory: Path, record: EnvelopeRecord, broker_memory_bytes: int | None) -> None:
    lines = [f"ENVELOPE_PROCS={shlex.quote(' '.join(record.procs))}"]
    if broker_memory_bytes is not None and record.enforced.get("memory"):
        lines.append(f"ENVELOPE_BROKER_MEMORY_BYTES={broker_memory_bytes}")
    (directory / ENV_FILE).write_text("\n".join(lines) + "\n")


def create_generator(cluster_dir: Path, envelope: GeneratorEnvelope, cgroup: str,
                     support: Support | None = None) -> EnvelopeRecord:
    """The load generator's cgroup of a cluster: its CPU quota and memory limit, applied at once (it has no boot)."""
    support = support or detect_support()
    relative = f"{cgroup}/generator"
    record = EnvelopeRecord("generator", relative, support.cgroups.version if support.cgroups else None,
                            {k: v for k, v in support.enforced.items() if k != "disk"}, list(support.missing),
                            envelope.to_dict())
    cgroups = support.cgroups
    if cgroups is not None and (record.enforced["cpu"] or record.enforced["memory"]):
        _make_groups(cgroups, relative)
        record.procs = cgroups.procs_files(relative)
        record.save(cluster_dir)
        _apply(cgroups.cpu_writes(relative, envelope.cpu_quota_us, envelope.cpu_period_us, boot=False))
        _apply(cgroups.memory_writes(relative, envelope.memory_bytes))
    record.save(cluster_dir)
    _write_env(cluster_dir, record, None)
    return record


# ---------------------------------------------------------------------------------------------- teardown


def destroy(directory: Path, record: EnvelopeRecord | None = None, cgroups: Cgroups | None = None) -> list[str]:
    """Undo what the record in `directory` says was made: remove the cgroups, killing what is still inside (a VM left
    by a crash would hold its volumes' files open), then per volume clear its throttles, unmount, detach and delete
    its image. Each step tolerates what is already gone (a destroy after a half-done create, a second destroy).
    Returns what it did, one line each."""
    record = record or read_record(directory)
    if record is None:
        return []
    cgroups = cgroups if cgroups is not None else detect_cgroups()
    done = []
    if cgroups is not None and record.cgroup:
        relative = record.cgroup
        killed = remove_groups(cgroups, relative)
        done.append(f"removed cgroup {relative}" + (f" (killed {killed})" if killed else ""))
    for item in reversed(record.volumes):
        mount = Path(item.mount)
        # Throttles off first: unmounting writes the volume's dirty pages back, and through the volume's own IOPS and
        # bandwidth a large backlog's took minutes (CI: a loop device still attached 60 s after its detach).
        if item.device and item.devno and cgroups is not None:
            with contextlib.suppress(EnvelopeError):
                _apply(cgroups.clear_io_writes(record.cgroup, item.devno))
        if mount.exists() and mounted_at(mount):
            unmount(mount)
            done.append(f"unmounted {mount}")
        if item.device:
            detach(item.device, item.image)
            done.append(f"detached {item.device}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(item.image)
            done.append(f"deleted {item.image}")
    with contextlib.suppress(FileNotFoundError):
        (Path(directory) / RECORD).unlink()
    return done


def destroy_cluster(cluster_dir: Path) -> list[str]:
    """Any node envelope a failed node destroy left, the generator's envelope, then the cluster's own cgroup."""
    record, cgroups = read_record(cluster_dir), detect_cgroups()
    done = []
    for node_dir in sorted(cluster_dir.glob("node-*")):
        done += destroy(node_dir, cgroups=cgroups)
    done += destroy(cluster_dir, record, cgroups)
    if record is not None and cgroups is not None:
        cluster_group = str(PurePosixPath(record.cgroup).parent)
        remove_groups(cgroups, cluster_group)
        done.append(f"removed cgroup {cluster_group}")
        _remove_parent_if_empty(cgroups)
    return done


def _remove_parent_if_empty(cgroups: Cgroups) -> None:
    """PARENT itself goes with the last cluster (another cluster's group still in it keeps it: EBUSY)."""
    for d in cgroups.dirs(PARENT).values():
        with contextlib.suppress(OSError):
            d.rmdir()


# ---------------------------------------------------------------------------------------------- reclaim


@dataclass
class Leftovers:
    mounts: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.mounts or self.loops or self.cgroups)

    def describe(self) -> str:
        return (f"{len(self.cgroups)} cgroup(s), {len(self.mounts)} mount(s), {len(self.loops)} loop device(s)")


def leftovers(state_root: Path | str, cgroups: Cgroups | None = None) -> Leftovers:
    """Everything of ours that still exists for a state root: mounts below it, loop devices whose image is below it,
    cgroups tagged with its owner."""
    root = str(Path(state_root).resolve())
    found = Leftovers()
    with open("/proc/self/mountinfo") as f:
        found.mounts = sorted({line.split()[4] for line in f if line.split()[4].startswith(root + "/")})
    for backing in Path("/sys/class/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if backing.read_text().strip().removesuffix(" (deleted)").startswith(root + "/"):
                found.loops.append(f"/dev/{backing.parent.parent.name}")
    cgroups = cgroups if cgroups is not None else detect_cgroups()
    if cgroups is not None:
        prefix = f"{owner_of(state_root)}-"
        for base in {d.parent for d in cgroups.dirs(f"{PARENT}/x").values()}:
            if base.is_dir():
                found.cgroups += [f"{PARENT}/{d.name}" for d in base.iterdir()
                                  if d.is_dir() and d.name.startswith(prefix)]
        found.cgroups = sorted(set(found.cgroups))
    found.loops.sort()
    return found


def reclaim(state_root: Path | str) -> list[str]:
    """Remove what crashed runs left under a state root (make stop, the demo's start-up): every envelope record found
    there is destroyed, then whatever no record names (a crash between two steps of a create) is swept."""
    root = Path(state_root)
    done: list[str] = []
    cgroups = detect_cgroups()
    if root.is_dir():
        for record_file in sorted(root.rglob(RECORD), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(EnvelopeError):
                done += destroy(record_file.parent, cgroups=cgroups)
    rest = leftovers(root, cgroups)
    for mount in sorted(rest.mounts, key=len, reverse=True):
        unmount(Path(mount))
        done.append(f"unmounted {mount}")
    for device in rest.loops:
        detach(device)
        done.append(f"detached {device}")
    if cgroups is not None:
        for relative in rest.cgroups:
            killed = remove_groups(cgroups, relative)
            done.append(f"removed cgroup {relative}" + (f" (killed {killed})" if killed else ""))
        _remove_parent_if_empty(cgroups)
    return done


# ---------------------------------------------------------------------------------------------- the machine


def machine() -> Any:
    """This machine's cores (its CPU quota if this process runs under one) and memory."""
    from sizing.resources.scalemodel import Machine

    cores = float(os.cpu_count() or 1)
    with contextlib.suppress(OSError):
        cores = float(len(os.sched_getaffinity(0)))
    memory = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    return Machine(cores, memory)


# ---------------------------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """python -m adapters.envelope create-node NODE_DIR | destroy-node NODE_DIR | create-generator CLUSTER_DIR |
    destroy-cluster CLUSTER_DIR | reclaim STATE_ROOT. create-* read the envelope from $NODE_ENVELOPE (JSON: `node`,
    `generator`, `cgroup`; sizing.resources.scalemodel and adapters.terraform.local_stack_variables); create-node
    prints the node's Erlang VM flags (NodeEnvelope.erl_args) on stdout."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print(main.__doc__, file=sys.stderr)
        return 64
    action, directory = args[0], Path(args[1])
    try:
        if action in ("create-node", "create-generator"):
            spec = json.loads(os.environ["NODE_ENVELOPE"])
            support = detect_support()
            if action == "create-node":
                node = NodeEnvelope.from_dict(spec["node"])
                create_node(directory, node, f"{spec['cgroup']}/{directory.name}", support)
                print(node.erl_args)  # node.sh adds them to the VM's arguments
            else:
                create_generator(directory, GeneratorEnvelope.from_dict(spec["generator"]), spec["cgroup"], support)
                print(f"[envelope] {support.summary()}", file=sys.stderr)
        elif action in ("destroy-node", "destroy-cluster"):
            done = destroy(directory) if action == "destroy-node" else destroy_cluster(directory)
            for line in done:
                print(f"[envelope] {line}", file=sys.stderr)
        elif action == "reclaim":
            for line in reclaim(directory):
                print(f"[envelope] {line}", file=sys.stderr)
        else:
            print(main.__doc__, file=sys.stderr)
            return 64
    except (EnvelopeError, KeyError, ValueError) as err:
        print(f"[envelope] {action} {directory}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
