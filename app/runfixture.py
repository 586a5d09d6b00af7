"""A measured run as a compact test fixture (issue 45): one run's rows of the tables a seed verdict reads, copied out
of the object store into the repository, so that a verdict measured on one machine can be checked again anywhere.

    sizing export-run --campaign local-quick --run-id demo          # -> tests/fixtures/runs/local-quick/demo/
    run = load(Path("tests/fixtures/runs"), RunRef("local-quick", "demo"))   # sizing.judgement.seeds.RunRows

A fixture is `<root>/<campaign>/<run>/<table>.parquet` per table of FIXTURE_COLUMNS (only the columns a verdict
reads, plus the keys: tens of KB) and `meta.json` (what it ran on, which code, how it was exported). This module is
its one home: the export writes it, the tests and scripts/regen_seed_table.py read it back.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sizing.contract import records
from sizing.contract.layout import RunRef
from sizing.criteria import rules
from sizing.judgement import adverse, findings
from sizing.judgement.seeds import RunRows

DEFAULT_ROOT = Path("tests/fixtures/runs")
META = "meta.json"
_KEYS = ("campaign", "run_id", "config_id", "scenario", "repeat", "phase", "phase_name")
# Per table, the columns kept (None: every column; those tables are a row per config or scenario). phase_summary is
# the large one: what the adverse verdict, the findings, the target rule (recomputed from the rates) and the
# bottleneck read.
FIXTURE_COLUMNS: dict[str, tuple[str, ...] | None] = {
    "phase_summary": tuple(dict.fromkeys((
        *_KEYS, *adverse.VERDICT_INPUTS, *findings.INPUTS, "consume_rate", "slo_p99_ms", "rate_mode",
        *rules.BOTTLENECK_COLUMNS, "bottleneck"))),
    "adverse": None,
    "recommendation": None,
    "findings": None,
    "capacity": None,
    "capacity_repeats": None,  # each repeat's capacity figures: what a comparison of two configs reads
    "leaderboards": ("campaign", "run_id", "config_id", "nodes", "instance_type", "volume_type", "monthly_cost",
                     "top_matched_throughput", "max_matched_target_rate", "top_throughput_any_latency",
                     "met_target", "cost_per_1k_at_target", "rank_at_target", "cost_per_1k_at_top", "rank_at_top"),
    "runs": ("campaign", "run_id", "status", "spec_hash", "spec", "code_commit", "analysis_commit",
             "rabbitmq_version", "erlang_version", "configs", "target_rate", "slo_p99_ms", "repeats", "load_runs",
             "load_runs_complete", "started_at", "ended_at", "measured_on", "scale_model"),
}


def export(reader: Any, ref: RunRef, out: Path, command: str) -> Path:
    """Write the run's fixture under `out` and return its directory. `reader`: app.report.tables.TableReader (the
    report's and the demo's reader of the stored tables). A table the run has no rows of (a sizing campaign has no
    findings) is written empty, with its schema's columns, so that "no rows" is a fact of the fixture."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    campaign, run_id = ref
    target = out / campaign / run_id
    runs = reader.read_table("runs", campaign, run_id=run_id)
    if runs is None or runs.empty:
        raise LookupError(f"campaign {campaign} has no run {run_id!r} in the runs table: nothing to export")
    run = runs.iloc[0].to_dict()
    if run.get("status") != "complete":
        raise LookupError(f"run {run_id} of {campaign} is {run.get('status')}, not complete: export it when it is")
    target.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for table, wanted in FIXTURE_COLUMNS.items():
        frame = reader.read_table(table, campaign, run_id=run_id)
        columns = list(wanted if wanted is not None else records.table_columns(table))
        if frame is None:  # no rows: the declared columns, typed
            declared = [c for c in records.TABLES[table] if c.name in columns]
            arrow = records.columns_arrow_schema(declared).empty_table()
        else:
            keep = [c for c in columns if c in frame.columns]
            arrow = pa.Table.from_pandas(frame[keep].sort_values(
                [c for c in _KEYS if c in keep]).reset_index(drop=True), preserve_index=False)
        pq.write_table(arrow, target / f"{table}.parquet", compression="zstd")
        counts[table] = 0 if frame is None else len(frame)
    meta = {"campaign": campaign, "run_id": run_id, "status": run.get("status"),
            "code_commit": run.get("code_commit"), "analysis_commit": run.get("analysis_commit"),
            "measured_on": run.get("measured_on"), "scale_model": run.get("scale_model"),
            "rabbitmq_version": run.get("rabbitmq_version"), "command": command,
            "exported_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "rows": counts}
    (target / META).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return target


def load(root: Path, ref: RunRef) -> RunRows:
    """A fixture read back as plain rows (NaN as None: the pure code's convention for a missing figure)."""
    import pyarrow.parquet as pq

    where = root / ref.campaign / ref.run_id
    if not (where / META).is_file():
        raise FileNotFoundError(f"no fixture of {ref} under {root} (sizing export-run writes one)")
    tables = {table: [_plain(row) for row in pq.read_table(where / f"{table}.parquet").to_pylist()]
              for table in FIXTURE_COLUMNS if (where / f"{table}.parquet").is_file()}
    return RunRows(ref, tables, json.loads((where / META).read_text()))


def load_all(root: Path, refs: Sequence[RunRef]) -> dict[RunRef, RunRows]:
    return {ref: load(root, ref) for ref in dict.fromkeys(refs)}


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}


def generated_section(start: str, end: str, body: str) -> str:
    """A section of a document generated from the fixtures, between its two marker lines (README's seed verdicts,
    BENCHMARKS.md's fidelity table): the text a test looks for and a regeneration script writes."""
    return f"{start}\n{body}\n{end}"


def rewrite_section(path: Path, start: str, end: str, body: str) -> None:
    """Replace the generated section between `start` and `end` in the document at `path` with `body`."""
    text = path.read_text()
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{generated_section(start, end, body)}{tail}")
