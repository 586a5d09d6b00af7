"""Records as written: Parquet files per sizing.contract.records schema, mirrored locally and in the object store.
(The loss / duplicate / reorder accounting is `loadgen.accounting`.)

The writer never derives anything: rows go out with exactly the columns of `sizing.contract.records` (the run key
first), typed by `records.arrow_schema`. Keys come from `sizing.contract.layout`, so the local directory is a
mirror of the bucket.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sizing.contract import raw_layout, records
from sizing.contract.layout import RunKey

LOG = logging.getLogger("loadgen.recorder")


def to_table(record_type: str, key: RunKey, rows: Sequence[Mapping[str, Any]]):  # -> pyarrow.Table
    """Rows (without the run key) -> an Arrow table of the record type's exact schema (extra keys dropped).

    Every row carries every column: a null is a value its producer chose, never a column it forgot (a missing key
    raises MissingColumnError naming the columns)."""
    import pyarrow as pa

    schema = records.arrow_schema(record_type)
    run = key.as_dict()
    columns = {}
    for f in schema:
        if f.name in run:
            columns[f.name] = [run[f.name]] * len(rows)
        else:
            try:
                columns[f.name] = [row[f.name] for row in rows]
            except KeyError:
                raise MissingColumnError(record_type, rows) from None
    return pa.Table.from_pydict(columns, schema=schema)


class MissingColumnError(ValueError):
    def __init__(self, record_type: str, rows: Sequence[Mapping[str, Any]]) -> None:
        run = {c.name for c in records.RUN_KEY}
        wanted = [name for name in records.column_names(record_type) if name not in run]
        index, row = next((i, r) for i, r in enumerate(rows) if not set(wanted) <= r.keys())
        self.missing = [name for name in wanted if name not in row]
        super().__init__(f"{record_type} row {index} lacks column(s) {self.missing}: every row names every column "
                         f"of sizing.contract.records (None where the value is unknown)")


@dataclass
class RecordStore:
    """Writes record files under `out_dir/<key>` and uploads each to S3 (unless `upload` is False)."""

    key: RunKey
    out_dir: Path
    upload: bool = True
    s3: Any = None  # adapters.objectstore.S3Settings
    uploaded: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._store: Any = None  # adapters.objectstore.ObjectStore, made on first upload
        if self.upload and self.s3 is None:
            from adapters.objectstore import S3Settings

            self.s3 = S3Settings.from_env()

    def local_path(self, object_key: str) -> Path:
        return self.out_dir / object_key

    def write_records(self, record_type: str, rows: Sequence[Mapping[str, Any]], phase: int | None = None,
                      worker: int | None = None) -> str:
        import pyarrow.parquet as pq

        from adapters.objectstore import parquet_options

        table = to_table(record_type, self.key, rows)  # first: a row lacking a column writes nothing
        object_key = raw_layout.raw_part_key(self.key, record_type, phase=phase, worker=worker)
        path = self.local_path(object_key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        pq.write_table(table, tmp, **parquet_options(table.schema))
        os.replace(tmp, path)
        self._upload(path, object_key)
        return object_key

    def write_manifest(self, manifest: Mapping[str, Any]) -> str:
        object_key = raw_layout.manifest_key(self.key)
        path = self.local_path(object_key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
        self._upload(path, object_key)
        return object_key

    def _upload(self, path: Path, object_key: str) -> None:
        if not self.upload:
            return
        try:
            if self._store is None:
                self._store = self.s3.store()
            self._store.put(object_key, path.read_bytes())
            self.uploaded.append(object_key)
        except Exception as err:
            LOG.warning("upload of %s failed: %s", object_key, err)
            self.errors.append(f"{object_key}: {err}")
