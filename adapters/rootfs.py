"""The chroot runtime's root filesystem (edge module): Debian 13's rabbitmq-server (4.0) in a directory that
scripts/rootfs.sh builds on first use and caches outside the checkout. This module only asks the script; the
package list, the cache key and the build lock live there (one home for how the root is made)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from adapters.installed import installed_rabbitmq_version

REPO_ROOT = Path(__file__).resolve().parents[1]
ROOTFS_SCRIPT = REPO_ROOT / "scripts" / "rootfs.sh"
RMQ_BIN_IN_ROOT = "usr/lib/rabbitmq/bin"  # Debian's layout, inside the root as on the host


class RootfsError(RuntimeError):
    """The root cannot be built here (privileges, debootstrap, the archive)."""


def missing_privileges() -> str | None:
    """One line naming what this machine lacks to build and run the root (None: nothing)."""
    if os.geteuid() != 0:
        return (f"the RabbitMQ 4.0 runtime needs root (debootstrap, chroot, mount namespaces); this is uid "
                f"{os.geteuid()}")
    for tool, package in (("debootstrap", "debootstrap"), ("unshare", "util-linux"), ("chroot", "coreutils")):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"the RabbitMQ 4.0 runtime needs {tool} (apt-get install {package})"
    return None


def _script(action: str, env: Mapping[str, str] | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(ROOTFS_SCRIPT), action], capture_output=True, text=True, timeout=1800,
                          env=None if env is None else {**os.environ, **env})


def built_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The root if it is built (nothing is built)."""
    result = _script("path", env)
    return Path(result.stdout.strip()) if result.returncode == 0 and result.stdout.strip() else None


def ensure_root(env: Mapping[str, str] | None = None) -> Path:
    """The root, built first if missing (about 40 s and 300 MB here; concurrent callers wait for one build)."""
    result = _script("build", env)
    if result.returncode != 0 or not result.stdout.strip():
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise RootfsError(lines[-1] if lines else f"scripts/rootfs.sh exited {result.returncode}")
    return Path(result.stdout.strip())


def root_rabbitmq_version(root: Path) -> str | None:
    """The RabbitMQ release installed in the root, read as on the host (no node is started)."""
    return installed_rabbitmq_version({"RMQ_BIN": str(root / RMQ_BIN_IN_ROOT)})
