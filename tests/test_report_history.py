"""Issue 24 in the report: a run with a baseline opens with the comparison (the table `sizing compare` prints, from
the same function on the same stored rows), and the headline metric is charted across every stored run.

Two runs of the sample campaign (tests/report_sample.py): the report's run and a baseline whose repeats carried
20 % more at the top within the SLO (so the report's run regressed by 1/1.2 - 1 = -16.7 % by construction)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from adapters.objectstore import S3Settings
from app.cli import main as sizing_cli
from sizing.campaign import load_campaign
from sizing.contract import layout, records
from sizing.judgement.history import run_row
from tests.report_sample import N1, RUN_ID, SPEC, capacity_repeat_rows, phase_summary_rows, write_sample

CAMPAIGN = load_campaign(SPEC)
BASE = "before-upgrade"


def put_table(settings: S3Settings, table: str, run_id: str, rows: list[dict]) -> None:
    frame = pa.Table.from_pylist(rows)
    settings.store().put_parquet(layout.table_prefix(table, CAMPAIGN.name, run_id=run_id) + "part-0.parquet", frame)


def runs_row(run_id: str, started_at: float, baseline: str | None, erlang: str) -> dict:
    manifests = [{"config_id": c.config_id, "scenario": s.name, "repeat": r, "status": "complete",
                  "started_at": started_at, "ended_at": started_at + 900, "spec_hash": CAMPAIGN.spec_hash,
                  "code_commit": "0123456789abcdef", "versions": {"rabbitmq": "3.10.8", "erlang": erlang,
                                                                  "pika": "1.3.2"}}
                 for c in CAMPAIGN.clusters for s in CAMPAIGN.scenarios for r in (1, 2, 3)]
    return run_row(CAMPAIGN, run_id, manifests, spark_version="4.0.0", analysis_commit="fedcba9876543210",
                   analysed_at=started_at + 1000, baseline_run=baseline)


def test_a_run_with_a_baseline_opens_with_the_comparison_and_charts_every_run(s3: S3Settings, tmp_path: Path,
                                                                               capsys) -> None:
    write_sample(s3, repeats=3)
    per_repeat = capacity_repeat_rows(phase_summary_rows(3), CAMPAIGN.target.p99_latency_ms)
    base = per_repeat.assign(run_id=BASE, top_matched_throughput=per_repeat["top_matched_throughput"] * 1.2)
    put_table(s3, "capacity_repeats", BASE, base.to_dict("records"))
    board = [{"campaign": CAMPAIGN.name, "run_id": BASE, "config_id": c.config_id, "monthly_cost": 1000.0}
             for c in CAMPAIGN.clusters]
    put_table(s3, "leaderboards", BASE, board)
    put_table(s3, "runs", BASE, [runs_row(BASE, 1_700_000_000.0, None, "25.2.3")])
    put_table(s3, "runs", RUN_ID, [runs_row(RUN_ID, 1_700_100_000.0, BASE, "25.3")])
    assert set(records.table_columns("runs")) == set(runs_row(BASE, 0.0, None, "x"))

    sizing_cli(["report", "--campaign", CAMPAIGN.name, "--run-id", RUN_ID, "--resource-configs", N1,
                "--spec", str(SPEC), "-o", str(tmp_path / "report.html")])  # rebuilt: the runs row names the base
    html = (tmp_path / "report.html").read_text()
    assert html.index('id="comparison"') < html.index('id="verdict"')  # the report opens with the comparison
    comparison = html[html.index('id="comparison"'):html.index('id="verdict"')]
    assert f"Compared with run {BASE}" in comparison and "Regressed:" in comparison
    assert "<td>25.2.3</td><td>25.3</td>" in comparison  # what each run ran on, from the runs table
    assert "top throughput within the SLO" in comparison and 'class="bad">regressed</td>' in comparison
    assert "-16.7 %" in comparison  # 1 / 1.2 - 1, the same figure `sizing compare` prints
    trends = html[html.index('id="trends"'):]
    assert 'aria-label="top throughput within the SLO across runs"' in trends
    assert "2 run(s) stored: change points need at least 6" in trends
    assert "RabbitMQ 3.10.8 · Erlang 25.3" in html  # the header names what the run ran on

    capsys.readouterr()
    code = sizing_cli(["compare", "--campaign", CAMPAIGN.name, "--base", BASE, "--head", RUN_ID, "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    top = next(c for c in result["changes"] if c["metric"] == "top_throughput" and c["config_id"] == N1)
    assert code == 1 and top["verdict"] == "regressed" and round(top["change"], 3) == round(1 / 1.2 - 1, 3)
    assert sizing_cli(["runs", "--campaign", CAMPAIGN.name]) == 0
    listed = capsys.readouterr().out
    assert BASE in listed and "25.3" in listed and "complete" in listed
    # `sizing trend`: the same medians per run, oldest first; two runs cannot show a change point, and it says so
    code = sizing_cli(["trend", "--campaign", CAMPAIGN.name, "--config", N1, "--metric", "top_throughput"])
    out = capsys.readouterr().out
    assert code == 0 and out.index(BASE) < out.index(RUN_ID)
    assert "change points: none flagged; Pettitt's test needs at least 6 runs" in out
    assert sizing_cli(["trend", "--campaign", CAMPAIGN.name, "--config", N1, "--metric", "nope"]) == 2
    assert "--metric: unknown metric 'nope'" in capsys.readouterr().err
