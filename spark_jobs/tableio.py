"""Extract and load for the jobs (a library module): raw records and derived tables in the object store.

Schemas come from sizing.records (raw record types and derived tables); keys from sizing.layout. The jobs,
the GX gate and the query CLI read and write through these helpers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from adapters.objectstore import StoreSpec
from sizing import layout, records
from spark_jobs.s3source import ObjectFold, list_objects, read_keys, read_objects, write_table


@dataclass(frozen=True)
class RawObjects:
    """The raw objects of some configs and runs (never "latest"), listed once for every read a job makes of them:
    a listing walks every record type of every config, and a job reads six of them, one at a time."""

    spec: StoreSpec
    keys: tuple[str, ...]

    @classmethod
    def list(cls, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str]) -> RawObjects:
        runs = {f"/run={r}/" for r in run_ids}
        return cls(spec, tuple(list_objects(spec, [layout.raw_config_prefix(campaign, c) for c in configs],
                                            lambda key: any(r in key for r in runs))))

    def of(self, record_type: str) -> list[str]:
        return [key for key in self.keys if f"/{record_type}/" in key]

    def read(self, spark: SparkSession, record_type: str, fold: ObjectFold | None = None,
             columns: Sequence[str] | None = None) -> DataFrame:
        """One record type (only `columns`, if given: the data source decodes and ships every column it is told
        of), or with a `fold` (s3source.ObjectFold) the fold of the columns it reads, as they are read."""
        schema = fold.reads if fold is not None else records.spark_ddl(record_type, columns)
        return read_keys(spark, self.spec, self.of(record_type), schema, fold)


def read_raw(spark: SparkSession, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
             record_type: str, fold: ObjectFold | None = None) -> DataFrame:
    """One record type of the given configs and runs (a job reading several lists once: RawObjects)."""
    return RawObjects.list(spec, campaign, configs, run_ids).read(spark, record_type, fold)


def read_campaign_raw(spark: SparkSession, spec: StoreSpec, campaign: str, record_type: str) -> DataFrame:
    """One record type of every config and run of a campaign (the query CLI's raw views)."""
    return read_objects(spark, spec, [layout.raw_campaign_prefix(campaign)], records.spark_ddl(record_type),
                        lambda key: f"/{record_type}/" in key)


def read_table(spark: SparkSession, spec: StoreSpec, table: str, campaign: str,
               config_id: str | None = None) -> DataFrame:
    """A derived table (sizing.records.TABLES) of a campaign, or of one config's partition."""
    return read_objects(spark, spec, [layout.table_prefix(table, campaign, config_id)], records.table_ddl(table))


def replace_table(frame: DataFrame, spec: StoreSpec, table: str, campaign: str,
                  configs: Sequence[str] | None = None) -> None:
    """Write a derived table, replacing the campaign partition (or, with `configs`, exactly those configs')."""
    if configs is None:
        write_table(frame, spec, table, ["campaign"], replace_prefixes=[layout.table_prefix(table, campaign)])
    else:
        write_table(frame, spec, table, ["campaign", "config_id"],
                    replace_prefixes=[layout.table_prefix(table, campaign, c) for c in configs])
