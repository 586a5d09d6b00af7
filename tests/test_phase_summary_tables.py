"""phase_summary's package: one module per table it writes, each declaring its transform (inputs, output), and the
node_series transform (pure: a projection and cast of node_seconds rows, no Spark). Known answers:
sizing.contract.records' own table and record lists, and the hand-built rows' own values."""

from __future__ import annotations

import importlib

import pyarrow as pa

from sizing.contract import records
from sizing.contract.layout import RunKey
from spark_jobs.lib.phase_summary import keys, node_series
from spark_jobs.lib.s3source import align_to_schema
from tests.spark_records import node_rows, table

KEY = RunKey("c", "n3-c5.2xlarge-gp2", "increasing-intensity", "R1")
TABLE_MODULES = {"phase_summary": "summary", **{t: t for t in records.BESIDE_SUMMARY}}


def test_every_table_the_step_writes_has_its_own_module_declaring_its_inputs_and_output() -> None:
    assert set(TABLE_MODULES) == set(records.PER_CONFIG_TABLES)
    for table_name, module in TABLE_MODULES.items():
        declared = importlib.import_module(f"spark_jobs.lib.phase_summary.{module}").TRANSFORM
        assert isinstance(declared, keys.Transform)
        assert declared.output == table_name and table_name in records.TABLES
        assert declared.inputs and set(declared.inputs) <= set(records.RECORD_TYPES), table_name


def test_node_series_is_node_seconds_own_columns_typed_as_the_table_declares_them() -> None:
    rows = [*node_rows(KEY, 1, "rabbit-1", range(3), cpu_busy=0.4, write_bytes=2e6, missing=range(1, 2)),
            *node_rows(KEY, 1, "rabbit-2", range(2), cpu_busy=0.7, target="aws", net_bytes=5e5)]
    raw = align_to_schema(table("node_seconds", rows), records.arrow_schema("node_seconds"))
    got = node_series.node_series(raw)
    assert got.schema == node_series.arrow_schema("node_series")
    assert got.column_names == records.table_columns("node_series")
    assert got.num_rows == len(rows)
    by_second = {(r["node"], r["second"]): r for r in got.to_pylist()}
    assert by_second[("rabbit-1", 0)]["cpu_busy"] == 0.4 and by_second[("rabbit-1", 0)]["disk_write_bytes_per_s"] == 2e6
    assert by_second[("rabbit-1", 1)]["missing"] is True and by_second[("rabbit-1", 1)]["cpu_busy"] is None
    assert by_second[("rabbit-2", 1)]["target"] == "aws" and by_second[("rabbit-2", 1)]["net_in_bytes_per_s"] == 5e5
    assert {r["run_id"] for r in by_second.values()} == {"R1"}
    assert pa.types.is_int32(got.schema.field("second").type)
