"""The per-second series tables' schemas (issue 35; sizing.contract.records): partitioned like phase_summary (per config
and run, so that a config's backfill replaces exactly its series), keyed by the run key and the second, and the raw
columns they carry over declared once (the same Column objects as the raw record type's: one home for a meaning).
Independent counter: the raw record types' own definitions and phase_summary's partitioning."""

from __future__ import annotations

from sizing.contract import records
from sizing.resources.disks import VOLUME_ROLES


def test_series_tables_are_partitioned_per_config_and_run_as_phase_summary() -> None:
    for table in records.SERIES_TABLES:
        assert table in records.TABLES and table not in records.CAMPAIGN_TABLES
        assert records.partition_columns(table) == records.partition_columns("phase_summary")
        assert records.table_columns(table)[:7] == [*(c.name for c in records.RUN_KEY), "second", "phase"]


def test_carried_over_columns_are_the_raw_record_types_own() -> None:
    raw = {"broker_series": records.BROKER_SAMPLES, "node_series": records.NODE_SECONDS}
    for table, source in raw.items():
        by_name = {c.name: c for c in source}
        shared = [c for c in records.TABLES[table] if c.name in by_name and c.name not in ("second", "phase")]
        assert len(shared) >= 10
        for column in shared:
            assert column is by_name[column.name], f"{table}.{column.name} is declared twice"
    node = records.table_columns("node_series")
    assert all(f"{role}_write_{what}_per_s" in node for role in VOLUME_ROLES for what in ("bytes", "ops"))


def test_client_series_has_every_percentile_of_both_latencies_and_one_row_key_per_group_second() -> None:
    client = records.table_columns("client_series")
    for prefix in ("e2e", "confirm"):
        assert [c for c in client if c.startswith(f"{prefix}_p")] == [f"{prefix}_{q}_ms" for q in
                                                                     ("p50", "p75", "p95", "p99", "p999")]
    assert {"group", "offered_rate", "published", "confirmed", "consumed", "publish_delay_max_ms", "blocked_ms",
            "e2e_max_ms"} <= set(client)
    assert len(client) == len(set(client))
    # a Spark DDL every engine can read: no binary (histogram) column leaves the analysis
    assert "BINARY" not in records.table_ddl("client_series")


def test_series_writes_collect_configs_in_chunks_bounded_by_their_client_objects() -> None:
    """The chunks the series are written in (a collect of all of 10x seed scale's ran the driver's heap out): in
    order, each within the bound of client_seconds objects, a config above it alone; other record types not counted.
    Known answer: configs of 5, 3, 9 and 1 objects with a bound of 8."""
    from spark_jobs.lib.series import config_chunks
    from spark_jobs.lib.tableio import RawObjects

    def keys(config: str, record_type: str, n: int) -> list[str]:
        return [f"raw/campaign=c/config={config}/scenario=s/run=r/repeat=1/{record_type}/part-{i}.parquet"
                for i in range(n)]

    objects = RawObjects(None, tuple(
        [*keys("a", "client_seconds", 5), *keys("a", "node_seconds", 50), *keys("b", "client_seconds", 3),
         *keys("c", "client_seconds", 9), *keys("d", "client_seconds", 1)]))
    assert config_chunks(objects, ["a", "b", "c", "d"], bound=8) == [["a", "b"], ["c"], ["d"]]
    assert config_chunks(objects, ["a", "b", "c", "d"], bound=100) == [["a", "b", "c", "d"]]


def test_node_series_says_where_each_seconds_cpu_came_from_and_older_objects_read_as_unknown() -> None:
    """Issue 44: cpu_source is carried from node_seconds into node_series (write_node_series' projection and cast,
    here without Spark), and node_seconds objects written before it existed read it as null, not as a source."""
    import pyarrow as pa

    from spark_jobs.lib.s3source import align_to_schema, ddl_to_arrow

    raw = records.arrow_schema("node_seconds")
    node = ddl_to_arrow(records.table_ddl("node_series"))
    assert node.field("cpu_source").type == pa.string() and raw.field("cpu_source").type == pa.string()
    row = {c.name: None for c in records.NODE_SECONDS}
    row.update(cpu_source=records.CPU_SOURCE_CGROUP, cpu_busy=0.99)
    new = pa.Table.from_pylist([row], schema=raw)
    old = new.drop_columns(["cpu_source"])
    read = [align_to_schema(t, raw).select(node.names).cast(node) for t in (new, old)]
    assert [t.column("cpu_source").to_pylist() for t in read] == [[records.CPU_SOURCE_CGROUP], [None]]
    assert read[1].column("cpu_busy").to_pylist() == [0.99]
