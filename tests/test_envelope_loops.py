"""A volume's loop device is let go although another mount namespace holds a copy of its filesystem (CI,
2026-11-29: a node's two loop devices still attached 60 s after losetup --detach, twice in the same module teardown).

A process that unshares its mount namespace while a volume is mounted (a 4.0 node's runtime.sh, `ip netns exec`)
keeps a copy of that mount; propagation is private here, so the host's umount does not reach it and the kernel keeps
the device open until that namespace's last process exits. Counters: the OS's own, /sys/class/block/<loop>/loop
(present while attached) and /proc/<pid>/mountinfo of the holder. Needs root and loop devices; no cluster.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from adapters import envelope as env

RUNTIME = Path(__file__).resolve().parents[1] / "terraform/modules/local_cluster/scripts/runtime.sh"


@pytest.fixture
def mounted_volume(tmp_path):
    """A 64 MiB ext4 volume on a loop device, mounted; detached, unmounted and deleted afterwards whatever happens."""
    image, mount = tmp_path / "vol.img", tmp_path / "vol"
    image.write_bytes(b"")
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    device = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True,
                            text=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", device], check=True)
        mount.mkdir()
        subprocess.run(["mount", device, str(mount)], check=True)
        yield device, mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], capture_output=True)
        subprocess.run(["losetup", "--detach", device], capture_output=True)


def _holder(argv: list[str]) -> subprocess.Popen:
    holder = subprocess.Popen(argv)
    ns = Path(f"/proc/{holder.pid}/ns/mnt")
    for _ in range(100):  # until it has exec'd sleep in its own namespace
        if ns.exists() and Path(f"/proc/{holder.pid}/comm").read_text().strip() == "sleep":
            break
        subprocess.run(["sleep", "0.05"])
    return holder


def test_a_copy_in_another_namespace_is_released_and_the_device_detached(mounted_volume):
    device, mount = mounted_volume
    devno = env.devno_of(device)
    holder = _holder(["unshare", "--mount", "--propagation", "private", "sleep", "120"])
    try:
        assert env.namespace_copies(devno) == {holder.pid: [str(mount)]}  # the copy exists (else this proves nothing)
        env.unmount(mount)
        env.detach(device, str(mount.parent / "vol.img"))
        assert not Path(f"/sys/class/block/{Path(device).name}/loop").exists()
        assert env.mount_points_of(Path(f"/proc/{holder.pid}/mountinfo").read_text(), devno) == []
        assert holder.poll() is None  # released without killing the holder
    finally:
        holder.kill()
        holder.wait()


def test_the_chroot_runtimes_namespace_keeps_no_other_clusters_volume(mounted_volume, tmp_path):
    """runtime.sh's own namespace set-up, run up to its chroot: loop-backed mounts outside its cluster and root are
    dropped from the copy before the node starts, so the node never pins another cluster's volume."""
    device, mount = mounted_volume
    script = RUNTIME.read_text()
    setup = script[script.index("exec unshare"):script.index("    mount -t proc")]
    setup += "    exec sleep 120' runtime-chroot /nonexistent-root /nonexistent-cluster"
    holder = _holder(["sh", "-c", setup])  # exec all the way down: the pid is sleep's, in the new namespace
    try:
        assert Path(f"/proc/{holder.pid}/comm").read_text().strip() == "sleep"
        assert os.readlink(f"/proc/{holder.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        assert env.mounted_at(mount)  # still mounted on the host: only the namespace's copy went
        assert env.namespace_copies(env.devno_of(device)) == {}
    finally:
        holder.kill()
        holder.wait()


def test_destroy_kills_what_a_crash_left_in_the_envelope_before_it_unmounts(mounted_volume, tmp_path):
    """A process left in a node's cgroup (a VM after a crash) with its working directory on the node's volume: destroy
    kills it first, so the volume unmounts at once and its device detaches, instead of a lazy unmount that keeps the
    device open until something else kills the process. Counters: the kernel's (/proc/<pid>, the loop device's
    /sys/class/block entry, the cgroup directories)."""
    device, mount = mounted_volume
    cgroups = env.detect_cgroups()
    assert cgroups is not None, "this machine kind has cgroups"
    relative = f"{env.PARENT}/{env.owner_of(tmp_path)}-p0/node-1"
    env._make_groups(cgroups, relative)
    holder = subprocess.Popen(["sleep", "120"], cwd=mount)
    try:
        for procs in cgroups.procs_files(relative):
            Path(procs).write_text(f"{holder.pid}\n")
        record = env.EnvelopeRecord("node", relative, cgroups.version, {}, [], {}, volumes=[
            env.VolumeRecord("data", str(mount.parent / "vol.img"), str(mount), device, env.devno_of(device))])
        done = env.destroy(tmp_path, record, cgroups)
        assert holder.wait(timeout=10) == -9  # killed by destroy
        assert done[0].startswith(f"removed cgroup {relative} (killed [{holder.pid}])"), done
        assert f"unmounted {mount}" in done and f"detached {device}" in done
        assert not env.mounted_at(mount) and not Path(f"/sys/class/block/{Path(device).name}/loop").exists()
        assert not any(d.exists() for d in cgroups.dirs(relative).values())
    finally:
        holder.kill()
        holder.wait()
        env.remove_groups(cgroups, str(PurePosixPath(relative).parent))
        env._remove_parent_if_empty(cgroups)
