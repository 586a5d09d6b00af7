"""The one object-store client (edge module: boto3/pyarrow imported lazily): settings, keys, bytes, Parquet.

Used by the load generator's uploads, the Spark jobs (inside tasks and on the driver), the report, the demo
and the plugins.

A `StoreSpec` is a small JSON-able description (passed to executors as a Data Source option), so the
executors need no environment of their own. Two backends:

- `s3`: any S3 endpoint (AWS, MinIO, the local moto server) through boto3; SIZING_S3_ENDPOINT / SIZING_S3_BUCKET.
- `file`: a local directory laid out exactly like the bucket (SIZING_STORE_ROOT=/path); used by the scale
  benchmark so that multi-GB synthetic campaigns do not have to live in the moto server's memory.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sizing.contract.layout import DEFAULT_BUCKET, s3_uri


@dataclass(frozen=True)
class S3Settings:
    bucket: str = DEFAULT_BUCKET
    endpoint_url: str | None = None
    region: str = "us-east-1"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> S3Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            bucket=env.get("SIZING_S3_BUCKET", DEFAULT_BUCKET),
            endpoint_url=env.get("SIZING_S3_ENDPOINT") or None,
            region=env.get("AWS_DEFAULT_REGION", "us-east-1"),
        )

    def as_env(self) -> dict[str, str]:
        env = {"SIZING_S3_BUCKET": self.bucket, "AWS_DEFAULT_REGION": self.region}
        if self.endpoint_url:
            env["SIZING_S3_ENDPOINT"] = self.endpoint_url
        return env

    def client(self):  # -> botocore S3 client
        return s3_client(self.endpoint_url, self.region)

    def store(self) -> S3Store:
        return S3Store(StoreSpec("s3", self.bucket, self.endpoint_url, self.region))

    def ensure_bucket(self) -> None:
        client = self.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if self.bucket not in existing:
            client.create_bucket(Bucket=self.bucket)


@dataclass(frozen=True)
class StoreSpec:
    kind: str  # "s3" | "file"
    bucket: str
    endpoint_url: str | None = None
    region: str = "us-east-1"
    root: str | None = None  # for kind == "file": the directory standing in for the bucket

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> StoreSpec:
        env = dict(os.environ if env is None else env)
        settings = S3Settings.from_env(env)
        if env.get("SIZING_STORE_ROOT"):
            return cls("file", settings.bucket, root=env["SIZING_STORE_ROOT"])
        return cls("s3", settings.bucket, settings.endpoint_url, settings.region)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        return cls(**json.loads(text))

    def uri(self, key: str) -> str:
        if self.kind == "file":
            return str(Path(self.root or ".") / key)
        return s3_uri(self.bucket, key)

    def open(self) -> ObjectStore:
        return LocalStore(Path(self.root or ".")) if self.kind == "file" else S3Store(self)


class ObjectStoreError(RuntimeError):
    """The object store refused part of a request it answered as a whole (e.g. keys DeleteObjects did not delete)."""


class ObjectStore:
    def list(self, prefix: str) -> list[str]:
        raise NotImplementedError

    def get(self, key: str) -> bytes:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        raise NotImplementedError

    def delete(self, keys: list[str]) -> None:
        raise NotImplementedError

    def read_parquet(self, key: str, columns: list[str] | None = None, use_threads: bool = True,
                     dictionary: Sequence[str] = ()):  # -> pyarrow.Table
        """`use_threads=False` for a caller that reads several objects at once itself (pyarrow's own pool then
        only contends with it). `dictionary`: columns read dictionary-encoded (a string that every row of an object
        repeats is then decoded once, not once per row)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = pa.BufferReader(self.get(key))
        metadata = pq.read_metadata(data)
        present = set(metadata.schema.names)
        source = pq.ParquetFile(data, metadata=metadata, read_dictionary=[c for c in dictionary if c in present])
        return source.read(columns=[c for c in columns if c in present] if columns is not None else None,
                           use_threads=use_threads)

    def put_parquet(self, key: str, table) -> None:
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(table, sink, **parquet_options(table.schema))
        self.put(key, sink.getvalue())


def parquet_options(schema) -> dict[str, Any]:  # (pyarrow.Schema) -> pyarrow.parquet.write_table's options
    """How every Parquet object of the project is written (raw records by the generator, derived tables, the
    benchmarks' synthetic records): binary columns (the histograms) zstd without a dictionary (every one differs;
    zstd shrinks them ~25x), every other column lz4 with a dictionary. Those pages hold a few hundred values, and
    zstd's start-up per page cost more than decoding them: a seed client object read in 3.0 ms all zstd, in 1.8 ms
    so, at about the same size (BENCHMARKS.md, "Objects written to be read")."""
    import pyarrow as pa

    binary = {f.name for f in schema if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)}
    return {"compression": {f.name: "zstd" if f.name in binary else "lz4" for f in schema},
            "use_dictionary": [f.name for f in schema if f.name not in binary]}


def session_credentials() -> dict[str, str]:
    """The credentials boto3 resolves here (environment, profile, instance role), frozen, as AWS_* variables; empty
    when there are none (an executor host with a role of its own then uses that)."""
    import boto3

    found = boto3.Session().get_credentials()
    if found is None:
        return {}
    frozen = found.get_frozen_credentials()
    env = {"AWS_ACCESS_KEY_ID": frozen.access_key, "AWS_SECRET_ACCESS_KEY": frozen.secret_key}
    if frozen.token:
        env["AWS_SESSION_TOKEN"] = frozen.token
    return env


def s3_client(endpoint_url: str | None, region: str):  # -> botocore S3 client
    """The one place a boto3 S3 client is made (retries on throttling and passing faults). SigV4 explicitly:
    botocore may presign with legacy SigV2 (deprecated by AWS) for a custom endpoint; requests are SigV4 anyway."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint_url, region_name=region,
                        config=Config(retries={"max_attempts": 5, "mode": "standard"}, signature_version="s3v4"))


class S3Store(ObjectStore):
    def __init__(self, spec: StoreSpec) -> None:
        self.bucket = spec.bucket
        self.client = s3_client(spec.endpoint_url, spec.region)

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return sorted(keys)

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as err:
            # HEAD has no body, so a missing key comes back as a bare 404 (no NoSuchKey code)
            if err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return False
            raise
        return True

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        extra = {"ContentType": content_type} if content_type else {}
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)

    def delete(self, keys: list[str]) -> None:
        """Delete every key or raise: DeleteObjects answers 200 even when some keys were not deleted (they come
        back under `Errors`), and an old part file left behind after a "replace" would double its rows."""
        failed: list[str] = []
        for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1000 keys
            chunk = keys[start:start + 1000]
            if chunk:
                answer = self.client.delete_objects(Bucket=self.bucket,
                                                    Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
                failed += [f"{e.get('Key')} ({e.get('Code')}: {e.get('Message')})" for e in answer.get("Errors") or []]
        if failed:
            raise ObjectStoreError(f"s3://{self.bucket}: {len(failed)} object(s) not deleted: "
                                   f"{', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}")

    def presigned_get(self, key: str, expires_s: int) -> str:
        """A URL that GETs the object without credentials of its own until it expires (signed locally: no
        request is made, so the object need not exist yet)."""
        return self.client.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": key},
                                                  ExpiresIn=expires_s)


    # Conditional writes (S3 since 2024, MinIO, moto): what makes an object a lock several hosts can share.

    def read_versioned(self, key: str) -> VersionedObject | None:
        """The object with its ETag and age on the *server's* clock (its Date header minus LastModified), so that
        hosts whose clocks differ agree on how old it is; None when there is no such object."""
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=key)
        except self.client.exceptions.NoSuchKey:
            return None
        from email.utils import parsedate_to_datetime

        served = parsedate_to_datetime(answer["ResponseMetadata"]["HTTPHeaders"]["date"])
        return VersionedObject(answer["Body"].read(), answer["ETag"],
                               max(0.0, (served - answer["LastModified"]).total_seconds()))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """PUT only when no object has this key (If-None-Match: *); False when one does."""
        return self._conditional(lambda: self.client.put_object(Bucket=self.bucket, Key=key, Body=data,
                                                                IfNoneMatch="*"))

    def put_if_match(self, key: str, data: bytes, etag: str) -> bool:
        """Replace the object only if it is still the version read (If-Match: its ETag); False otherwise."""
        return self._conditional(lambda: self.client.put_object(Bucket=self.bucket, Key=key, Body=data,
                                                                IfMatch=etag))

    def delete_if_match(self, key: str, etag: str) -> bool:
        return self._conditional(lambda: self.client.delete_object(Bucket=self.bucket, Key=key, IfMatch=etag))

    def _conditional(self, call) -> bool:
        from botocore.exceptions import ClientError

        try:
            call()
        except ClientError as err:
            code = str(err.response.get("Error", {}).get("Code", ""))
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            # 412: the condition failed; 409: a concurrent conditional write won; 404: gone meanwhile (If-Match)
            if status in (404, 409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"):
                return False
            raise
        return True


@dataclass(frozen=True)
class VersionedObject:
    data: bytes
    etag: str
    age_s: float  # since its last write, on the object store's clock


class LocalStore(ObjectStore):
    def __init__(self, root: Path) -> None:
        self.root = root

    def list(self, prefix: str) -> list[str]:
        # Walk only below the deepest directory the prefix names, as S3 listing would scan only that range.
        base = self.root / prefix.rsplit("/", 1)[0] if "/" in prefix else self.root
        if not base.exists():
            return []
        keys = (p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file())
        return sorted(k for k in keys if k.startswith(prefix) and not k.endswith(".tmp"))

    def get(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def exists(self, key: str) -> bool:
        return (self.root / key).is_file()

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)  # atomic, like an S3 PUT

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            (self.root / key).unlink(missing_ok=True)
