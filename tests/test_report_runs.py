"""Which stored runs the report's data comes from: `run_id=None` means every stored run, for every table and the
validations alike (issue 47: the per-run loops once rebound `run_id`, so what was read after them came from one
arbitrary run). Pure: the reader reads a LocalStore in a temporary directory instead of a bucket."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from adapters.objectstore import LocalStore
from app.report.tables import load_report_data
from sizing.campaign import load_campaign
from sizing.contract import layout
from tests.report_sample import N1, N3, SPEC, phase_summary_rows, repeat_interval_rows

CAMPAIGN = load_campaign(SPEC)
RUNS = ("manual__2026-01-01T00-00-00", "manual__2026-01-02T00-00-00")


@dataclass(frozen=True)
class LocalSettings:
    """What TableReader needs of S3Settings: a bucket name and a store, here a directory."""
    root: Path
    bucket: str = "local"

    def store(self) -> LocalStore:
        return LocalStore(self.root)


def write_runs(settings: LocalSettings) -> None:
    store = settings.store()
    for run_id in RUNS:
        summary = phase_summary_rows().assign(run_id=run_id)
        for config_id, rows in summary.groupby("config_id"):
            store.put_parquet(layout.table_prefix("phase_summary", CAMPAIGN.name, str(config_id), run_id)
                              + "part-0.parquet", pa.Table.from_pandas(rows.reset_index(drop=True),
                                                                       preserve_index=False))
        store.put_parquet(layout.table_prefix("repeat_intervals", CAMPAIGN.name, run_id=run_id) + "part-0.parquet",
                          pa.Table.from_pandas(repeat_interval_rows(summary, CAMPAIGN, run_id), preserve_index=False))
        doc = {"success": True, "results": {}, "failures": []}
        for config_id in (N1, N3):
            store.put(layout.validation_key("raw", CAMPAIGN.name, config_id, run_id), json.dumps(doc).encode())


def test_without_a_run_id_every_table_read_after_the_per_run_loops_holds_every_stored_run(tmp_path: Path) -> None:
    settings = LocalSettings(tmp_path)
    write_runs(settings)
    scenarios = [s.name for s in CAMPAIGN.scenarios]
    data = load_report_data(settings, CAMPAIGN.name, [N1, N3], scenarios, CAMPAIGN.target.rate,  # type: ignore[arg-type]
                            resource_scenarios=scenarios, run_id=None)
    assert set(data.phase_summary["run_id"]) == set(RUNS)
    assert {v.run_id for v in data.validations} == set(RUNS)
    assert data.repeat_intervals is not None and set(data.repeat_intervals["run_id"]) == set(RUNS)
    # one run asked for: that run's rows only
    data = load_report_data(settings, CAMPAIGN.name, [N1, N3], scenarios, CAMPAIGN.target.rate,  # type: ignore[arg-type]
                            resource_scenarios=scenarios, run_id=RUNS[0])
    assert {v.run_id for v in data.validations} == {RUNS[0]}
    assert set(data.repeat_intervals["run_id"]) == {RUNS[0]}
