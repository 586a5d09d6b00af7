"""Spark <-> object store without hadoop-aws: a Python Data Source (Spark 4 `pyspark.sql.datasource`).

pyspark ships no S3AFileSystem and Maven is unreachable here, so objects are read and written by boto3
(or the local-directory store) inside Spark's Python workers:

- reading: objects grouped into input partitions (`read_partitions`: one per 32 objects, 16 at most); every
  object is aligned to the declared schema (columns cast, a missing column becomes nulls so that the GX
  suites, not a cryptic cast error, name it); an `ObjectFold` maps each object's rows where they are read
  (a combiner pushed into the scan: wide rows never cross into the JVM and back);
- writing: `DataSourceArrowWriter`; each task puts one Parquet object per table partition it holds
  (`layout.table_prefix`), and the driver-side commit then deletes every older object under the partitions
  it wrote (plus any listed in `replace_prefixes`). Re-running a config therefore replaces exactly that
  config's partitions: new objects land first, old ones go only after every task succeeded.

Where the cluster has S3A (EMR, images with hadoop-aws) set SIZING_SPARK_S3A=1 and the same two helpers
use plain `s3a://` paths instead; the jobs only ever call `read_objects` / `write_table`.
"""

from __future__ import annotations

import importlib
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructField, StructType, _parse_datatype_string

from adapters.objectstore import StoreSpec
from sizing import layout

FORMAT = "sizing_store"
DEFAULT_PARTITIONS = 16  # input partitions per read: a few per core, each holding many small objects
# A read of a few objects (one phases/accounting/events object per run) gets fewer partitions: each Python
# task costs more than reading a small object, so 21 objects in 16 tasks was 16 task start-ups for nothing.
MIN_OBJECTS_PER_PARTITION = 32


def use_s3a(env: dict[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("SIZING_SPARK_S3A", "") in ("1", "true", "yes")


BATCH_ROWS = 65536


def _coalesce(tables: Iterator, rows: int) -> Iterator:  # (Iterator[pyarrow.Table], int) -> Iterator[RecordBatch]
    """Consecutive small tables as record batches of about `rows` rows (never splitting a table)."""
    import pyarrow as pa

    pending: list = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        if held >= rows:
            yield from pa.concat_tables(pending).combine_chunks().to_batches()
            pending, held = [], 0
    if pending:
        yield from pa.concat_tables(pending).combine_chunks().to_batches()


class ObjectPartition(InputPartition):
    """A few objects read by one task: per-task overhead (~0.1 s for a Python task) dwarfs a small object."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def chunk_keys(keys: Sequence[str], max_partitions: int) -> list[list[str]]:
    """Split keys into at most `max_partitions` contiguous groups of near-equal size (layout order kept)."""
    keys = list(keys)
    if not keys:
        return []
    n = max(1, min(max_partitions, len(keys)))
    size, extra = divmod(len(keys), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(keys[start:end])
        start = end
    return out


def align_to_schema(table, schema):  # (pyarrow.Table, pyarrow.Schema) -> pyarrow.Table
    """Cast present columns, add missing ones as nulls, drop extra ones: every object reads the same way."""
    import pyarrow as pa

    columns = []
    for fld in schema:
        if fld.name in table.column_names:
            columns.append(table.column(fld.name).cast(fld.type))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


@dataclass(frozen=True)
class ObjectFold:
    """A map applied to every object's rows as they are read, before they reach the JVM.

    `function` names ("module:name") an `Iterator[pyarrow.RecordBatch] -> Iterator[pyarrow.RecordBatch]`, the
    same signature `DataFrame.mapInArrow` takes, so that with S3A (no Python reader) it runs as exactly that;
    `schema` (DDL) is what it yields.
    """

    function: str
    schema: str

    def load(self) -> Callable[[Iterator], Iterator]:
        return load_function(self.function)


def load_function(path: str) -> Callable:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


class StoreReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.spec = StoreSpec.from_json(options["store"])
        self.keys: list[str] = json.loads(options.get("keys", "[]"))
        self.prefixes: list[str] = json.loads(options.get("prefixes", "[]"))
        self.max_partitions = int(options.get("partitions", DEFAULT_PARTITIONS))
        self.schema = schema  # what the read yields: the objects' schema, or the fold's
        # With a fold, the objects are read with their own schema (JSON: the workers have no JVM to parse DDL).
        self.object_schema = StructType.fromJson(json.loads(options["object_schema"])) \
            if "object_schema" in options else schema
        self.fold = options.get("fold")

    def partitions(self) -> Sequence[InputPartition]:
        keys = list(self.keys)
        if self.prefixes:
            store = self.spec.open()
            for prefix in self.prefixes:
                keys.extend(k for k in store.list(prefix) if k.endswith(".parquet"))
        return [ObjectPartition(chunk) for chunk in chunk_keys(sorted(set(keys)), self.max_partitions)]

    def read(self, partition: InputPartition) -> Iterator:
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, ObjectPartition)
        store = self.spec.open()
        schema = to_arrow_schema(self.object_schema)
        # Only the declared columns are decoded: a narrow schema reads a fraction of a wide object.
        tables = (align_to_schema(store.read_parquet(key, columns=schema.names), schema) for key in partition.keys)
        if self.fold is None:
            for table in tables:
                yield from table.to_batches(max_chunksize=BATCH_ROWS)
            return
        fold = load_function(self.fold)
        for batch in _coalesce(tables, BATCH_ROWS):  # a fold call costs ~20 ms however few its rows: batch them
            yield from fold(iter([batch]))


@dataclass
class WrittenObjects(WriterCommitMessage):
    keys: list[str] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)


def partition_prefix(table: str, partition_by: Sequence[str], values: Sequence[str]) -> str:
    """`tables/<table>/campaign=C/` or `tables/<table>/campaign=C/config=K/` (sizing.layout)."""
    by = dict(zip(partition_by, values, strict=True))
    return layout.table_prefix(table, by["campaign"], by.get("config_id"))


class StoreWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.spec = StoreSpec.from_json(options["store"])
        self.table = options["table"]
        self.partition_by = [c for c in options.get("partition_by", "campaign").split(",") if c]
        self.replace_prefixes: list[str] = json.loads(options.get("replace_prefixes", "[]"))
        self.overwrite = overwrite

    def write(self, iterator: Iterator) -> WrittenObjects:
        import pyarrow as pa
        import pyarrow.compute as pc

        batches = list(iterator)
        if not batches:
            return WrittenObjects()
        table = pa.Table.from_batches(batches)
        if table.num_rows == 0:
            return WrittenObjects()
        store = self.spec.open()
        message = WrittenObjects()
        groups = table.group_by(self.partition_by).aggregate([]).to_pylist()
        task = uuid.uuid4().hex[:12]
        for group in groups:
            mask = None
            for col in self.partition_by:
                eq = pc.equal(table.column(col), group[col])
                mask = eq if mask is None else pc.and_(mask, eq)
            prefix = partition_prefix(self.table, self.partition_by, [str(group[c]) for c in self.partition_by])
            key = f"{prefix}part-{task}.parquet"
            store.put_parquet(key, table.filter(mask))
            message.keys.append(key)
            message.prefixes.append(prefix)
        return message

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        written = {k for m in messages if isinstance(m, WrittenObjects) for k in m.keys}
        touched = {p for m in messages if isinstance(m, WrittenObjects) for p in m.prefixes}
        if not self.overwrite:
            return
        store = self.spec.open()
        for prefix in sorted(touched | set(self.replace_prefixes)):
            stale = [k for k in store.list(prefix) if k not in written]
            store.delete(stale)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        written = [k for m in messages if isinstance(m, WrittenObjects) for k in m.keys]
        self.spec.open().delete(written)


class StoreDataSource(DataSource):
    """`spark.read.format("sizing_store").schema(ddl).option("store", spec_json).option("prefixes", json)`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        raise ValueError("sizing_store needs an explicit schema (raw schemas come from sizing.records)")

    def reader(self, schema: StructType) -> DataSourceReader:
        return StoreReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> StoreWriter:
        return StoreWriter(dict(self.options), overwrite)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(StoreDataSource)


# ------------------------------------------------------------------------------ what the jobs call


def list_objects(spec: StoreSpec, prefixes: Sequence[str],
                 key_filter: Callable[[str], bool] | None = None) -> list[str]:
    store = spec.open()
    keys = {k for p in prefixes for k in store.list(p) if k.endswith(".parquet")}
    return sorted(k for k in keys if key_filter is None or key_filter(k))


def read_objects(spark: SparkSession, spec: StoreSpec, prefixes: Sequence[str], schema: str | StructType,
                 key_filter: Callable[[str], bool] | None = None, fold: ObjectFold | None = None) -> DataFrame:
    """Every Parquet object under `prefixes` (that `key_filter` keeps), read with the declared schema, and with a
    `fold` mapped object by object (the frame then has the fold's schema)."""
    keys = list_objects(spec, prefixes, key_filter)
    if isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    # stored objects may lack a column: read everything as nullable
    schema = StructType([StructField(f.name, f.dataType, True) for f in schema.fields])
    if not keys:
        return spark.createDataFrame([], fold.schema if fold is not None else schema)
    if use_s3a():
        frame = spark.read.schema(schema).parquet(*[f"s3a://{spec.bucket}/{k}" for k in keys])
        return frame.mapInArrow(fold.load(), fold.schema) if fold is not None else frame
    reader = (spark.read.format(FORMAT).option("store", spec.to_json()).option("keys", json.dumps(keys))
              .option("partitions", str(read_partitions(len(keys)))))
    if fold is None:
        return reader.schema(schema).load()
    return (reader.schema(fold.schema).option("object_schema", schema.json()).option("fold", fold.function)
            .load())


def read_partitions(objects: int) -> int:
    """Input partitions for a read of `objects` objects: one per MIN_OBJECTS_PER_PARTITION, DEFAULT_PARTITIONS
    at most (so a large read still spreads over both cores)."""
    return max(1, min(DEFAULT_PARTITIONS, -(-objects // MIN_OBJECTS_PER_PARTITION)))


def write_table(df: DataFrame, spec: StoreSpec, table: str, partition_by: Sequence[str],
                replace_prefixes: Sequence[str] = ()) -> None:
    """Overwrite exactly the partitions present in `df` (and `replace_prefixes`), leave every other one alone."""
    if use_s3a():
        _write_table_s3a(df, spec, table, partition_by, replace_prefixes)
        return
    (df.write.format(FORMAT).mode("overwrite").option("store", spec.to_json()).option("table", table)
     .option("partition_by", ",".join(partition_by)).option("replace_prefixes", json.dumps(list(replace_prefixes)))
     .save())


def _write_table_s3a(df: DataFrame, spec: StoreSpec, table: str, partition_by: Sequence[str],
                     replace_prefixes: Sequence[str]) -> None:
    from pyspark.sql import functions as F

    groups = [tuple(str(r[c]) for c in partition_by) for r in df.select(*partition_by).distinct().collect()]
    prefixes = {partition_prefix(table, partition_by, g): g for g in groups}
    store = spec.open()
    for prefix in sorted(set(replace_prefixes) - set(prefixes)):
        store.delete(store.list(prefix))
    for prefix, values in prefixes.items():
        cond = None
        for col, value in zip(partition_by, values, strict=True):
            eq = F.col(col) == value
            cond = eq if cond is None else cond & eq
        df.filter(cond).write.mode("overwrite").parquet(f"s3a://{spec.bucket}/{prefix}")
