"""A real local node with `data`, `wal` and `segments` volumes (issue 14 acceptance): after a quorum-queue run
the WAL files are in the wal directory, the segment files in the segments directory, and nothing of the quorum
queues is under data. Port slot 60 (24000-24049) of this area (slots 60-64).

Locally a volume is a directory on the machine's one filesystem, so this checks where RabbitMQ writes, not disk
speed. The independent counter is the filesystem itself: the files RabbitMQ created, found by walking it.
"""

from __future__ import annotations

from pathlib import Path

import pika
import pytest

pytestmark = pytest.mark.cluster

SLOT = 60
MESSAGES = 4000
BODY = b"x" * 1024
# A 1 MB WAL rolls over every ~1000 messages of 1 KB, so ra's segment writer moves the rolled WAL files'
# entries into segment files during the run (with the default 256 MB they would all stay in the WAL).
BROKER_CONFIG = {"raft.wal_max_size_bytes": 1048576}


def files(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in root.rglob(f"*{suffix}") if p.is_file())


def test_quorum_wal_and_segments_land_on_their_own_volumes(local_cluster_factory) -> None:
    local = local_cluster_factory(slot=SLOT, nodes=1, broker_config=BROKER_CONFIG, roles=("wal", "segments"))
    cluster = local.cluster
    node = cluster.node(1)
    node_dir = Path(node.data_dir).parent
    data, wal, segments = node_dir / "data", node_dir / "wal", node_dir / "segments"
    assert (local.plan.shape.config_id, [v.role for v in local.plan.shape.volumes]) == (
        "n1-c5.2xlarge-gp2-wal-segments", ["data", "wal", "segments"])

    params = pika.URLParameters(node.amqp_uri(cluster.username, cluster.password, cluster.vhost))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("disks-qq", durable=True, arguments={"x-queue-type": "quorum"})
        for _ in range(MESSAGES):  # confirmed one by one: every message is in the WAL when the loop ends
            channel.basic_publish("", "disks-qq", BODY, pika.BasicProperties(delivery_mode=2), mandatory=True)
        declared = channel.queue_declare("disks-qq", passive=True)
        assert declared.method.message_count == MESSAGES

    wal_files = files(wal, ".wal")
    assert wal_files, f"no WAL file under {wal}: {sorted(p.name for p in wal.rglob('*'))}"
    # ra puts segment files under <RABBITMQ_QUORUM_DIR>/<node name>/<server uid>/
    segment_files = files(segments / node.name, ".segment")
    assert segment_files, f"no segment file under {segments}: {sorted(str(p) for p in segments.rglob('*'))}"
    assert sum(p.stat().st_size for p in wal_files + segment_files) > MESSAGES * len(BODY) / 2

    # Nothing of the quorum queues under data: no `quorum` directory (RabbitMQ's default home for them), no
    # segment files, and WAL files only of the `coordination` Ra system (stream coordination, not queues).
    under_data = list(data.rglob("*"))
    assert not [p for p in under_data if p.name == "quorum"], "a quorum directory under data"
    assert files(data, ".segment") == []
    assert all("coordination" in p.relative_to(data).parts for p in files(data, ".wal")), files(data, ".wal")
    advanced = (node_dir / "advanced.config").read_text()
    assert f'{{wal_data_dir, "{wal}"}}' in advanced


def test_one_volume_keeps_rabbitmq_defaults(local_cluster_factory) -> None:
    """The control: with one volume, the quorum WAL and segments stay in RabbitMQ's default place under data
    (a `quorum` directory in the Mnesia dir), and advanced.config is empty. Port slot 61 (24050-24099)."""
    local = local_cluster_factory(slot=SLOT + 1, nodes=1, broker_config=BROKER_CONFIG)
    node = local.cluster.node(1)
    node_dir = Path(node.data_dir).parent
    params = pika.URLParameters(node.amqp_uri(local.cluster.username, local.cluster.password, local.cluster.vhost))
    with pika.BlockingConnection(params) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("disks-qq", durable=True, arguments={"x-queue-type": "quorum"})
        for _ in range(MESSAGES):
            channel.basic_publish("", "disks-qq", BODY, pika.BasicProperties(delivery_mode=2), mandatory=True)
    data = node_dir / "data"
    in_quorum = [p for p in files(data, ".wal") + files(data, ".segment") if "quorum" in p.relative_to(data).parts]
    assert {p.suffix for p in in_quorum} == {".wal", ".segment"}, sorted(str(p) for p in data.rglob("*"))
    assert not (node_dir / "wal").exists() and not (node_dir / "segments").exists()
    assert (node_dir / "advanced.config").read_text().strip() == "[]."
