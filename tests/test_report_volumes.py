"""Seed 000 Figs 26-31 in the report: one cluster shape on each volume type at the campaign target, its phases side
by side and its end-to-end percentiles second by second, from the client_series table in the S3 test server (built
from raw records by the analysis' own fold code). Known answers: the per-second percentiles of the exact latencies
the histograms were built from (sizing.contract.histogram's 1 % bound)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import yaml

from adapters.objectstore import S3Settings
from app.report.build import build_report, volume_siblings
from app.report.tables import latency_seconds
from sizing.campaign import parse_campaign
from sizing.contract import layout, records
from sizing.contract.histogram import RELATIVE_ACCURACY
from sizing.contract.layout import RunKey
from tests.spark_records import client_rows, series_tables, table

SPEC = {
    "name": "volumes", "deployment": "aws", "catalog": "aws-us-east-1-2020",
    "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {"queues": {"count": 2, "type": "quorum"}, "message": {"size_bytes": 1024},
                 "publishers": {"count": 2, "confirms_in_flight": 100}, "consumers": {"count": 2, "prefetch": 100}},
    "clusters": {"matrix": {"nodes": [3], "instance_types": ["c5.4xlarge"], "volumes": ["gp2", "st1"]}},
    "scenarios": [{"name": "intensity", "warmup_s": 2, "steps": {"rates": [500, 1000], "duration_s": 10}}],
}
GP2, ST1 = "n3-c5.4xlarge-gp2", "n3-c5.4xlarge-st1"
LATENCY_MS = {GP2: 5.0, ST1: 40.0}  # every message of the target phase, per config (st1: the slower HDD)


def test_per_second_percentiles_merge_every_workers_histogram_of_the_second() -> None:
    key = RunKey("c", GP2, "intensity", "R1")
    rng = np.random.default_rng(3)
    samples = {w: [rng.lognormal(np.log(8000), 0.5, 200) for _ in range(4)] for w in (0, 1)}
    rows = [r for w in (0, 1) for r in client_rows(key, 1, w, range(10, 14), 0, target_rate=400, per_second=200,
                                                     e2e_us=samples[w])]
    got = latency_seconds(series_tables({"client_seconds": table("client_seconds", rows)})["client_series"]
                          .to_pandas())
    assert got["second"].tolist() == [10, 11, 12, 13]
    for i, second in enumerate(range(10, 14)):
        exact = np.sort(np.concatenate([samples[0][i], samples[1][i]]))
        want = exact[int(np.ceil(0.99 * exact.size)) - 1] / 1000
        assert abs(got.loc[i, "p99"] - want) <= RELATIVE_ACCURACY * want * (1 + 1e-9), second


def test_the_report_compares_one_shape_on_each_volume_at_the_target(s3: S3Settings, tmp_path) -> None:
    spec_path = tmp_path / "volumes.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    campaign = parse_campaign(SPEC)
    assert volume_siblings(campaign) == {GP2: [GP2, ST1], ST1: [GP2, ST1]}
    store = s3.store()
    summary, board = [], []
    for config, ms in LATENCY_MS.items():
        key = RunKey(campaign.name, config, "intensity", "R1")
        for phase, rate in ((1, 500.0), (2, 1000.0)):
            start = (phase - 1) * 10
            rows = client_rows(key, phase, 0, range(start, start + 10), start + 2, target_rate=rate,
                               per_second=int(rate), e2e_us=[np.full(int(rate), ms * 1000)] * 10)
            # only the table: the report reads no raw client record
            store.put_parquet(layout.table_prefix("client_series", campaign.name, config, "R1")
                              + f"part-{phase}.parquet",
                              series_tables({"client_seconds": table("client_seconds", rows)})["client_series"])
            row = dict.fromkeys(records.table_columns("phase_summary"))
            row.update(campaign=campaign.name, config_id=config, scenario="intensity", run_id="R1", repeat=1,
                       phase=phase, phase_name=f"rate-{rate:g}", target_rate=rate, confirm_rate=rate,
                       consume_rate=rate, valid=True, matched_target=True, group="main", foreground=True,
                       **{f"e2e_{q}_ms": ms for q in ("p50", "p75", "p95", "p99", "p999", "max")})
            summary.append(row)
        board.append({**dict.fromkeys(records.table_columns("leaderboards")), "campaign": campaign.name,
                      "config_id": config, "monthly_cost": 1000.0, "top_matched_throughput": 1000.0 if config == GP2
                      else 900.0, "capacity_rank": 1 if config == GP2 else 2})
    frame = pd.DataFrame(summary).astype({"repeat": "int32", "phase": "int32"})
    for config, part in frame.groupby("config_id"):
        store.put_parquet(layout.table_prefix("phase_summary", campaign.name, config, "R1") + "part-0.parquet",
                          pa.Table.from_pandas(part, preserve_index=False))
    store.put_parquet(layout.table_prefix("leaderboards", campaign.name, run_id="R1") + "part-0.parquet",
                      pa.Table.from_pandas(pd.DataFrame(board), preserve_index=False))
    build_report(str(spec_path), "R1", s3, tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    section = html[html.index('id="volumes"'):]
    section = section[:section.index("<h2", 10)]
    # the target phase (1,000 msg/s) of each volume side by side: gp2 at 5 ms, st1 at 40 ms
    assert f"<td>{GP2}</td><td>gp2</td><td class=\"num\">1,000</td><td class=\"num\">5.0 ms</td>" in section
    assert f"<td>{ST1}</td><td>st1</td><td class=\"num\">1,000</td><td class=\"num\">40.0 ms</td>" in section
    assert "End-to-end latency per second at 1,000 msg/s, one cluster on each volume type" in section
    assert "st1 p99.9" in section and "gp2 p50" in section  # one line per volume and percentile
