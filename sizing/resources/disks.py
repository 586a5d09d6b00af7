"""Per-node disk layouts: which volume holds which of RabbitMQ's four disk workloads (seed 001).

A node always has a `data` volume (Mnesia and the message store); `logs`, `wal` (the quorum-queue write-ahead
log) and `segments` (quorum-queue segment files) may each get a volume of their own. A role without its own
volume lives on the data volume, so one volume holding everything stays the default.

One home for the roles, how a layout is named in config ids, where each role lives on an AWS node and which
RabbitMQ 3.10 setting points at it. Both Terraform stacks receive what they need from here (the local stack:
the roles; the aws stack: every volume with its device name and mount point). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from sizing.resources.cost import Volume

DATA_ROLE = "data"
VOLUME_ROLES = (DATA_ROLE, "logs", "wal", "segments")  # also the order of volumes in ids and stack variables
FILESYSTEMS = ("ext4", "xfs")
DEFAULT_FILESYSTEM = "ext4"  # what cloud-init formats an AWS volume with when the spec names none

# How RabbitMQ 3.10.8 is pointed at each role's directory (read in the installed package, /usr/lib/rabbitmq):
#  - data: RABBITMQ_MNESIA_BASE (rabbit_common rabbit_env:mnesia_base_dir/1).
#  - logs: RABBITMQ_LOG_BASE (rabbit_env:log_base_dir/1).
#  - segments: RABBITMQ_QUORUM_DIR. rabbit_env:quorum_queue_dir/1 reads it (default <mnesia dir>/quorum) and
#    context_to_app_env_vars1/2 sets it as ra's `data_dir`; ra 2.2.0's ra_env:data_dir/0 appends the node name,
#    and ra_system:default_config/0 puts segment files (and ra's meta/names tables) there. rabbit.schema's
#    `raft.data_dir` maps to the same ra.data_dir; the env variable keeps rabbitmq.conf free of paths.
#  - wal: ra's `wal_data_dir` application env, which defaults to data_dir (ra_system:default_config/0) and is
#    used as is (no node name appended). rabbit.schema 3.10 has no rabbitmq.conf key for it, so it goes into
#    advanced.config: [{ra, [{wal_data_dir, "..."}]}]. rabbit_ra_systems:get_config(quorum_queues) starts from
#    ra_system:default_config/0, so the quorum_queues Ra system picks it up (the `coordination` system, used by
#    streams, sets its own wal_data_dir under the Mnesia dir).
RABBITMQ_SETTING = {
    DATA_ROLE: "RABBITMQ_MNESIA_BASE",
    "logs": "RABBITMQ_LOG_BASE",
    "wal": "advanced.config ra.wal_data_dir",
    "segments": "RABBITMQ_QUORUM_DIR",
}

# AWS nodes (terraform/modules/aws_rabbitmq_cluster): where each role's volume is mounted and the block-device
# name it is attached as. The data volume keeps /var/lib/rabbitmq (the rabbitmq user's home, cookie included).
AWS_MOUNT_POINTS = {
    DATA_ROLE: "/var/lib/rabbitmq",
    "logs": "/var/log/rabbitmq",
    "wal": "/var/lib/rabbitmq-wal",
    "segments": "/var/lib/rabbitmq-segments",
}
AWS_DEVICE_NAMES = {DATA_ROLE: "/dev/sdf", "logs": "/dev/sdg", "wal": "/dev/sdh", "segments": "/dev/sdi"}
# Local nodes (terraform/modules/local_cluster/scripts/node.sh): each role's directory in the node's directory; on the
# scale model the role's loop-device volume is mounted there (adapters/envelope.py).
LOCAL_DIRS = {DATA_ROLE: "data", "logs": "log", "wal": "wal", "segments": "segments"}


@dataclass(frozen=True)
class RoleVolume:
    """One volume of a node and the role it holds (plus every role without a volume of its own, for `data`)."""

    role: str
    volume: Volume


def volume_label(volume: Volume) -> str:
    """`io1`, `st1-1000gb`, `io1-200gb-10000iops`: the volume part of a config id."""
    parts = [volume.type]
    if volume.size_gb:
        parts.append(f"{volume.size_gb}gb")
    if volume.iops:
        parts.append(f"{volume.iops}iops")
    if volume.throughput_mbps:
        parts.append(f"{volume.throughput_mbps}mbps")
    return "-".join(parts)


def layout_suffix(data: Volume, dedicated: tuple[RoleVolume, ...], filesystem: str | None) -> str:
    """The config-id suffix of a layout; empty for one volume holding everything (ids stay what they were).

    Each role with its own volume adds `-<role>` when that volume is provisioned like the data volume (seed 001's
    layouts), else `-<role>.<volume label with dots>`; a filesystem the spec names adds `-<filesystem>`.
    Roles come in VOLUME_ROLES order whatever the spec's order, so the id is stable.
    """
    parts = []
    for item in sorted(dedicated, key=lambda v: VOLUME_ROLES.index(v.role)):
        same = item.volume == data
        parts.append(item.role if same else f"{item.role}.{volume_label(item.volume).replace('-', '.')}")
    if filesystem:
        parts.append(filesystem)
    return "".join(f"-{p}" for p in parts)


def placement(dedicated_roles: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Every role -> the role of the volume holding it (its own, or `data`)."""
    own = set(dedicated_roles) | {DATA_ROLE}
    return {role: role if role in own else DATA_ROLE for role in VOLUME_ROLES}
