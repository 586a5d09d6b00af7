"""The report's client-settings section (issue 13): every step with its value, rates and latency basis, taken
from phase_summary as given (known answers: the rows below), and the scenario kept out of the adverse verdicts."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import yaml

from app.report.build import Report
from app.report.tables import PHASE_SUMMARY_OPTIONAL, ReportData
from sizing.spec import parse_campaign

ROOT = Path(__file__).resolve().parent.parent


def test_client_settings_steps_show_their_latency_basis() -> None:
    spec = copy.deepcopy(yaml.safe_load((ROOT / "campaigns" / "local-quick.yaml").read_text()))
    spec["scenarios"] = [{"name": "inflight", "steps": {"vary": "confirms_in_flight", "values": [5, 200],
                                                        "duration_s": 5, "rate": "max"}}]
    campaign = parse_campaign(spec)
    config = campaign.clusters[0].config_id
    rows = [{"campaign": campaign.name, "config_id": config, "scenario": "inflight", "run_id": "R1", "repeat": 1,
             "phase": n, "phase_name": f"confirms_in_flight={w}", "target_rate": 0.0, "confirm_rate": rate,
             "consume_rate": rate, "e2e_p50_ms": 3.0, "e2e_p75_ms": 4.0, "e2e_p95_ms": 6.0, "e2e_p99_ms": 9.0,
             "e2e_p999_ms": 12.0, "valid": True, **PHASE_SUMMARY_OPTIONAL, "rate_mode": "max", "latency_basis": "sent"}
            for n, w, rate in ((1, 5, 1234.0), (2, 200, 12345.0))]
    for row in rows:
        row["start_s"] = (row["phase"] - 1) * 5.0
    client = pd.DataFrame({"repeat": 1, "second": range(10), "phase": [1] * 5 + [2] * 5,
                           "confirmed": [1234] * 5 + [12345] * 5, "consumed": [1234] * 5 + [12345] * 5})
    data = ReportData(campaign.name, pd.DataFrame(rows), pd.DataFrame({"config_id": [], "monthly_cost": []}),
                      pd.DataFrame(), None, None, {(config, "inflight", "R1"): client}, {}, {}, [])
    report = Report(campaign, data, "R1", "now")
    assert report.adverse == [] and [s.name for s in report.client_settings] == ["inflight"]
    html = "".join(str(part) for part in report.client_settings_section())
    assert "confirms_in_flight=200" in html and "12,345" in html
    assert html.count("<td>sent</td>") == 2, html
    # the run's throughput chart marks each step with its setting (seed 003, Figs 1-9)
    assert report.charts == 1 and "<svg" in html and html.count("confirms_in_flight=") >= 4
