"""The `report` task's "Campaign report" link: the URL it builds, and, through Airflow's own task runner
(dag.test on the SQLite metadata DB) and its own serialization, that the link the api-server shows is a URL
that serves the report ReportOperator wrote."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import requests
from rabbit_sizing.links import LINK_EXPIRY_S, REPORT_URL_KEY, ReportLink, console_url, report_url, split_s3_uri

from adapters.objectstore import S3Settings
from adapters.planning import publish_spec
from sizing.contract import layout
from tests.report_sample import RUN_ID, SPEC, write_sample

KEY = "reports/campaign=local-quick/run=r1/report.html"


def test_aws_links_the_objects_page_in_the_s3_console():
    # Known answer: the console's own "object overview" address for s3://rabbit-sizing/<KEY> in eu-west-1.
    expected = ("https://s3.console.aws.amazon.com/s3/object/rabbit-sizing?region=eu-west-1"
                "&prefix=reports%2Fcampaign%3Dlocal-quick%2Frun%3Dr1%2Freport.html")
    assert console_url("rabbit-sizing", KEY, "eu-west-1") == expected
    assert report_url(f"s3://rabbit-sizing/{KEY}", S3Settings("rabbit-sizing", None, "eu-west-1")) == expected


def test_only_s3_uris_of_an_object_are_linked():
    assert split_s3_uri("s3://b/a/b.html") == ("b", "a/b.html")
    for bad in ("build/reports/x.html", "s3://bucket-only", "s3:///key", "https://b/k"):
        with pytest.raises(ValueError, match="not an s3://bucket/key URI"):
            split_s3_uri(bad)


def test_an_endpoint_of_our_own_links_a_presigned_get_that_serves_the_object(s3: S3Settings):
    s3.client().put_object(Bucket=s3.bucket, Key=KEY, Body=b"<html>report</html>", ContentType="text/html")
    url = report_url(f"s3://{s3.bucket}/{KEY}", s3)
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == s3.endpoint_url and unquote(parts.path) == f"/{s3.bucket}/{KEY}"
    assert parse_qs(parts.query)["X-Amz-Expires"] == [str(LINK_EXPIRY_S)]
    response = requests.get(url, timeout=10)
    assert response.status_code == 200 and response.content == b"<html>report</html>"
    # Why presigned: the same object without the signature is refused (moto enforces S3's private ACL).
    assert requests.get(f"{s3.endpoint_url}/{s3.bucket}/{KEY}", timeout=10).status_code == 403


DAG_FILE = """
from airflow.sdk import DAG
from rabbit_sizing.operators.report import ReportOperator

with DAG("report_link_check", schedule=None) as dag:
    ReportOperator(task_id="report", run={run!r})
"""


def _serialized_dag(folder: Path, run: dict):
    """The one-task DAG written as a file, parsed and stored like the dag-processor does (dag.test runs
    only DAGs whose serialized version is in the metadata DB)."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    folder.mkdir()
    (folder / "report_link_check.py").write_text(DAG_FILE.format(run=run))
    bag = DagBag(dag_folder=str(folder))
    assert bag.import_errors == {}
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(bag, "dags-folder", None)  # the configured bundle (a DAG row must name a known bundle)
    return bag.dags["report_link_check"]


@pytest.mark.airflow
def test_the_report_tasks_link_is_the_report_it_wrote(airflow_db, s3: S3Settings, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    from airflow.models.xcom import XComModel
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.utils.session import create_session

    monkeypatch.chdir(tmp_path)  # the report's local copy goes to ./build/reports
    # A state dir of its own: the worker must fetch the spec validate_spec published, not find a stale local copy.
    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path / "state"))
    write_sample(s3, repeats=1)
    publish_spec(SPEC, s3.store())
    dag = _serialized_dag(tmp_path / "dags", {"spec_path": str(SPEC), "campaign": "local-quick", "run_label": RUN_ID})
    dag_run = dag.test()
    assert str(dag_run.state) == "success"
    key = layout.report_key("local-quick", RUN_ID)

    # What execute pushed, and what the task runner stored for the link when the task finished.
    with create_session() as session:
        query = XComModel.get_many(run_id=dag_run.run_id, dag_ids=dag.dag_id, task_ids="report", key=None)
        stored = dict(session.execute(query.with_only_columns(XComModel.key, XComModel.value)).all())
    assert set(stored) >= {REPORT_URL_KEY, ReportLink().xcom_key, "return_value"}

    # The api-server's view: the serialized DAG names the link, and resolves it from the stored XCom.
    served = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag)).get_task("report")
    assert served.extra_links == [ReportLink.name]
    (ti,) = dag_run.get_task_instances()
    link = served.get_extra_links(ti, ReportLink.name)
    assert unquote(urlsplit(link).path) == f"/{s3.bucket}/{key}"

    # The link opens the report: the same bytes the operator uploaded (independent read through boto3).
    response = requests.get(link, timeout=10)
    uploaded = s3.client().get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    assert response.status_code == 200 and response.content == uploaded
    assert response.headers["Content-Type"].startswith("text/html") and b'id="verdict"' in response.content
