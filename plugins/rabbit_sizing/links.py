"""The "Campaign report" extra link of the `report` task: the Airflow run opens its HTML report.

Airflow 3 computes an operator's extra links once, on the worker, when the task finishes (the task
runner's `finalize` calls `get_link` and stores the URL in XCom under `_link_ReportLink`); the api-server
only reads that stored string back (XComOperatorLink), so no plugin registration is needed to render it.

Which URL, given that the link is fixed when the task ends:
- an S3 endpoint of our own (SIZING_S3_ENDPOINT: the demo's moto server, the compose MinIO): a presigned
  GET of the object, valid 7 days (SigV4's maximum; the demo's in-memory store lives shorter than that).
  The plain object URL `{endpoint}/{bucket}/{key}` is refused there (HTTP 403, moto enforces S3's ACLs:
  the report is private) and making it public would widen what the local target exposes (and MinIO has
  no object ACLs), so the link carries its own short-lived permission instead;
- AWS: the S3 console page of the object, which asks the reader's own AWS login. A presigned URL there
  would store a bearer link in the metadata DB for every UI reader and die with the role session that
  signed it (hours), leaving dead links in the run history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

    from adapters.objectstore import S3Settings

# The XCom key under which ReportOperator.execute leaves the report's URL (also readable over the REST API).
REPORT_URL_KEY = "report_url"
S3_CONSOLE = "https://s3.console.aws.amazon.com/s3/object/"
LINK_EXPIRY_S = 7 * 24 * 3600  # the longest a SigV4 presigned URL may live


def split_s3_uri(uri: str) -> tuple[str, str]:
    """'s3://bucket/key' -> (bucket, key); ValueError for anything else."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://") or not bucket or not key:
        raise ValueError(f"not an s3://bucket/key URI: {uri!r}")
    return bucket, key


def console_url(bucket: str, key: str, region: str) -> str:
    """The object's page in the AWS S3 console (standard `aws` partition)."""
    return f"{S3_CONSOLE}{quote(bucket)}?{urlencode({'region': region, 'prefix': key})}"


def report_url(uri: str, settings: S3Settings, expires_s: int = LINK_EXPIRY_S) -> str:
    """Where a browser opens the object `uri`: a presigned GET on an endpoint of our own, else (AWS) the
    object's console page. Presigning is computed locally (no request is made)."""
    bucket, key = split_s3_uri(uri)
    if not settings.endpoint_url:
        return console_url(bucket, key, settings.region)
    # Signed by the object-store adapter's own client (the one every read and write goes through).
    return replace(settings, bucket=bucket).store().presigned_get(key, expires_s)


class ReportLink(BaseOperatorLink):
    """The button on the `report` task: the URL ReportOperator.execute pushed under REPORT_URL_KEY."""

    name = "Campaign report"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom  # the configured XCom backend (what the compat shim uses)

        return XCom.get_value(ti_key=ti_key, key=REPORT_URL_KEY) or ""  # "" (no link) when the report failed
