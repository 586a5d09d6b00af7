"""Object-store settings shared by every component (edge module: boto3 is imported lazily).

Read from the environment so that the same code talks to the local moto server, MinIO or AWS S3:
SIZING_S3_ENDPOINT (unset for AWS), SIZING_S3_BUCKET, and the usual AWS_* credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sizing.layout import DEFAULT_BUCKET


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
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name=self.region)

    def ensure_bucket(self) -> None:
        client = self.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if self.bucket not in existing:
            client.create_bucket(Bucket=self.bucket)
