"""The node fold (shared by phase_summary's resource columns and the raw gate): node_seconds folded where read, per
node phase, into partial rows of sums and counts and the raw gate's check rows (NODE_FOLDED_DDL).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame

from sizing.contract import records
from sizing.contract.records import (
    Column as Declared,  # a fold's column: name, type, meaning (pyspark's Column is another)
)
from sizing.resources.disks import VOLUME_ROLES
from spark_jobs.lib import gate
from spark_jobs.lib.phase_summary.keys import (
    CHECK,
    PARTIAL,
    PHASE_KEY,
    WINDOW_COLUMNS,
    phase_windows,
    rows_of,
    union_ddl,
)
from spark_jobs.lib.s3source import align_to_schema, ddl_to_arrow, gathered
from spark_jobs.lib.tableio import ObjectFold

# What the node fold reads of node_seconds (the reader has no column pruning): the figures and the gate's checks.
ROLE_FIGURES = [f"{role}_write_{what}_per_s" for role in VOLUME_ROLES for what in ("bytes", "ops")]
NODE_COLUMNS = list(dict.fromkeys([
    *PHASE_KEY, "second", "node", "target", "missing", "shared_cores", "cpu_busy", "machine_cpu_busy_s",
    "machine_cores", "run_queue", "disk_write_bytes_per_s", "disk_read_bytes_per_s", "disk_write_ops_per_s",
    "net_in_bytes_per_s", "net_out_bytes_per_s", "client_in_bytes_per_s", "client_out_bytes_per_s",
    "internode_in_bytes_per_s", "internode_out_bytes_per_s", "nic_in_bytes_per_s", "nic_out_bytes_per_s",
    *ROLE_FIGURES, *gate.NODE_CHECK_READS]))


def _sum(frame: pd.DataFrame, *columns: str) -> pd.Series:
    """Spark SQL's a + b: null when either is."""
    return sum((frame[c] for c in columns[1:]), frame[columns[0]])


# Each node's means over its present steady seconds (nulls skipped, as Spark's avg): name -> figure of a row.
NODE_MEANS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "cpu": lambda f: f["cpu_busy"],
    "machine": lambda f: (f["machine_cpu_busy_s"] / f["machine_cores"]).replace([np.inf, -np.inf], np.nan),
    "write_bytes": lambda f: f["disk_write_bytes_per_s"],
    "read_bytes": lambda f: f["disk_read_bytes_per_s"],
    "write_ops": lambda f: f["disk_write_ops_per_s"],
    "net_bytes": lambda f: _sum(f, "net_in_bytes_per_s", "net_out_bytes_per_s"),
    "client_bytes": lambda f: _sum(f, "client_in_bytes_per_s", "client_out_bytes_per_s"),
    "internode_bytes": lambda f: _sum(f, "internode_in_bytes_per_s", "internode_out_bytes_per_s"),
    "nic_in": lambda f: f["nic_in_bytes_per_s"].fillna(f["net_in_bytes_per_s"]),
    "nic_out": lambda f: f["nic_out_bytes_per_s"].fillna(f["net_out_bytes_per_s"]),
    **{f"{role}_{what}": (lambda column: lambda f: f[column])(f"{role}_write_{what}_per_s")
       for role in VOLUME_ROLES for what in ("bytes", "ops")},
}
NODE_KEY = [*PHASE_KEY, "node"]
# One row per node phase (a node phase split over two fold calls: two rows): its steady and present seconds, the
# sums and counts of each mean, and its present cpu_busy values (float64: the p95 is exact).
NODE_PHASE = (*records.RUN_KEY,
    Declared("phase", "int32", "phase"),
    Declared("node", "string", "node name"),
    Declared("steady_rows", "int64", "the node's rows in the phase's steady window"),
    Declared("seconds", "int64", "of them, the present ones (not missing)"),
    Declared("missing_seconds", "int64", "of them, the missing ones"),
    Declared("target", "string", "local | aws"),
    Declared("shared", "int32", "1: the node shared its cores with the load generator"))
NODE_PARTIAL_COLUMNS = (*NODE_PHASE,
    Declared("run_queue_max", "float64", "highest run queue"),
    Declared("cpu_values", "binary", "the present cpu_busy values, <f8 array"),
    *(column for m in NODE_MEANS for column in (
        Declared(f"{m}_sum", "float64", f"sum of the node's {m} figures (NODE_MEANS)"),
        Declared(f"{m}_n", "int64", f"count of the node's {m} figures"))))
NODE_PARTIAL_DDL = records.columns_ddl(NODE_PARTIAL_COLUMNS)


NODE_FOLDED_DDL = union_ddl(NODE_PARTIAL_DDL, records.columns_ddl((
    Declared("kind", "string", "which of the fold's row kinds: partial | check"),)), gate.NODE_CHECK_DDL)


def fold_node_seconds(batches: Iterator[pa.RecordBatch], arguments: list[list], whole_directories: bool = False
                      ) -> Iterator[pa.RecordBatch]:
    """Combiner of raw node_seconds where they are read (NODE_FOLDED_DDL): per node phase, its partial row over the
    phase's steady window (`arguments`: the windows, [*PHASE_KEY, start_s, warmup_s, duration_s] per phase: the
    rows do not know them), and the raw gate's check row (gate.node_checks). ~500 rows of a node phase become 2.
    Its rows fold however they are split: `whole_directories` is not needed."""
    windows = pd.DataFrame(arguments, columns=[*PHASE_KEY, *WINDOW_COLUMNS])
    out_schema = ddl_to_arrow(NODE_FOLDED_DDL)
    for table in gathered(batches):
        frame = table.to_pandas()
        for kind, folded in ((PARTIAL, _node_partials(frame, windows)), (CHECK, gate.node_checks(frame))):
            folded = folded.append_column("kind", pa.array([kind] * folded.num_rows, pa.string()))
            yield from align_to_schema(folded, out_schema).to_batches()


def _node_partials(frame: pd.DataFrame, windows: pd.DataFrame) -> pa.Table:
    # A second is steady inside its phase's window past the warm-up (a row of no known phase never is); present
    # when steady and not missing (a null `missing` is neither, as in Spark SQL).
    rows = frame.merge(windows, on=PHASE_KEY, how="left")
    second = rows["second"]
    steady = ((second >= rows["start_s"] + rows["warmup_s"]) & (second < rows["start_s"] + rows["duration_s"]))
    present = steady & rows["missing"].eq(False)
    gid = rows.groupby(NODE_KEY, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    groups = int(gid.max()) + 1 if len(gid) else 0
    out = rows.groupby(gid)[NODE_KEY].first()

    def count(mask: pd.Series) -> np.ndarray:
        return np.bincount(gid, weights=mask.to_numpy(bool), minlength=groups).astype(np.int64)

    out["steady_rows"], out["seconds"] = count(steady), count(present)
    out["missing_seconds"] = count(steady & rows["missing"].eq(True))
    out["target"] = rows["target"].where(steady).groupby(gid).first()
    out["shared"] = rows["shared_cores"].where(steady).astype("float64").groupby(gid).max()
    out["run_queue_max"] = rows["run_queue"].where(steady).groupby(gid).max()
    cpu = rows["cpu_busy"].where(present)
    held = cpu.notna().to_numpy()
    values, owners = cpu.to_numpy(float)[held], gid[held]
    order = np.argsort(owners, kind="stable")
    out["cpu_values"] = gate.blobs_per_group(owners[order], values[order].astype("<f8"), groups)
    for name, figure in NODE_MEANS.items():
        value = figure(rows).where(present)
        out[f"{name}_sum"] = value.groupby(gid).sum()
        out[f"{name}_n"] = value.notna().groupby(gid).sum()
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(NODE_PARTIAL_DDL),
                                preserve_index=False)


@dataclass(frozen=True)
class NodeRecords:
    """node_seconds as phase_summary reads it: `partials`, each node phase folded where read (NODE_PARTIAL_DDL),
    and the raw gate's `checks` (gate.NODE_CHECK_DDL). node_series is not among them: it is node_seconds' own
    columns, written from the raw objects by the driver (node_series.write_node_series), never through the JVM."""

    partials: DataFrame
    checks: DataFrame
    cached: DataFrame | None = None  # what `release` drops once the table is written

    @classmethod
    def folded(cls, folded: DataFrame) -> NodeRecords:
        """Both from one fold's output (NODE_FOLDED_DDL), cached: the summary and the gate read it."""
        folded = folded.persist()
        return cls(rows_of(folded, PARTIAL, NODE_PARTIAL_DDL), rows_of(folded, CHECK, gate.NODE_CHECK_DDL), folded)

    @classmethod
    def of(cls, node_seconds: DataFrame, phases: DataFrame) -> NodeRecords:
        """From raw node_seconds rows already in Spark (as the tests build them): the fold as a mapInArrow."""
        fold = functools.partial(fold_node_seconds, arguments=phase_windows(phases))
        return cls.folded(node_seconds.mapInArrow(fold, NODE_FOLDED_DDL))

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()


# The node fold reads NODE_COLUMNS of node_seconds; its windows are bound per read (NodeRecords, run).
NODE_FOLD = ObjectFold("spark_jobs.lib.phase_summary.node_fold:fold_node_seconds", NODE_FOLDED_DDL,
                       records.spark_ddl("node_seconds", NODE_COLUMNS))
