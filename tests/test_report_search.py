"""The report's capacity-search section (issue 16), rendered from tables alone: the capacity table's row and the
phase_summary probe rows of the real search on slot 62 (tests/test_search_cluster.py: 8 probes, 787.5 msg/s,
bracket [787.5, 806.25]). Known answers: the figures printed are the table's, the two charts exist with the knee
at the table's sustainable rate, and a search's failing probes do not count as a failed scenario."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from app.report.build import render_report
from app.report.tables import BOARD_COLUMNS, ReportData
from sizing.campaign import load_campaign
from sizing.contract import records

CAMPAIGN = load_campaign(Path(__file__).resolve().parents[1] / "campaigns" / "local-search.yaml")
CONFIG = CAMPAIGN.clusters[0].config_id
# (rate, stage, passed, p99 ms, bracket after it) as measured by the acceptance run
PROBES = [(600.0, "ladder", True, 20.0, (600.0, None)), (900.0, "ladder", False, 2100.0, (600.0, 900.0)),
          (750.0, "bisect", True, 108.0, (750.0, 900.0)), (825.0, "bisect", False, 404.5, (750.0, 825.0)),
          (787.5, "bisect", True, 49.5, (787.5, 825.0)), (806.25, "bisect", True, 25.6, (806.25, 825.0)),
          (806.25, "confirm", False, 167.8, (787.5, 806.25)), (787.5, "confirm", True, 124.3, (787.5, 806.25))]


def report_data() -> ReportData:
    rows = []
    for i, (rate, stage, passed, p99, (low, high)) in enumerate(PROBES, start=1):
        row = dict.fromkeys(records.table_columns("phase_summary"))
        row.update(campaign=CAMPAIGN.name, config_id=CONFIG, scenario="capacity-search", run_id="s1", repeat=1,
                   phase=i, phase_name=f"probe{i}-{stage}-rate{rate:g}", start_s=10.0 * i, duration_s=7.0,
                   warmup_s=2.0, target_rate=rate, confirm_rate=rate, consume_rate=min(rate, 800.0), valid=True,
                   e2e_p50_ms=p99 / 4, e2e_p75_ms=p99 / 3, e2e_p95_ms=p99 / 2, e2e_p99_ms=p99, e2e_p999_ms=p99 * 1.5,
                   matched_target=passed, probe_stage=stage, probe_passed=passed, probe_online_passed=passed,
                   probe_inconclusive=False,
                   probe_last_pass=low, probe_first_fail=high, bottleneck="none")
        rows.append(row)
    capacity = pd.DataFrame([{
        "campaign": CAMPAIGN.name, "config_id": CONFIG, "scenario": "capacity-search", "run_id": "s1", "repeat": 1,
        "status": "converged", "sustainable_rate": 787.5, "last_pass": 787.5, "first_fail": 806.25,
        "probes_used": 8, "inconclusive_attempts": 0, "worst_case_probes": 13, "p99_at_sustainable_ms": 124.3,
        "bottleneck_at_sustainable": "none", "probes_disagreeing": 0, "verdicts_agree": True, "repeats": 1,
        "sustainable_median": 787.5, "sustainable_ci_low": None, "sustainable_ci_high": None,
        "sustainable_ci_level": None}])
    board = pd.DataFrame([{"board": "top_matched_throughput", "rank": 1, "config_id": CONFIG, "value": 787.5,
                           "rate": 787.5, "monthly_cost": 248.2}], columns=BOARD_COLUMNS)
    return ReportData(CAMPAIGN.name, pd.DataFrame(rows), board, None, None, {}, {}, {}, [], capacity=capacity)


def test_the_search_section_shows_the_capacity_table_and_both_charts():
    html = render_report(CAMPAIGN, report_data(), "s1", generated_at="now")
    section = html[html.index('id="search"'):]
    section = section[:section.index("<h2", 10)] if "<h2" in section[10:] else section
    # the table's figures (787.5 printed as 788), the bracket, probes against the plan's worst case
    assert re.search(r"<td[^>]*>788</td>", section) and "788 .. 806" in section and "8 / 13" in section
    assert "124.3 ms" in section and "converged" in section
    assert section.count("<svg") == 2
    assert "knee: sustainable 788 msg/s" in section  # the knee line is the capacity table's rate
    assert section.count("bracket") >= 2
    # the verdict does not count the search (its failing probes are the method) as a failed scenario
    verdict = html[html.index('id="verdict"'):html.index('id="search"')]
    assert "capacity-search" not in verdict
