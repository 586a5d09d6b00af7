"""RabbitMQ versions as a matrix dimension (issue 24): what a spec may ask for and what goes with it. Pure.

On `aws` a config may name the RabbitMQ version its nodes run (`rabbitmq_version`, or the matrix dimension
`rabbitmq_versions`); cloud-init then installs that version from Team RabbitMQ's apt repositories, with the Erlang
series this table pins for it (terraform/modules/aws_rabbitmq_cluster). Without one, a node runs Debian 12's
rabbitmq-server (3.10), as locally. On `local` the nodes run whatever rabbitmq-server the machine has installed
(adapters/installed.py reads it), or RabbitMQ 4.0 (Debian 13's package, in a root filesystem: the chroot runtime,
adapters/rootfs.py): a spec asking for another version is refused, never silently run on the installed one.

Erlang series per RabbitMQ series: RabbitMQ's compatibility matrix (rabbitmq.com/docs/which-erlang): 3.10 needs
24.3 and supports 25; 3.11 requires 25; 3.12 supports 25 and 26; 3.13 needs 26; 4.0 supports 26.2 (27 only from
4.0.4); 4.1 supports 26.2 and 27; 4.2 supports 26.2 and 27 up to 4.2.8 and needs 27 from 4.2.9; 4.3 needs 27 (28 is
partly supported, for new clusters only, until 4.3.6). The pin is the newest series every release of the RabbitMQ
series supports: 27 for 4.1, 4.2 and 4.3, so 4.2.9 and later get the 27 they need.
"""

from __future__ import annotations

import re

ERLANG_SERIES = {"3.10": "25", "3.11": "25", "3.12": "26", "3.13": "26", "4.0": "26", "4.1": "27", "4.2": "27",
                 "4.3": "27"}
# The version a config runs when it names none: the target's own package (Debian 12's rabbitmq-server).
TARGET_DEFAULT_VERSION = "3.10"
_VERSION = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?")  # fullmatch: `$` would let a trailing newline in


def version_problem(version: object) -> str | None:
    """Why `version` cannot be asked for (None when it can): `X.Y` (the series' newest) or `X.Y.Z`, of a series
    the Erlang table knows."""
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        return f"must be a RabbitMQ version such as '3.12' or '3.12.13', got {version!r}"
    if series(version) not in ERLANG_SERIES:
        return (f"RabbitMQ {version} is not a series this platform can install (known: "
                f"{', '.join(ERLANG_SERIES)}); each needs its Erlang series (sizing/resources/versions.py)")
    return None


# The series the local target runs in a root filesystem of Debian 13's packages (scripts/rootfs.sh) rather than from
# the machine's own rabbitmq-server (terraform/modules/local_cluster/scripts/runtime.sh says how each runs).
LOCAL_CHROOT_SERIES = "4.0"


def local_runtime(version: str | None) -> str:
    """How a local node of this requested version runs: `chroot` (the 4.0 root) or `host` (the installed package,
    also when no version is asked for)."""
    return "chroot" if version is not None and series(version) == LOCAL_CHROOT_SERIES else "host"


def series(version: str) -> str:
    """`3.12.13` -> `3.12`."""
    return ".".join(version.split(".")[:2])


def erlang_series(version: str) -> str:
    return ERLANG_SERIES[series(version)]


def apt_version(version: str) -> str:
    """What `apt-get install rabbitmq-server=<this>` takes: an exact release (`3.12.13-1`) or a series' newest
    (`3.12.*`)."""
    return f"{version}-1" if version.count(".") == 2 else f"{version}.*"


def version_key(version: str) -> tuple[int, ...]:
    """A version as a sortable tuple: `3.10.8` -> (3, 10, 8), `4.0` -> (4, 0)."""
    return tuple(int(part) for part in version.split("."))


def version_label(version: str) -> str:
    """The config-id suffix: `-rmq3.12.13`."""
    return f"-rmq{version}"


def satisfies(installed: str, requested: str) -> bool:
    """An installed version (`3.10.8`) is what a spec asked for: the same release, or a release of the asked series
    (`3.10`)."""
    return installed == requested or (requested.count(".") == 1 and series(installed) == requested)
