"""The 4.0 runtime's root filesystem: how scripts/rootfs.sh builds and caches it, with a stand-in debootstrap (the
real build, 41 s from Debian's archive, runs once per CI run in the cluster tests that ask for 4.0)."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from adapters.rootfs import ROOTFS_SCRIPT, root_rabbitmq_version
from sizing.campaign import deep_merge, parse_campaign, read_campaign_yaml
from sizing.planning.admission import local_version_problems

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="rootfs.sh builds as root only")

# Counts its runs, takes a second (so two builds overlap), lays out what the script reads from a real root. Reads
# its arguments as debootstrap does (options, then SUITE TARGET [MIRROR]) and refuses a relative target: an earlier
# stand-in that took the suite for the target laid its root out in the checkout (the stray `trixie/`, issue 47).
FAKE_DEBOOTSTRAP = """#!/bin/sh
echo run >>"$RUNS"
sleep 1
[ -z "${FAIL:-}" ] || { echo "E: Couldn't download packages" >&2; exit 1; }
while [ "${1#--}" != "$1" ]; do shift; done
target=$2
case $target in /*) ;; *) echo "E: target $target is not an absolute path" >&2; exit 2 ;; esac
mkdir -p "$target/usr/lib/rabbitmq/lib/rabbitmq_server-4.0.5" "$target/tmp" "$target/proc"
mkdir -p "$target/var/cache/apt/archives"
touch "$target/var/cache/apt/archives/rabbitmq-server.deb"
"""


@pytest.fixture
def fake_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "debootstrap").write_text(FAKE_DEBOOTSTRAP)
    (bin_dir / "debootstrap").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ROOTFS_CACHE": str(tmp_path / "cache"),
            "RUNS": str(tmp_path / "runs")}


def rootfs(env: dict[str, str], action: str = "build") -> subprocess.CompletedProcess[str]:
    # in the test's own directory (fake_env's): whatever a build writes lands there, never in the checkout
    return subprocess.run(["sh", str(ROOTFS_SCRIPT), action], env=env, capture_output=True, text=True, timeout=60,
                          cwd=Path(env["RUNS"]).parent)


def test_a_build_writes_only_under_its_cache(fake_env, tmp_path):
    assert rootfs(fake_env).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "cache", "runs"]


def test_a_relative_cache_is_refused_before_anything_is_written(fake_env, tmp_path):
    result = rootfs({**fake_env, "ROOTFS_CACHE": "cache"})
    assert result.returncode == 2 and "ROOTFS_CACHE" in result.stderr and "absolute" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_concurrent_builds_make_one_root_and_leave_nothing_half_built(fake_env, tmp_path):
    assert rootfs(fake_env, "path").returncode == 1  # not built: `path` builds nothing
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: rootfs(fake_env), range(2)))
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    (root,) = {r.stdout.strip() for r in results}
    assert Path(tmp_path / "runs").read_text().split() == ["run"]  # the second waited on the lock, then found it
    assert root_rabbitmq_version(Path(root)) == "4.0.5"
    assert "/tmp" in (Path(root) / ".rabbit-sizing-dirs").read_text().split()
    assert list(Path(root, "var/cache/apt/archives").iterdir()) == []  # downloaded .debs dropped
    assert [p.name for p in (tmp_path / "cache").iterdir() if ".build." in p.name] == []
    assert rootfs(fake_env, "path").stdout.strip() == root
    assert rootfs(fake_env).stdout.strip() == root and len(Path(tmp_path / "runs").read_text().split()) == 1


def test_a_failed_build_says_why_and_leaves_no_root(fake_env, tmp_path):
    result = rootfs({**fake_env, "FAIL": "1"})
    assert result.returncode == 1
    assert "Couldn't download packages" in result.stderr and "debootstrap of trixie failed" in result.stderr
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.is_dir()] == []
    assert rootfs(fake_env, "path").returncode == 1


def test_a_machine_that_cannot_run_the_root_gets_one_line_naming_what_is_missing():
    quick = read_campaign_yaml(Path(__file__).resolve().parents[1] / "campaigns" / "local-quick.yaml")
    campaign = parse_campaign(deep_merge(quick, {"clusters": {"list": [
        {"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2", "rabbitmq_version": "4.0"}]}}), source="test")
    (problem,) = local_version_problems(campaign, "3.10.8", chroot_missing="the RabbitMQ 4.0 runtime needs "
                                                                          "debootstrap (apt-get install debootstrap)")
    assert problem.reason.endswith("asks for RabbitMQ 4.0: the RabbitMQ 4.0 runtime needs debootstrap "
                                    "(apt-get install debootstrap)")
    assert local_version_problems(campaign, "3.10.8") == []  # 4.0 runs here (the chroot runtime)
