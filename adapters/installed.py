"""What this machine has installed and which code it runs (edge module): the local target's RabbitMQ release and
the git commit of the checkout. Both go into every run's record (issue 24: the `runs` table)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# The local target's nodes run the scripts of terraform/modules/local_cluster with RMQ_BIN (Debian's layout: the
# release's files under /usr/lib/rabbitmq/lib/rabbitmq_server-<version>/).
DEFAULT_RMQ_BIN = "/usr/lib/rabbitmq/bin"
_RELEASE_DIR = re.compile(r"^rabbitmq_server-(\d+\.\d+\.\d+)$")


def installed_rabbitmq_version(env: Mapping[str, str] | None = None) -> str | None:
    """The RabbitMQ release the local target's nodes run (None: no rabbitmq-server installed), read from the
    release directory beside RMQ_BIN, as the nodes themselves find it (no node is started)."""
    env = os.environ if env is None else env
    lib = Path(env.get("RMQ_BIN", DEFAULT_RMQ_BIN)).parent / "lib"
    try:
        found = sorted(m.group(1) for p in lib.iterdir() if (m := _RELEASE_DIR.match(p.name)))
    except OSError:
        return None
    return found[-1] if found else None


@lru_cache(maxsize=4)
def code_commit(root: str = str(REPO_ROOT)) -> str | None:
    """The commit of the code that runs: SIZING_CODE_COMMIT (an image built without .git), else `git rev-parse
    HEAD` of the checkout, with `-dirty` when tracked files have uncommitted changes; None outside a checkout."""
    if os.environ.get("SIZING_CODE_COMMIT"):
        return os.environ["SIZING_CODE_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None
