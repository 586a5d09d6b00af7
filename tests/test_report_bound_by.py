"""Issue 32 item 1 (seed 004): a compare or characterise campaign's report names what bound each measured phase,
max-rate steps included (before, only increasing intensities had a bottleneck shown), and a local report says what
its volumes were (throttled filesystems on the scale model: disk types matter there). Pure: hand-built
phase_summary rows and runs records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from app.report.sections.disks import disks_throttled, local_note
from app.report.sections.resources import bound_by, measured
from sizing.campaign import load_campaign

REPO = Path(__file__).resolve().parents[1]


def test_max_rate_steps_and_client_settings_are_measured_phases_adverse_ones_are_not() -> None:
    ndq = load_campaign(REPO / "campaigns" / "ndq-10q-multiack-scale.yaml")
    assert measured(ndq.scenarios) == ["max-throughput", "max-throughput-uncapped"]
    flow = load_campaign(REPO / "campaigns" / "flow-control-local.yaml")
    # isolated members fold into their family, as phase_summary names them for the report
    assert "qq-prefetch" in measured(flow.scenarios) and "qq-prefetch-prefetch-1" not in measured(flow.scenarios)
    # the adverse section judges its own scenarios: slowdowns and peaks (adverse-local), a broker kill (local-quick)
    assert measured(load_campaign(REPO / "campaigns" / "adverse-local.yaml").scenarios) == []
    assert measured(load_campaign(REPO / "campaigns" / "local-quick.yaml").scenarios) == ["increasing-intensity"]


def _row(config: str, scenario: str, phase: int, repeat: int, label: str | None, detail: str | None) -> dict:
    return {"config_id": config, "scenario": scenario, "phase": phase, "repeat": repeat,
            "phase_name": f"step-{phase}", "bottleneck": label, "bottleneck_detail": detail}


def test_each_labelled_phase_gets_its_most_common_label_over_repeats_and_that_label_s_detail() -> None:
    summary = pd.DataFrame([
        _row("a", "max", 1, 1, "cpu", "cpu: node1 0.99"), _row("a", "max", 1, 2, "memory", "memory: alarm"),
        _row("a", "max", 1, 3, "cpu", "cpu: node1 0.97"),
        _row("a", "other", 1, 1, None, None),  # no node figures: not shown
        _row("b", "max", 2, 1, "disk", "disk: wal 50 IOPS"), _row("b", "max", 1, 1, "none", None),
        _row("c", "max", 1, 1, "cpu", None),  # a config outside the list asked for
    ])
    assert bound_by(summary, ["b", "a"], ["max", "other"]) == [
        ("b", "max", "step-1", "none", None), ("b", "max", "step-2", "disk", "disk: wal 50 IOPS"),
        ("a", "max", "step-1", "cpu", "cpu: node1 0.99")]


def test_a_local_report_says_disk_types_matter_only_where_the_run_throttled_its_volumes() -> None:
    assert disks_throttled({"envelope_enforced": "enforced: cpu, disk, memory"})
    assert not disks_throttled({"envelope_enforced": "enforced: cpu, memory; missing: no io controller (disk)"})
    assert not disks_throttled({"envelope_enforced": None}) and not disks_throttled(None)
    assert "throttled" in local_note({"envelope_enforced": "enforced: cpu, disk, memory"})
    assert "have no effect" in local_note({"envelope_enforced": "enforced: cpu, memory"})
