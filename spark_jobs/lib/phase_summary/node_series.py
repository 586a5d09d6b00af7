"""The node_series table (TRANSFORM, sizing.contract.records.NODE_SERIES): node_seconds' own columns, a row per node and
second. Not through Spark: read by the driver from the raw objects and written one config at a time
(write_node_series). Carried through the node fold, the JVM's cache and a collect, 10x seed scale's 10.5M rows ran
the driver's heap out; here one config's rows are held at a time."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from sizing.contract import records
from spark_jobs.lib.phase_summary.keys import Transform
from spark_jobs.lib.s3source import put_partitions
from spark_jobs.lib.series import arrow_schema
from spark_jobs.lib.tableio import RawObjects, run_prefixes

TRANSFORM = Transform("node_series", ("node_seconds",))


def node_series(rows: pa.Table) -> pa.Table:
    """node_series of node_seconds rows (aligned to node_seconds' schema): a projection and a cast."""
    schema = arrow_schema("node_series")
    return rows.select(schema.names).cast(schema)


def write_node_series(objects: RawObjects, campaign: str, configs: Sequence[str], run_ids: Sequence[str]) -> None:
    """node_series of these configs and runs into phase_summary's partitions, replacing exactly them: read by this
    process from the raw objects (objects, already listed), one config at a time."""
    partition_by = list(records.partition_columns("node_series"))
    store = objects.spec.open()
    for config in configs:
        rows = objects.of_config(config).rows("node_seconds", columns=arrow_schema("node_series").names)
        put_partitions(store, "node_series", partition_by, node_series(rows),
                       replace_prefixes=run_prefixes("node_series", campaign, [config], run_ids))
