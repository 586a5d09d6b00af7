"""What the phase_summary package's modules share: the run, phase and group keys, phase_summary's own columns for a
fold that yields them, the fold row kinds, the phases' windows, and `Transform` (what a table module reads and
writes)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sizing.contract import records
from sizing.contract.records import (
    Column as Declared,  # a fold's column: name, type, meaning (pyspark's Column is another)
)
from spark_jobs.lib.s3source import ddl_to_arrow

RUN_COLS = [c.name for c in records.RUN_KEY]
PHASE_KEY = [*RUN_COLS, "phase"]
# Issue 14: client figures are per workload group; broker, event and node figures per phase (the cluster's).
GROUP_KEY = [*PHASE_KEY, "group"]
RUN_KEY_DDL = records.columns_ddl(records.RUN_KEY)  # derived: the run key is declared once (sizing.contract.records)
# Issue 47: every intermediate schema below is declared as columns (sizing.contract.records.Column) beside the fold that
# yields it, and its DDL derived from them (records.columns_ddl); none is spelled as a DDL string.
_SUMMARY = {c.name: c for c in records.PHASE_SUMMARY}


def summary_columns(*names: str) -> tuple[Declared, ...]:
    """phase_summary's own columns (sizing.contract.records.PHASE_SUMMARY), for a fold that yields them as they are."""
    return tuple(_SUMMARY[name] for name in names)


def union_ddl(*ddls: str) -> str:
    """The columns of several DDLs, each name once (the first DDL's type)."""
    seen: set[str] = set()
    parts = []
    for ddl in ddls:
        for part in ddl.split(", "):
            name = part.split()[0].strip("`")
            if name not in seen:
                seen.add(name)
                parts.append(part)
    return ", ".join(parts)


PARTIAL, SERIES, CHECK = "partial", "series", "check"


def rows_of(folded: DataFrame, kind: str, ddl: str) -> DataFrame:
    """One kind of a fold's rows (FOLDED_DDL), with that kind's columns (`ddl`)."""
    return folded.filter(F.col("kind") == kind).select(*ddl_to_arrow(ddl).names)


def with_group(frame: DataFrame) -> DataFrame:
    """Records written before workload groups have no group: they are the implicit one (records.DEFAULT_GROUP)."""
    if "group" not in frame.columns:
        frame = frame.withColumn("group", F.lit(None).cast("string"))
    return frame.withColumn("group", F.coalesce(F.col("group"), F.lit(records.DEFAULT_GROUP)))


def with_group_rows(table: pa.Table) -> pa.Table:
    """with_group on Arrow rows: records written before workload groups are the implicit one."""
    group = table.column("group") if "group" in table.column_names else pa.nulls(table.num_rows, pa.string())
    table = table.drop_columns(["group"]) if "group" in table.column_names else table
    return table.append_column("group", pc.fill_null(group, records.DEFAULT_GROUP))


WINDOW_COLUMNS = ["start_s", "warmup_s", "duration_s"]


def phase_windows(phases: DataFrame) -> list[list]:
    """Each phase's window, as the node fold takes them (every workload group has the same: one per phase)."""
    window = (phases.select(*PHASE_KEY, *WINDOW_COLUMNS).dropDuplicates(PHASE_KEY).dropna()).toArrow()
    return [list(row.values()) for row in window.to_pylist()]


@dataclass(frozen=True)
class Transform:
    """One table module's transform, declared (issue 47: a module per table): `output`, the table it yields
    (sizing.contract.records.TABLES), and `inputs`, the raw record types it is computed from
    (sizing.contract.records.RECORD_TYPES)."""

    output: str
    inputs: tuple[str, ...]
