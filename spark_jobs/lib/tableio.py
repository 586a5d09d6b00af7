"""Extract and load for the jobs (a library module): raw records and derived tables in the object store.

Schemas come from sizing.contract.records (raw record types and derived tables); keys from sizing.contract.layout. The
jobs, the GX gate and the query CLI read and write through these helpers only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from adapters.objectstore import StoreSpec
from sizing.contract import layout, raw_layout, records
from spark_jobs.lib.s3source import (
    ObjectFold,
    ddl_to_arrow,
    list_objects,
    read_arrow,
    read_keys,
    read_objects,
    write_table,
)


@dataclass(frozen=True)
class RawObjects:
    """The raw objects of some configs and runs (never "latest"), listed once for every read a job makes of them:
    a listing walks every record type of every config, and a job reads six of them, one at a time."""

    spec: StoreSpec
    keys: tuple[str, ...]

    @classmethod
    def list(cls, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str]) -> RawObjects:
        runs = set(run_ids)
        return cls(spec, tuple(list_objects(spec, [raw_layout.raw_config_prefix(campaign, c) for c in configs],
                                            lambda key: layout.partition_value(key, "run") in runs)))

    def of_config(self, config_id: str) -> RawObjects:
        return RawObjects(self.spec, tuple(k for k in self.keys if layout.partition_value(k, "config") == config_id))

    def of(self, record_type: str) -> list[str]:
        return [key for key in self.keys if raw_layout.record_type_of(key) == record_type]

    def read(self, spark: SparkSession, record_type: str, fold: ObjectFold | None = None,
             columns: Sequence[str] | None = None) -> DataFrame:
        """One record type (only `columns`, if given: the data source decodes and ships every column it is told
        of), or with a `fold` (s3source.ObjectFold) the fold of the columns it reads, as they are read."""
        schema = fold.reads if fold is not None else records.spark_ddl(record_type, columns)
        return read_keys(spark, self.spec, self.of(record_type), schema, fold)

    def rows(self, record_type: str, fold: Callable[[Iterator], Iterator] | None = None,
             columns: Sequence[str] | None = None):  # -> pyarrow.Table
        """One record type's rows in this process (only `columns`, if given), as Arrow (s3source.read_arrow,
        `fold` mapped over them), for a caller that wants the rows themselves: the raw gate. Through Spark they
        would cross from its Python reader into the JVM and back."""
        schema = records.arrow_schema(record_type)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        return read_arrow(self.spec, self.of(record_type), schema, fold)


def read_raw(spark: SparkSession, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
             record_type: str, fold: ObjectFold | None = None) -> DataFrame:
    """One record type of the given configs and runs (a job reading several lists once: RawObjects)."""
    return RawObjects.list(spec, campaign, configs, run_ids).read(spark, record_type, fold)


def read_campaign_raw(spark: SparkSession, spec: StoreSpec, campaign: str, record_type: str) -> DataFrame:
    """One record type of every config and run of a campaign (the query CLI's raw views)."""
    return read_objects(spark, spec, [raw_layout.raw_campaign_prefix(campaign)], records.spark_ddl(record_type),
                        lambda key: raw_layout.record_type_of(key) == record_type)


def read_table(spark: SparkSession, spec: StoreSpec, table: str, campaign: str, config_id: str | None = None,
               run_id: str | None = None) -> DataFrame:
    """A derived table (sizing.contract.records.TABLES) of a campaign: every run's rows, or one run's (`run_id`), of
    every config or of one (`config_id`)."""
    keys = list_objects(spec, [layout.table_prefix(table, campaign, config_id)])
    return read_keys(spark, spec, layout.of_run(keys, run_id) if run_id else keys, records.table_ddl(table))


def partition_rows(spec: StoreSpec, table: str, campaign: str, configs: Sequence[str] | None,
                   run_ids: Sequence[str], columns: Sequence[str] | None = None) -> pa.Table:
    """The run partitions `run_ids` of a table (of these `configs`; None: a campaign-wide table) read by this
    process, for a caller that wants the rows themselves: the gate hands them to GX. Through Spark (and toPandas)
    a million node_series rows crossed into the JVM and back out (5.6 s at seed scale). `columns`: only these."""
    schema = ddl_to_arrow(records.table_ddl(table))
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    return read_arrow(spec, list_objects(spec, run_prefixes(table, campaign, configs, run_ids)), schema)


def run_prefixes(table: str, campaign: str, configs: Sequence[str] | None, run_ids: Sequence[str]) -> list[str]:
    """The run partitions `run_ids` of a table: of these `configs`, or (None) of a campaign-wide table."""
    if configs is None:
        return [layout.table_prefix(table, campaign, run_id=r) for r in run_ids]
    return [layout.table_prefix(table, campaign, c, r) for c in configs for r in run_ids]


def stored_runs(spec: StoreSpec, table: str, campaign: str) -> list[str]:
    """The run ids with a partition of `table` in the campaign."""
    keys = list_objects(spec, [layout.table_prefix(table, campaign)])
    return sorted({run for key in keys if (run := layout.partition_value(key, "run")) is not None})


def replace_table(frame: DataFrame, spec: StoreSpec, table: str, campaign: str, run_ids: Sequence[str],
                  configs: Sequence[str] | None = None, before_write: Callable[[], None] | None = None) -> None:
    """Write a derived table into its run partitions (sizing.contract.records.partition_columns), replacing exactly
    those of `run_ids` (with `configs`: of those configs only); every other run's and config's partition is left alone.
    `before_write`: s3source.write_table's."""
    partition_by = list(records.partition_columns(table))
    if configs is None and "config_id" in partition_by:
        raise ValueError(f"{table} is partitioned by config: name the configs whose run partitions it replaces")
    write_table(frame, spec, table, partition_by, replace_prefixes=run_prefixes(table, campaign, configs, run_ids),
                before_write=before_write)


def migrate_legacy_partitions(spec: StoreSpec, campaign: str) -> list[str]:
    """Tables written before they were partitioned by run (issue 24) moved into run partitions: each legacy
    phase_summary object (`config=K/part-*.parquet`) is split by its rows' run_id into `config=K/run=R/`, and the
    legacy campaign-wide objects, derived from those rows, are deleted (the caller recomputes them per run).
    Returns the run ids whose rows moved; idempotent (nothing legacy left: nothing done)."""
    import pyarrow.compute as pc

    store = spec.open()
    moved: set[str] = set()
    for key in store.list(layout.table_prefix("phase_summary", campaign)):
        if not key.endswith(".parquet") or layout.partition_value(key, "run") is not None:
            continue
        table = store.read_parquet(key)
        config_id = layout.partition_value(key, "config")
        for run_id in sorted(set(table.column("run_id").to_pylist()) - {None}):
            rows = table.filter(pc.equal(table.column("run_id"), run_id))
            store.put_parquet(layout.part_key(layout.table_prefix("phase_summary", campaign, config_id, run_id),
                                              "legacy"), rows)
            moved.add(run_id)
        store.delete([key])
    for table_name in records.CAMPAIGN_TABLES:
        legacy = [k for k in store.list(layout.table_prefix(table_name, campaign))
                  if layout.partition_value(k, "run") is None]
        store.delete(legacy)
    return sorted(moved)
