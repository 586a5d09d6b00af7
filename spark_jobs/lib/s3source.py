"""Spark <-> object store without hadoop-aws: a Python Data Source (Spark 4 `pyspark.sql.datasource`).

pyspark ships no S3AFileSystem and Maven is unreachable here, so objects are read and written by boto3
(or the local-directory store) inside Spark's Python workers:

- reading: objects grouped into input partitions (`read_partitions`: one per 32 objects, 16 at most); every
  object is aligned to the declared schema (columns cast, a missing column becomes nulls so that the GX
  suites, not a cryptic cast error, name it); an `ObjectFold` maps each object's rows where they are read
  (a combiner pushed into the scan: wide rows never cross into the JVM and back); a read of a few objects
  without a fold is read by the driver instead (`read_in_driver`, aligned the same way: through the data
  source it would cost a Python planner process and a Python task, each more than the objects);
- writing: derived tables are small, so the driver collects one as Arrow and puts one Parquet object per
  table partition (`layout.table_prefix`), then deletes every older object under the partitions it wrote (plus
  any listed in `replace_prefixes`). Re-running a config therefore replaces exactly that config's partitions:
  new objects land first, old ones go only after every new one is in.

Where the cluster has S3A (EMR, images with hadoop-aws) set SIZING_SPARK_S3A=1 and the same two helpers
use plain `s3a://` paths instead; the jobs only ever read and write through `tableio`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructField, StructType, _parse_datatype_string

from adapters.objectstore import ObjectStore, StoreSpec
from sizing.contract import layout

FORMAT = "sizing_store"
DEFAULT_PARTITIONS = 16  # input partitions per read: a few per core, each holding many small objects
# A read of a few objects (one phases/accounting/events object per run) gets fewer partitions: each Python
# task costs more than reading a small object, so 21 objects in 16 tasks was 16 task start-ups for nothing.
MIN_OBJECTS_PER_PARTITION = 32
# A fold-less read of at most this many objects is read by the driver (read_in_driver): the data source would
# cost it a Python planner process and a Python task, each more than reading a few small objects.
DRIVER_READ_MAX_OBJECTS = MIN_OBJECTS_PER_PARTITION
DRIVER_READ_THREADS = 4  # objects a driver-side read (read_arrow) fetches and decodes at once


def use_s3a(env: dict[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("SIZING_SPARK_S3A", "") in ("1", "true", "yes")


BATCH_ROWS = 65536


def gathered(batches: Iterator, rows: int = BATCH_ROWS) -> Iterator:  # Iterator[RecordBatch] -> Iterator[Table]
    """Consecutive record batches as tables of about `rows` rows, each batch a chunk (nothing copied). A fold
    gathers what it is handed so: its call on a table costs ~20 ms however few the rows, and an object is a few
    hundred; concatenating the chunks would copy every histogram byte."""
    for table, _, _ in gathered_whole(batches, [], rows):  # no key: a cut at every batch boundary
        yield table


# A key's rows are cut into two tables only beyond this many rows (a phase of ~100 workers x 10,000 s).
WHOLE_KEY_MOST_ROWS = 16 * BATCH_ROWS


def gathered_whole(batches: Iterator, key: Sequence[str], rows: int = BATCH_ROWS,
                   most: int = WHOLE_KEY_MOST_ROWS) -> Iterator:  # -> Iterator[tuple[Table, bool, bool]]
    """As `gathered`, cutting only where the `key` columns' values change between two batches (batches in key
    order: a key's rows in one table), unless a table would exceed `most` rows. Yields (table, opens_inside,
    closes_inside): whether its first row's key may also have rows in the table before, its last row's in the table
    after (an empty `key` changes at every batch: never inside)."""
    import pyarrow as pa

    pending: list = []
    held, opens_inside, last_key = 0, False, None

    def key_at(batch, row: int) -> tuple:
        return tuple(batch.column(name)[row].as_py() for name in key)

    for batch in batches:
        if batch.num_rows and pending and (held >= rows or opens_inside):  # opened inside a key: ends with it
            changes = not key or last_key != key_at(batch, 0)
            if changes or held >= most:
                yield pa.Table.from_batches(pending), opens_inside, not changes
                pending, held, opens_inside = [], 0, not changes
        pending.append(batch)  # an empty batch too: a fold of nothing still yields its schema
        held += batch.num_rows
        if batch.num_rows and key:
            last_key = key_at(batch, batch.num_rows - 1)
    if pending:
        yield pa.Table.from_batches(pending), opens_inside, False


class ObjectPartition(InputPartition):
    """A few objects read by one task: per-task overhead (~0.1 s for a Python task) dwarfs a small object."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def chunk_keys(keys: Sequence[str], max_partitions: int) -> list[list[str]]:
    """Split keys into at most `max_partitions` contiguous groups of near-equal size (layout order kept), never
    splitting a directory's keys: a raw directory holds one phase of one record type of a run (every worker's
    object, sizing.contract.raw_layout), and a fold that gets whole phases need not ship what another task may also
    hold."""
    keys = list(keys)
    if not keys:
        return []
    directories = [k.rpartition("/")[0] for k in keys]
    ends = [i + 1 for i in range(len(keys) - 1) if directories[i] != directories[i + 1]] + [len(keys)]
    n = max(1, min(max_partitions, len(ends)))
    out, start = [], 0
    for i in range(1, n):  # each cut at the directory end nearest to an equal share
        end = min((e for e in ends if e > start), key=lambda e: abs(e - i * len(keys) / n))
        if end == len(keys):
            break
        out.append(keys[start:end])
        start = end
    return [*out, keys[start:]]


def fold_input_schema(schema):  # (pyarrow.Schema) -> pyarrow.Schema
    """`schema` as a fold is handed it: strings dictionary-encoded (a fold only groups by them, and each is one
    value per object: decoded once, not once per row, and cheap for pandas)."""
    import pyarrow as pa

    return pa.schema([f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.type == pa.string() else f
                      for f in schema])


def read_for_fold(store: ObjectStore, key: str, schema):  # (..., pyarrow.Schema) -> pyarrow.Table
    """An object as a fold is handed it, whoever reads it (the data source, or read_arrow in the driver): aligned
    to fold_input_schema(`schema`)."""
    import pyarrow as pa

    strings = [f.name for f in schema if f.type == pa.string()]
    return align_to_schema(store.read_parquet(key, columns=schema.names, use_threads=False, dictionary=strings),
                           fold_input_schema(schema))


def align_to_schema(table, schema):  # (pyarrow.Table, pyarrow.Schema) -> pyarrow.Table
    """Cast present columns, add missing ones as nulls, drop extra ones: every object reads the same way."""
    import pyarrow as pa

    columns = []
    for fld in schema:
        if fld.name in table.column_names:
            column = table.column(fld.name)
            columns.append(column if column.type == fld.type else column.cast(fld.type))
        else:
            columns.append(pa.nulls(table.num_rows, fld.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


@dataclass(frozen=True)
class ObjectFold:
    """A map applied to every object's rows as they are read, before they reach the JVM.

    `function` names ("module:name") an `Iterator[pyarrow.RecordBatch] -> Iterator[pyarrow.RecordBatch]`, the
    same signature `DataFrame.mapInArrow` takes, so that with S3A (no Python reader) it runs as exactly that;
    `reads` (DDL) is what it needs of the objects (only those columns are decoded), `schema` (DDL) what it yields.
    `arguments` (JSON, optional): what the job knows and the rows do not (phase windows, say), passed to the
    function after the batches (`with_arguments`). The data source also passes `whole_directories=True`: it reads
    each directory's objects in one call, in key order (chunk_keys); a mapInArrow (S3A) cannot, and does not.
    """

    function: str
    schema: str
    reads: str
    arguments: str | None = None

    def with_arguments(self, arguments: object) -> ObjectFold:
        return dataclasses.replace(self, arguments=json.dumps(arguments))

    def load(self) -> Callable[[Iterator], Iterator]:
        return bound_function(self.function, self.arguments)


def bound_function(path: str, arguments: str | None) -> Callable[[Iterator], Iterator]:
    """The fold function `path`, given its JSON `arguments` (if any) after the batches."""
    function = load_function(path)
    return function if arguments is None else functools.partial(function, arguments=json.loads(arguments))


def load_function(path: str) -> Callable:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


class StoreReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.spec = StoreSpec.from_json(options["store"])
        self.keys: list[str] = json.loads(options.get("keys", "[]"))  # listed by the driver (list_objects)
        self.max_partitions = int(options.get("partitions", DEFAULT_PARTITIONS))
        self.schema = schema  # what the read yields: the objects' schema, or the fold's
        # With a fold, the objects are read with their own schema (JSON: the workers have no JVM to parse DDL).
        self.object_schema = StructType.fromJson(json.loads(options["object_schema"])) \
            if "object_schema" in options else schema
        self.fold = options.get("fold")
        self.fold_arguments = options.get("fold_arguments")

    def partitions(self) -> Sequence[InputPartition]:
        return [ObjectPartition(chunk) for chunk in chunk_keys(sorted(set(self.keys)), self.max_partitions)]

    def read(self, partition: InputPartition) -> Iterator:
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, ObjectPartition)
        store = self.spec.open()
        schema = to_arrow_schema(self.object_schema)
        if self.fold is None:
            # Only the declared columns are decoded: a narrow schema reads a fraction of a wide object.
            for key in partition.keys:
                yield from align_to_schema(store.read_parquet(key, columns=schema.names), schema).to_batches(
                    max_chunksize=BATCH_ROWS)
            return
        tables = (read_for_fold(store, key, schema) for key in partition.keys)
        # One fold call over every object of the partition, batch by batch: the fold gathers them (gathered).
        yield from bound_function(self.fold, self.fold_arguments)(
            (batch for table in tables for batch in table.to_batches()), whole_directories=True)


def partition_prefix(table: str, partition_by: Sequence[str], values: Sequence[str]) -> str:
    """`tables/<table>/campaign=C/run=R/` or `tables/<table>/campaign=C/config=K/run=R/` (sizing.contract.layout)."""
    by = dict(zip(partition_by, values, strict=True))
    return layout.table_prefix(table, by["campaign"], by.get("config_id"), by.get("run_id"))


def put_partitions(store: ObjectStore, table: str, partition_by: Sequence[str], rows,
                   replace_prefixes: Sequence[str] = ()) -> list[str]:  # rows: pyarrow.Table
    """One object per partition present in `rows`, then every older object under those partitions and under
    `replace_prefixes` deleted: new objects land first, old ones go only after every new one is in. Returns the
    keys written (none are left behind when a put fails)."""
    import pyarrow.compute as pc

    tag = uuid.uuid4().hex[:12]
    written: list[str] = []
    touched: set[str] = set()
    groups = rows.group_by(list(partition_by)).aggregate([]).to_pylist() if rows.num_rows else []
    try:
        for group in groups:
            mask = None
            for col in partition_by:
                eq = pc.equal(rows.column(col), group[col])
                mask = eq if mask is None else pc.and_(mask, eq)
            prefix = partition_prefix(table, partition_by, [str(group[c]) for c in partition_by])
            key = layout.part_key(prefix, tag)
            store.put_parquet(key, rows.filter(mask))
            written.append(key)
            touched.add(prefix)
    except BaseException:
        store.delete(written)
        raise
    for prefix in sorted(touched | set(replace_prefixes)):
        store.delete([k for k in store.list(prefix) if k not in written])
    return written


class StoreDataSource(DataSource):
    """`spark.read.format("sizing_store").schema(ddl).option("store", spec_json).option("keys", json)`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        raise ValueError("sizing_store needs an explicit schema (raw schemas come from sizing.contract.records)")

    def reader(self, schema: StructType) -> DataSourceReader:
        return StoreReader(dict(self.options), schema)


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
    """Every Parquet object under `prefixes` (that `key_filter` keeps): `read_keys` of what is listed."""
    return read_keys(spark, spec, list_objects(spec, prefixes, key_filter), schema, fold)


def read_keys(spark: SparkSession, spec: StoreSpec, keys: Sequence[str], schema: str | StructType,
              fold: ObjectFold | None = None) -> DataFrame:
    """The Parquet objects `keys`, read with the declared schema, and with a `fold` mapped over their rows (the
    frame then has the fold's schema)."""
    if isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    # stored objects may lack a column: read everything as nullable
    schema = StructType([StructField(f.name, f.dataType, True) for f in schema.fields])
    if not keys:
        return spark.createDataFrame([], fold.schema if fold is not None else schema)
    if use_s3a():
        frame = spark.read.schema(schema).parquet(*[f"s3a://{spec.bucket}/{k}" for k in keys])
        return frame.mapInArrow(fold.load(), fold.schema) if fold is not None else frame
    if fold is None and len(keys) <= DRIVER_READ_MAX_OBJECTS:
        return read_in_driver(spark, spec, keys, schema)
    reader = (spark.read.format(FORMAT).option("store", spec.to_json()).option("keys", json.dumps(list(keys)))
              .option("partitions", str(read_partitions(len(keys)))))
    if fold is None:
        return reader.schema(schema).load()
    reader = reader.schema(fold.schema).option("object_schema", schema.json()).option("fold", fold.function)
    return (reader if fold.arguments is None else reader.option("fold_arguments", fold.arguments)).load()


def read_in_driver(spark: SparkSession, spec: StoreSpec, keys: Sequence[str], schema: StructType) -> DataFrame:
    """A few objects (the phases, accounting or events of the runs one job reads, a table's config partitions),
    aligned to the schema as the data source aligns them, read by the driver and handed to Spark as Arrow."""
    from pyspark.sql.pandas.types import to_arrow_schema

    table = read_arrow(spec, keys, to_arrow_schema(schema))
    # One chunk per column: given a chunk per object, createDataFrame (pyspark 4.3) drops every row after an
    # empty chunk that is not the first (an events object of a run without events; the test has one).
    return spark.createDataFrame(table.combine_chunks(), schema)


def read_arrow(spec: StoreSpec, keys: Sequence[str], schema, fold: Callable[[Iterator], Iterator] | None = None,
               threads: int = DRIVER_READ_THREADS):  # (..., pyarrow.Schema, ...) -> pyarrow.Table
    """The objects `keys` read by this process, aligned to `schema` as the data source aligns them, with `fold`
    (an ObjectFold's kind of function) mapped over the rows read (fold_table): for a caller that wants the rows
    themselves, not a Spark frame of them. `threads` objects at a time (pyarrow decodes without the GIL)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    local = threading.local()

    def read(key: str):
        if not hasattr(local, "store"):
            local.store = spec.open()
        if fold is not None:  # the fold gets what it gets from the data source
            return read_for_fold(local.store, key, schema)
        return local.store.read_parquet(key, columns=schema.names, use_threads=False)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        read_tables = list(pool.map(read, keys))
    target = schema if fold is None else fold_input_schema(schema)
    by_schema: dict = {}  # objects written alike are aligned together: aligning costs per call, not per row
    for table in read_tables:
        by_schema.setdefault(table.schema, []).append(table)
    table = pa.concat_tables([align_to_schema(target.empty_table(), target),
                              *(align_to_schema(pa.concat_tables(group), target) for group in by_schema.values())])
    return table if fold is None else fold_table(table, fold)


def fold_table(table, fold: Callable[[Iterator], Iterator]):  # (pyarrow.Table, ...) -> pyarrow.Table
    """`fold` over a table's rows as the data source hands them to a fold: a batch per object (a table read object
    by object is a chunk per object), all in one call; an empty table is one empty batch, so the fold's schema comes
    out."""
    import pyarrow as pa

    batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    return pa.Table.from_batches(list(fold(iter(batches))))


_ARROW_TYPES = {"STRING": "string", "INT": "int32", "BIGINT": "int64", "DOUBLE": "float64", "BOOLEAN": "bool_",
                "BINARY": "binary"}


def ddl_to_arrow(ddl: str):  # -> pyarrow.Schema
    """Arrow schema of a flat `name TYPE, ...` DDL (Spark's own parser needs the JVM, which Python workers lack)."""
    import pyarrow as pa

    return pa.schema([pa.field(name.strip("`"), getattr(pa, _ARROW_TYPES[kind])()) for name, kind in
                      (part.split() for part in ddl.split(","))])


def read_partitions(objects: int) -> int:
    """Input partitions for a read of `objects` objects: one per MIN_OBJECTS_PER_PARTITION, DEFAULT_PARTITIONS
    at most (so a large read still spreads over both cores)."""
    return max(1, min(DEFAULT_PARTITIONS, -(-objects // MIN_OBJECTS_PER_PARTITION)))


def write_table(df: DataFrame, spec: StoreSpec, table: str, partition_by: Sequence[str],
                replace_prefixes: Sequence[str] = (), before_write: Callable[[], None] | None = None) -> None:
    """Overwrite exactly the partitions present in `df` (and `replace_prefixes`), leave every other one alone.
    `before_write` is called once the rows are computed and before anything is written (raising stops it).

    Derived tables are summaries (a row per phase, config or group: a few thousand at seed scale), so the
    driver collects the frame as Arrow and puts the objects itself (`put_partitions`); a Python data source
    writer cost every write two Python processes (its planning and its commit) and a task."""
    if use_s3a():
        if before_write is not None:
            before_write()
        _write_table_s3a(df, spec, table, partition_by, replace_prefixes)
        return
    rows = df.toArrow()
    if before_write is not None:
        before_write()
    put_partitions(spec.open(), table, partition_by, rows, replace_prefixes)


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
