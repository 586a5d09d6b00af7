"""Reads through the object store (spark_jobs.lib.s3source, tableio): the driver's read of a few objects and the data
source's read give the same frame, and both give the rows that were written (a known answer built here)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from adapters.objectstore import StoreSpec
from sizing.contract import raw_layout
from sizing.contract.layout import RunKey
from spark_jobs.lib import s3source
from spark_jobs.lib.tableio import RawObjects
from tests.spark_records import phase_row, table

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n3-c5.2xlarge-gp2", "increasing-intensity", "R1")


def plan(frame) -> str:
    return frame._jdf.queryExecution().optimizedPlan().toString()


@pytest.fixture
def phases_store(tmp_path) -> tuple[StoreSpec, list[dict]]:
    """Four runs' phases objects: the second (in key order) empty, one written before `group` existed, one with
    `target_rate` stored as float32 (the declared type is double); plus a client_seconds object the phases read
    must not pick up."""
    spec = StoreSpec("file", "bucket", root=str(tmp_path))
    store, rows = spec.open(), []
    for repeat in (1, 2, 3, 4):
        key = dataclasses.replace(KEY, repeat=repeat)
        part = [] if repeat == 2 else [
            {**phase_row(key, phase, 60.0 * phase, 60.0, 10.0, 100.0 * phase + repeat), "group": "g"}
            for phase in (1, 2)]
        data = table("phases", part)
        if repeat == 3:
            data = data.drop_columns(["group"])
            part = [{**row, "group": None} for row in part]
        if repeat == 4:
            data = data.set_column(data.schema.get_field_index("target_rate"), "target_rate",
                                   data.column("target_rate").cast(pa.float32()))
        store.put_parquet(raw_layout.raw_part_key(key, "phases"), data)
        rows += part
    store.put_parquet(raw_layout.raw_part_key(KEY, "client_seconds", 1, 0), table("client_seconds", []))
    return spec, rows


def test_a_read_of_few_objects_by_the_driver_gives_the_rows_written_and_what_the_data_source_gives(
        spark, phases_store, monkeypatch):
    spec, written = phases_store
    objects = RawObjects.list(spec, KEY.campaign, [KEY.config_id], [KEY.run_id])
    assert len(objects.of("phases")) == 4 and len(objects.of("client_seconds")) == 1
    by_driver = objects.read(spark, "phases")
    # The driver's read is a local relation: no scan of the Python data source in its plan.
    assert s3source.FORMAT not in plan(by_driver)
    monkeypatch.setattr(s3source, "DRIVER_READ_MAX_OBJECTS", 0)
    by_source = objects.read(spark, "phases")
    assert s3source.FORMAT in plan(by_source)
    assert by_driver.schema == by_source.schema

    def ordered(frame) -> list[tuple]:
        return sorted((tuple(r) for r in frame.collect()), key=repr)

    assert ordered(by_driver) == ordered(by_source)
    columns = by_driver.columns
    assert ordered(by_driver) == sorted((tuple(row.get(c) for c in columns) for row in written), key=repr)
