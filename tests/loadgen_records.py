"""A local load run's raw records read back, and a phase's client figures by phase_summary's own fold: what the
real-node tests that judge one phase (`*_cluster.py`) read of a Runner's output directory (upload off)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sizing.contract import raw_layout
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.phase_summary.client_stats import _final_client


def read_records(out: Path, runner: Any, record_type: str) -> pa.Table:
    """Every object of one record type the run wrote under `out` (loadgen.runner.Runner with upload off)."""
    files = sorted((out / raw_layout.raw_run_prefix(runner.key) / record_type).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def client_phase_row(out: Path, runner: Any, phase: int = 1) -> dict[str, Any]:
    """The phase's client figures (confirmed, consumed, the clients' ceilings, ...), folded as phase_summary folds
    them."""
    folded = pa.Table.from_batches(list(ps.fold_client_seconds(iter(read_records(out, runner, "client_seconds")
                                                                    .to_batches()))))
    partial = folded.filter(pc.and_(pc.equal(folded["kind"], ps.PARTIAL), pc.equal(folded["phase"], phase)))
    return _final_client(partial).to_pylist()[0]
