"""Extract and load for the jobs (a library module): raw records and derived tables in the object store.

Schemas come from sizing.records (raw record types and derived tables); keys from sizing.layout. The jobs,
the GX gate and the query CLI read and write through these helpers only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession

from adapters.objectstore import StoreSpec
from sizing import layout, records
from spark_jobs.s3source import ObjectFold, read_objects, write_table


def raw_key_filter(record_type: str, run_ids: Sequence[str]) -> Callable[[str], bool]:
    runs = {f"/run={r}/" for r in run_ids}

    def keep(key: str) -> bool:
        return f"/{record_type}/" in key and any(r in key for r in runs)

    return keep


def read_raw(spark: SparkSession, spec: StoreSpec, campaign: str, configs: Sequence[str], run_ids: Sequence[str],
             record_type: str, schema: str | None = None, fold: ObjectFold | None = None) -> DataFrame:
    """One record type of the given configs and runs (never "latest"); `schema` may narrow the columns, `fold`
    maps each object's rows as they are read (s3source.ObjectFold)."""
    prefixes = [layout.raw_config_prefix(campaign, c) for c in configs]
    return read_objects(spark, spec, prefixes, schema or records.spark_ddl(record_type),
                        raw_key_filter(record_type, run_ids), fold)


def read_campaign_raw(spark: SparkSession, spec: StoreSpec, campaign: str, record_type: str) -> DataFrame:
    """One record type of every config and run of a campaign (the query CLI's raw views)."""
    return read_objects(spark, spec, [f"raw/campaign={campaign}/"], records.spark_ddl(record_type),
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
