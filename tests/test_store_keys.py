"""Every object-store key is built and read back by sizing.contract.layout (issue 35 item 5): the keys the plugins, the
jobs, the CLI and the report used to spell by hand, checked against those literal spellings (known answers), and
each reader against the builder it inverts. Pure: no store, no I/O."""

from __future__ import annotations

import pytest

from sizing.contract import layout, raw_layout
from sizing.contract.layout import RunKey

KEY = RunKey("local-quick", "n3-c5.2xlarge-gp2", "broker-kill", "manual-1", 2)
RAW = "raw/campaign=local-quick/config=n3-c5.2xlarge-gp2/scenario=broker-kill/run=manual-1/repeat=2/"


def test_roots_and_new_keys_spell_what_was_written_by_hand() -> None:
    assert layout.table_root("runs") == "tables/runs/"
    assert layout.table_prefix("runs", "c").startswith(layout.table_root("runs"))
    assert raw_layout.raw_campaign_prefix("c") == raw_layout.RAW_ROOT + "campaign=c/" == "raw/campaign=c/"
    assert (layout.VALIDATION_ROOT, layout.REPORTS_ROOT) == ("validation/", "reports/")
    # plugins/rabbit_sizing/uploads.py's hand-built log key, as it was
    assert (layout.run_log_key("local-quick", "n3-c5.2xlarge-gp2", "manual-1", "broker-kill", 2)
            == "logs/campaign=local-quick/config=n3-c5.2xlarge-gp2/run=manual-1/broker-kill-r2.log")
    # spark_jobs/lib/s3source.py's and tableio.py's part objects
    prefix = layout.table_prefix("phase_summary", "c", "k", "r")
    assert layout.part_key(prefix, "0a1b2c") == "tables/phase_summary/campaign=c/config=k/run=r/part-0a1b2c.parquet"
    assert layout.part_key(prefix, "legacy").endswith("/run=r/part-legacy.parquet")
    with pytest.raises(ValueError, match="cannot name an object-store partition"):
        layout.run_log_key("c", "k", "r", "a/b", 1)


def test_raw_readers_invert_the_raw_builders() -> None:
    manifest = raw_layout.manifest_key(KEY)
    assert raw_layout.is_manifest(manifest) and manifest == RAW + "manifest.json"
    for not_a_manifest in (RAW + "client_seconds/phase=01/manifest.json", "raw/campaign=c/manifest.json",
                           layout.report_key("c", "r"), RAW + "accounting/part-0.parquet"):
        assert not raw_layout.is_manifest(not_a_manifest), not_a_manifest
    for record_type, phase, worker in (("client_seconds", 3, 1), ("events", 2, None), ("accounting", None, None)):
        assert raw_layout.record_type_of(raw_layout.raw_part_key(KEY, record_type, phase, worker)) == record_type
    # the manifest and keys outside a raw run partition have no record type (the old `"/events/" in key` test
    # matched a derived table of that name too)
    for other in (raw_layout.manifest_key(KEY), "tables/events/campaign=c/run=r/part-0.parquet"):
        assert raw_layout.record_type_of(other) is None, other


def test_validation_report_and_lease_readers_invert_their_builders() -> None:
    found = layout.validation_of(layout.validation_key("raw", "c", "k", "r"))
    assert found == layout.ValidationPartition("raw", "c", "k", "r")
    assert layout.validation_of("validation/raw/campaign=c/result.json") == layout.ValidationPartition("raw", "c",
                                                                                                       "", "")
    for other in ("validation/raw/campaign=c/config=k/run=r/index.html", "reports/campaign=c/run=r/x.json",
                  "validation/result.json"):
        assert layout.validation_of(other) is None, other
    assert layout.report_run_of(layout.report_key("c", "r")) == ("c", "r")
    assert layout.report_run_of("reports/campaign=c/report.html") is None
    assert layout.report_run_of("tables/runs/campaign=c/run=r/part-0.parquet") is None
    assert layout.lease_slot_of(layout.lease_key("aws", 12)) == 12
    for other in ("leases/aws/slot-x.json", "leases/aws/slot-3.json.tmp", "leases/aws/other-3.json"):
        assert layout.lease_slot_of(other) is None, other


def test_the_bucket_default_is_the_one_in_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's "no such bucket" line, the demo's and the adapter's settings name layout.DEFAULT_BUCKET unless
    SIZING_S3_BUCKET says otherwise (they spelled "rabbit-sizing" each on their own before)."""
    from botocore.exceptions import ClientError

    from adapters.objectstore import S3Settings
    from app.cli import explain
    from app.demo import DemoSettings

    missing = ClientError({"Error": {"Code": "NoSuchBucket"}}, "ListObjectsV2")
    monkeypatch.delenv("SIZING_S3_BUCKET", raising=False)
    assert layout.DEFAULT_BUCKET == "rabbit-sizing"
    assert f"bucket {layout.DEFAULT_BUCKET!r} does not exist" in (explain(missing) or "")
    assert S3Settings.from_env({}).bucket == DemoSettings.from_env({}).bucket == layout.DEFAULT_BUCKET
    monkeypatch.setenv("SIZING_S3_BUCKET", "other")
    assert "bucket 'other' does not exist" in (explain(missing) or "")
    assert DemoSettings.from_env({"SIZING_S3_BUCKET": "other"}).bucket == "other"
