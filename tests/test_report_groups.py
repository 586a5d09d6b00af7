"""The report with workload groups (issue 14): every group's rows in the groups section, the background load stated
from the spec, and only the foreground group's rows in what the report judges (known answers: the rows below)."""

from __future__ import annotations

import pandas as pd

from app.report.context import ReportContext
from app.report.sections import groups
from app.report.tables import PHASE_SUMMARY_OPTIONAL, ReportData, foreground_seconds, foreground_split
from sizing.campaign import parse_campaign
from tests.test_spec_groups import BASE


def test_groups_section_shows_every_group_and_states_the_background_load() -> None:
    campaign = parse_campaign(BASE)
    config = campaign.clusters[0].config_id
    rows = [{"campaign": campaign.name, "config_id": config, "scenario": "mixed", "run_id": "R1", "repeat": 1,
             "phase": n, "phase_name": f"rate-{n}", "target_rate": target, "confirm_rate": rate,
             "consume_rate": rate, "e2e_p50_ms": p50, "e2e_p75_ms": p50, "e2e_p95_ms": p50, "e2e_p99_ms": p50 * 2,
             "e2e_p999_ms": p50 * 3, "valid": True, **PHASE_SUMMARY_OPTIONAL, "group": group,
             "foreground": group == "quorum"}
            for n in (1, 2) for group, target, rate, p50 in (("quorum", 100.0 * n, 4321.0 * n, 3.0),
                                                             ("lazy", 60.0, 59.5, 77.0))]
    everything, judged = foreground_split(pd.DataFrame(rows))
    assert set(judged["group"]) == {"quorum"} and len(everything) == 4
    data = ReportData(campaign.name, judged, pd.DataFrame({"config_id": [], "monthly_cost": []}),
                      None, None, {}, {}, {}, [], group_summary=everything)
    html = "".join(str(part) for part in groups.render(ReportContext.build(campaign, data, "R1", "now")))
    assert "Background load: lazy: 6 classic queue(s) (x-queue-mode: lazy), 6 publisher(s), 6 consumer(s), " \
           "64 B messages, held at 10 msg/s per publisher (60 msg/s), no publisher confirms" in html
    assert html.count("<td>background</td>") == 2 and html.count("<td>foreground</td>") == 2
    assert "8,642" in html and ">60<" in html and "154.0 ms" in html  # each group's own rates and p99


def test_old_tables_are_their_one_group_and_charts_keep_the_foreground_seconds() -> None:
    old = pd.DataFrame([{"config_id": "c", "scenario": "s", "run_id": "R", "group": None, "foreground": None}])
    _everything, judged = foreground_split(old)
    assert list(judged["group"]) == ["main"] and bool(judged["foreground"].iloc[0])
    summary = pd.DataFrame([{"config_id": "c", "scenario": "s", "run_id": "R", "group": g, "foreground": g == "fg"}
                            for g in ("fg", "bg")])
    client = pd.DataFrame({"group": ["fg", "bg", "fg"], "confirmed": [1, 100, 2]})
    assert foreground_seconds(client, summary, ("c", "s", "R"))["confirmed"].tolist() == [1, 2]
