"""A campaign's stored runs read from the object store (edge module): the `runs` table and each run's rows of the
tables `sizing compare`, `sizing trend` and the report's comparison and trend sections read (sizing.judgement.comparison
computes every figure from them; nothing here computes one).

    runs = stored_run_records(store)                       # every campaign's `runs` rows
    head = run_tables(store, RunRef("local-quick", "r2"))  # sizing.judgement.comparison.RunTables of one run
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sizing.campaign import Campaign, parse_campaign
from sizing.contract import layout
from sizing.contract.layout import RunRef
from sizing.judgement.comparison import PHASE_INPUTS, RunTables


def _rows(store, table: str, campaign: str, run_id: str | None = None,
          columns: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    keys = [k for k in store.list(layout.table_prefix(table, campaign)) if k.endswith(".parquet")]
    rows: list[dict[str, Any]] = []
    for key in layout.of_run(keys, run_id) if run_id is not None else keys:
        parquet = store.read_parquet(key)
        if columns is not None:
            parquet = parquet.select([c for c in columns if c in parquet.column_names])
        rows += parquet.to_pylist()
    return rows


def stored_run_records(store, campaign: str | None = None) -> list[dict[str, Any]]:
    """The `runs` rows of one campaign (or every campaign), oldest first (by their load's start)."""
    prefix = layout.table_prefix("runs", campaign) if campaign else layout.table_root("runs")
    rows = []
    for key in store.list(prefix):
        if key.endswith(".parquet"):
            rows += store.read_parquet(key).to_pylist()
    return sorted(rows, key=lambda r: (r["campaign"], r.get("started_at") or float("inf"), r["run_id"]))


def run_record(store, campaign: str, run_id: str) -> dict[str, Any] | None:
    rows = _rows(store, "runs", campaign, run_id)
    return rows[0] if rows else None


def run_tables(store, run: RunRef, record: Mapping[str, Any] | None = None) -> RunTables:
    """One run's rows of the tables the comparison reads (`record`: its `runs` row, when the caller has it)."""
    campaign, run_id = run
    return RunTables(
        run_id=run_id, run=record if record is not None else run_record(store, campaign, run_id),
        capacity_repeats=_rows(store, "capacity_repeats", campaign, run_id),
        capacity=_rows(store, "capacity", campaign, run_id),
        leaderboards=_rows(store, "leaderboards", campaign, run_id, ("config_id", "monthly_cost")),
        adverse=_rows(store, "adverse", campaign, run_id, ("config_id", "scenario", "held", "repeats", "reason")),
        phase_summary=_rows(store, "phase_summary", campaign, run_id, PHASE_INPUTS),
        recommendation=_rows(store, "recommendation", campaign, run_id, ("config_id", "recommended")))


def run_spec(record: Mapping[str, Any]) -> tuple[Campaign, dict[str, Any]]:
    """The campaign a run ran, parsed from its `runs` row (the resolved spec as the analysis read it)."""
    raw = json.loads(record["spec"])
    return parse_campaign(raw, source=f"run {record['run_id']}'s spec"), raw
