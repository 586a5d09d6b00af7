"""The report's client-settings section (issue 13): every step with its value, rates and latency basis, taken
from phase_summary and repeat_intervals as given (known answers: the rows below, one repeat each, so each figure
over repeats is its row's own), and the scenario kept out of the adverse verdicts."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import yaml

from app.report.build import time_series_scenarios
from app.report.context import ReportContext
from app.report.sections import client_settings
from app.report.sections.client_settings import settings_step_points
from app.report.tables import CLIENT_SERIES_COLUMNS, PHASE_SUMMARY_OPTIONAL, ReportData
from sizing.campaign import load_campaign, parse_campaign
from tests.report_sample import repeat_interval_rows

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
        row.update(start_s=(row["phase"] - 1) * 5.0, warmup_s=1.0, duration_s=5.0)
    client = pd.DataFrame({"repeat": 1, "second": range(10), "phase": [1] * 5 + [2] * 5,
                           "confirmed": [1234] * 5 + [12345] * 5, "consumed": [1234] * 5 + [12345] * 5,
                           "published": [1234] * 5 + [12345] * 5, "e2e_max_ms": [15.0] * 10})
    data = ReportData(campaign.name, pd.DataFrame(rows), pd.DataFrame({"config_id": [], "monthly_cost": []}),
                      None, None, {(config, "inflight", "R1"): client}, {}, {}, [],
                      repeat_intervals=repeat_interval_rows(pd.DataFrame(rows), campaign, "R1"))
    ctx = ReportContext.build(campaign, data, "R1", "now")
    assert ctx.adverse == [] and [s.name for s in ctx.client_settings] == ["inflight"]
    html = "".join(str(part) for part in client_settings.render(ctx))
    assert "confirms_in_flight=200" in html and "12,345" in html
    assert html.count("<td>sent</td>") == 2, html
    # the run's throughput chart marks each step with its setting (seed 003, Figs 1-9)
    # and the per-step chart (one line per queue type) follows it
    assert ctx.charts == 2 and html.count("<svg") == 2 and html.count("confirms_in_flight=") >= 4
    # latency over the run under the rates: each step's percentiles and the worst per second, from `sent`
    assert "worst per second" in html and "step p99" in html and "e2e latency (from sent)" in html
    # build_report reads these runs' client_series (it once read only the adverse scenarios': no chart at all)
    assert time_series_scenarios(campaign) == ["inflight"]
    assert "e2e_max_ms" in CLIENT_SERIES_COLUMNS  # ... including each second's worst latency


def test_seed_003_step_charts_draw_one_line_per_queue_type_from_phase_summary() -> None:
    """flow-control-2020 as written (quorum and mirrored scenarios, prefetch isolated into one run per value):
    per varied setting one chart whose points are the phase_summary figures of each step, one line per queue
    type. Known answers: each row's confirm_rate encodes (queue type, step) and must come back unchanged."""
    campaign = load_campaign(ROOT / "campaigns" / "flow-control-2020.yaml")
    config = campaign.clusters[0].config_id
    rows = []
    for scenario in campaign.scenarios:
        qt_base = 100_000.0 if scenario.workload.queues.type == "quorum" else 200_000.0
        for n, setting in enumerate(scenario.step_settings or (), start=1):
            rate = qt_base + 10 * n + len(setting.label)  # known per (queue type, step), never equal across lines
            confirms = setting.confirms_in_flight > 0  # without confirms, the published rate is the throughput
            rows.append({"campaign": campaign.name, "config_id": config, "scenario": scenario.name, "run_id": "R1",
                         "repeat": 1, "phase": n, "phase_name": setting.label, "start_s": (n - 1) * 300.0,
                         "target_rate": 0.0, "confirm_rate": rate if confirms else 0.0, "publish_rate": rate,
                         "consume_rate": rate - 1, "e2e_p50_ms": 2.0,
                         "e2e_p75_ms": 3.0, "e2e_p95_ms": 5.0 * n, "e2e_p99_ms": 9.0 * n, "e2e_p999_ms": 20.0,
                         "valid": True, **PHASE_SUMMARY_OPTIONAL, "rate_mode": "max", "latency_basis": "sent"})
    summary = pd.DataFrame(rows)
    data = ReportData(campaign.name, summary, pd.DataFrame({"config_id": [], "monthly_cost": []}),
                      None, None, {}, {}, {}, [], repeat_intervals=repeat_interval_rows(summary, campaign, "R1"))
    ctx = ReportContext.build(campaign, data, "R1", "now")
    groups = settings_step_points(ctx.client_settings, ctx.summary_ci, summary, name_configs=False)
    assert groups["sequence"].points["confirm_rate"].tolist() == [0.0, 0.0]  # no confirms: as the table says
    assert sorted(groups) == ["confirms_in_flight", "multi_ack_every", "prefetch", "sequence"]
    inflight = groups["confirms_in_flight"]
    assert inflight.step_labels == ["1", "5", "20", "200", "1000", "10000"] and inflight.basis == "sent"
    assert sorted(inflight.points["line"].unique()) == ["mirrored (mirrored-inflight)", "quorum (qq-inflight)"]
    prefetch = groups["prefetch"]  # five isolated runs per queue type, joined back into one line each
    assert sorted(prefetch.points["line"].unique()) == ["mirrored (mirrored-prefetch)", "quorum (qq-prefetch)"]
    assert prefetch.step_labels == ["1", "10", "100", "1000", "10000"]
    quorum = prefetch.points[prefetch.points["line"] == "quorum (qq-prefetch)"].sort_values("step_index")
    assert quorum["confirm_rate"].tolist() == [100_010.0 + len(f"prefetch={v}") for v in (1, 10, 100, 1000, 10000)]
    # one repeat: each point is its row's figure, under the scenario as written (an isolated run's family)
    written = {s.name: s.isolated_from or s.name for s in campaign.scenarios}
    expected = summary.assign(scenario=summary["scenario"].map(written)).set_index(["scenario", "phase_name"])
    for group in groups.values():
        for r in group.points.itertuples(index=False):
            assert r.confirm_rate == expected["confirm_rate"][(r.scenario, r.phase_name)]
    html = "".join(str(part) for part in client_settings.by_queue_type(ctx))
    assert ctx.charts == 4 and html.count("<svg") == 4
    assert "quorum (qq-inflight): confirmed" in html and "mirrored (mirrored-inflight): confirmed" in html
    assert "from the sent time" in html and "10000" in html
    assert html.count("(published where no confirms)") == 2  # the no-confirms chart's two lines


def test_a_known_round_trip_is_stated_with_each_steps_window_bound() -> None:
    """Issue 32 (seed 003 at a known RTT): the section says the round trip and gives w / RTT per step (known
    answers: windows 5 and 200 over 20 ms are 250 and 10,000 msg/s); without client_latency neither appears."""
    spec = copy.deepcopy(yaml.safe_load((ROOT / "campaigns" / "local-quick.yaml").read_text()))
    latency = {"kind": "client_latency", "phases": [1], "at_s": 0, "params": {"to_broker_ms": 15, "to_client_ms": 5}}
    spec["scenarios"] = [{"name": "inflight", "faults": [latency],
                          "steps": {"vary": "confirms_in_flight", "values": [5, 200], "duration_s": 5, "rate": "max"}}]
    html = {}
    for case in ("with", "without"):
        if case == "without":
            spec["scenarios"][0].pop("faults")
        campaign = parse_campaign(copy.deepcopy(spec))
        config = campaign.clusters[0].config_id
        rows = [{"campaign": campaign.name, "config_id": config, "scenario": "inflight", "run_id": "R1", "repeat": 1,
                 "phase": n, "phase_name": f"confirms_in_flight={w}", "target_rate": 0.0, "confirm_rate": rate,
                 "consume_rate": rate, "e2e_p50_ms": 3.0, "e2e_p75_ms": 4.0, "e2e_p95_ms": 6.0, "e2e_p99_ms": 9.0,
                 "e2e_p999_ms": 12.0, "valid": True, **PHASE_SUMMARY_OPTIONAL, "rate_mode": "max",
                 "latency_basis": "sent"} for n, w, rate in ((1, 5, 240.0), (2, 200, 4321.0))]
        data = ReportData(campaign.name, pd.DataFrame(rows), pd.DataFrame({"config_id": [], "monthly_cost": []}),
                          None, None, {}, {}, {}, [],
                          repeat_intervals=repeat_interval_rows(pd.DataFrame(rows), campaign, "R1"))
        ctx = ReportContext.build(campaign, data, "R1", "now")
        assert ctx.adverse == [] and [s.name for s in ctx.client_settings] == ["inflight"]
        html[case] = "".join(str(part) for part in client_settings.render(ctx))
    assert "known round trip of 20 ms" in html["with"], html["with"]
    assert ">250<" in html["with"] and ">10,000<" in html["with"], html["with"]
    assert "round trip" not in html["without"] and "w / RTT" not in html["without"]
