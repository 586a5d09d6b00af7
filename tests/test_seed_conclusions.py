"""The seeds' published conclusions as acceptance tests (issue 22).

Each test builds the analysis input, phase_summary rows, from one seed's published figures (the known answer is
the seed's own text and tables), runs the real leaderboards step on a local SparkSession (leaderboards, adverse
verdicts, recommendation, findings: spark_jobs.lib.leaderboards.build), reads its tables as the report does, and
checks that the platform states the seed's conclusion, or names the seed's slip where its arithmetic is wrong.
Where a seed gives a comparison without absolute figures, the test says which figure it assumed.

README, "Seed conclusions", maps every conclusion to the table and column that shows it and to the test below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from app.report.answer import headline
from sizing.campaign import load_campaign
from sizing.contract import records
from sizing.criteria import rules
from sizing.judgement.recommendation import ConfigVerdict, recommended_config
from spark_jobs.lib import leaderboards
from tests.seed_000 import (
    AT_TARGET,
    AT_TARGET_SLIPS,
    CORRECTED,
    MATCHED_BEYOND_30K,
    SEED_000,
    TOP_5_AT_TARGET,
    TOP_THROUGHPUT,
    dollars,
)

pytestmark = pytest.mark.spark

CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"
SLO_MS = 1000.0


def phase(campaign: str, config_id: str, scenario: str, target: float, carried: float, *, phase_number: int = 1,
          phase_name: str | None = None, p99_ms: float = 200.0, repeat: int = 1, **extra: Any) -> dict:
    """One phase_summary row as the phase_summary step writes it (the columns the leaderboards step reads)."""
    row = dict.fromkeys(records.table_columns("phase_summary"))
    row.update(campaign=campaign, config_id=config_id, scenario=scenario, run_id="R1", repeat=repeat,
               phase=phase_number, phase_name=phase_name or f"rate-{target:g}", target_rate=target,
               confirm_rate=carried, consume_rate=carried, publish_rate=carried, valid=True, e2e_p99_ms=p99_ms,
               slo_p99_ms=SLO_MS, matched_target=bool(rules.matched_target(carried, carried, target, p99_ms, SLO_MS)),
               lost=0,
               duplicates=0, faults=0, group="main", foreground=True, latency_basis="intended",
               rate_mode="scheduled")
    row.update(extra)
    return row


def build(spark, campaign, rows: list[dict]) -> dict[str, list[dict]]:
    summary = spark.createDataFrame(rows, records.table_ddl("phase_summary"))
    return {name: [r.asDict() for r in frame.collect()]
            for name, frame in leaderboards.build(spark, summary, campaign).items()}


def config_id(campaign, nodes: int, instance: str, volume: str) -> str:
    return next(s.config_id for s in campaign.clusters
                if (s.nodes, s.instance_type, s.volume.type, s.dedicated) == (nodes, instance, volume, ()))


# ---------------------------------------------------------------------------------------------------- seed 000


@pytest.fixture(scope="module")
def seed_000(spark):
    """quorum-sizing-2020 fed seed 000's figures: per config the 25k intensity matched; 30k matched where the seed
    says the config managed it (else carried 29k: 'fell short'); the highest intensity matched beyond 30k where the
    seed names one; and its top throughput carried at the next intensity with a p99 far over the SLO (the seed's
    top throughput is at any latency: queues backlogged there)."""
    campaign = load_campaign(CAMPAIGNS / "quorum-sizing-2020.yaml")
    met = {volume: {(n, i) for n, i, _ in entries} for volume, entries in AT_TARGET.items()}
    rows = []
    for volume, entries in TOP_THROUGHPUT.items():
        for nodes, instance, top in entries:
            cid = config_id(campaign, nodes, instance, volume)

            def run(rate: float, carried: float, cid: str = cid, **extra: Any) -> dict:
                return phase(campaign.name, cid, f"increasing-intensity-rate-{rate:g}", rate, carried, **extra)

            rows.append(run(25000.0, 25000.0))
            rows.append(run(30000.0, 30000.0 if (nodes, instance) in met[volume] else min(top, 29000.0)))
            beyond = MATCHED_BEYOND_30K[volume].get((nodes, instance))
            if beyond:
                rows.append(run(beyond, beyond))
            above = (top // 5000 + 1) * 5000  # the intensity it fell short of: carried `top`, backlogged
            rows.append(run(above, top, p99_ms=4000.0))
    return campaign, build(spark, campaign, rows)


def test_seed_000_top_throughput_per_volume_at_any_latency(seed_000) -> None:
    """Seed 000's three top-throughput leaderboards (one per volume type, at any latency), and beside them the
    platform's top within the 1 s SLO (both are useful: the seed's top 40k of 3x36 io1 came with p99 far over 1 s)."""
    campaign, tables = seed_000
    board = {r["config_id"]: r for r in tables["leaderboards"]}
    met = {volume: {(n, i) for n, i, _ in entries} for volume, entries in AT_TARGET.items()}
    for volume, entries in TOP_THROUGHPUT.items():
        ours = sorted((r for r in board.values() if r["volume_type"] == volume),
                      key=lambda r: -r["top_throughput_any_latency"])
        assert [r["top_throughput_any_latency"] for r in ours] == [top for _, _, top in entries], volume
        for nodes, instance, top in entries:
            row = board[config_id(campaign, nodes, instance, volume)]
            assert row["top_throughput_any_latency"] == top
            # within the SLO (sizing.criteria.rules.counts_toward_capacity): the highest rate carried with p99 <= 1 s,
            # i.e. the intensity matched beyond 30k, else 30k, else what it carried short of 30k (29k, or its top if
            # lower), never the higher rate carried backlogged at the next intensity (p99 4 s)
            within_slo = MATCHED_BEYOND_30K[volume].get((nodes, instance)) or (
                30000.0 if (nodes, instance) in met[volume] else max(25000.0, min(top, 29000.0)))
            assert row["top_matched_throughput"] == within_slo, (volume, nodes, instance)
    # "The one size that was able to hit its target far beyond 30k msg/s": 7x16 at 60k (st1: and 9x8 at 40k)
    for volume, beyond in MATCHED_BEYOND_30K.items():
        far = {(r["nodes"], r["instance_type"]): r["max_matched_target_rate"] for r in board.values()
               if r["volume_type"] == volume and r["max_matched_target_rate"] > 30000}
        assert far == beyond, volume


def test_seed_000_cost_at_top_throughput_per_volume_and_its_slips(seed_000) -> None:
    """Seed 000's 'cost per 1000 messages per month, at top throughput', one board per volume type: every figure and
    the order of each board, except where the seed's arithmetic slips (tests/seed_000.CORRECTED says why)."""
    campaign, tables = seed_000
    board = {r["config_id"]: r for r in tables["leaderboards"]}
    for volume, entries in SEED_000.items():
        ours = sorted((r for r in board.values() if r["volume_type"] == volume),
                      key=lambda r: r["volume_rank_at_top_any_latency"])
        assert [r["volume_rank_at_top_any_latency"] for r in ours] == list(range(1, 8))
        for nodes, instance, _, printed in entries:
            row = board[config_id(campaign, nodes, instance, volume)]
            ours_dollars = dollars(row["cost_per_1k_at_top_any_latency"])
            assert ours_dollars == CORRECTED.get((volume, nodes, instance), printed)
            assert (ours_dollars != printed) == ((volume, nodes, instance) in CORRECTED)
        right = [(n, i) for n, i, _, _ in entries if (volume, n, i) not in CORRECTED]
        assert [(r["nodes"], r["instance_type"]) for r in ours if (volume, r["nodes"], r["instance_type"])
                not in CORRECTED] == right, volume


def test_seed_000_cost_at_the_30k_target_per_volume_names_the_45k_slip(seed_000) -> None:
    """Seed 000's 'cost per 1000 messages per month at a target of 30k msg/s', per volume: the same configs met 30k,
    each figure is the monthly cost / 30, and where the seed's is not, the slip is named (seven of its figures are
    cost / 45k). Its order is ours wherever its figures are right."""
    campaign, tables = seed_000
    board = {r["config_id"]: r for r in tables["leaderboards"]}
    for volume, entries in AT_TARGET.items():
        mine = [r for r in board.values() if r["volume_type"] == volume and r["met_target"]]
        assert {(r["nodes"], r["instance_type"]) for r in mine} == {(n, i) for n, i, _ in entries}, volume
        for nodes, instance, printed in entries:
            row = board[config_id(campaign, nodes, instance, volume)]
            correct = dollars(row["monthly_cost"] / 30)
            assert dollars(row["cost_per_1k_at_target"]) == correct
            slip = AT_TARGET_SLIPS.get((volume, nodes, instance))
            assert (correct, slip is not None) == ((slip[0], True) if slip else (printed, False)), (volume, nodes)
        ours = [(r["nodes"], r["instance_type"]) for r in sorted(mine, key=lambda r: r["volume_rank_at_target"])]
        right = [(n, i) for n, i, _ in entries if (volume, n, i) not in AT_TARGET_SLIPS]
        assert [c for c in ours if c in right] == right, volume


def test_seed_000_top_5_at_30k_and_its_conclusions(seed_000) -> None:
    """'Top 5 Configurations for cost per 1000 msg/s per month for the 30k msg/s throughput', and the seed's
    conclusions: gp2 the best combination, io1 not worth it, scaled-out small VMs the cheapest on cheap volumes, 3
    large VMs never optimal (except where the seed's slip says so). The seed's top 5 mixes its / 45 figures with
    / 30 ones; the correct order differs exactly there (9x8 gp2 and 7x16 gp2 are cost / 45k)."""
    _, tables = seed_000
    board = sorted((r for r in tables["leaderboards"] if r["rank_at_target"]), key=lambda r: r["rank_at_target"])
    top5 = [(r["nodes"], r["instance_type"], r["volume_type"]) for r in board[:5]]
    assert top5 == [(7, "c5.2xlarge", "gp2"), (5, "c5.2xlarge", "st1"), (5, "c5.4xlarge", "gp2"),
                    (9, "c5.2xlarge", "gp2"), (3, "c5.9xlarge", "gp2")]
    seed = [(n, i, v) for n, i, v, _ in TOP_5_AT_TARGET]
    assert top5[0] == seed[0] and set(top5) ^ set(seed) == {(3, "c5.9xlarge", "gp2"), (7, "c5.4xlarge", "gp2")}
    assert all((v, n, i) in AT_TARGET_SLIPS for n, i, v, _ in TOP_5_AT_TARGET if (n, i, v) not in top5)
    by_shape = {(r["nodes"], r["instance_type"], r["volume_type"]): r for r in tables["leaderboards"]}
    # "The expensive io1 volume just wasn't worth it": it met 30k on no shape that gp2 did not, and its cheapest
    # config at 30k (3x36, $183) costs more than gp2's cheapest (7x8, $80; the seed's $54 is / 45k) and than gp2's
    # dearest that met 30k (a shape-for-shape price comparison would hold by the price list alone, whatever was
    # measured)
    met = {v: {(n, i) for (n, i, vv), r in by_shape.items() if vv == v and r["met_target"]} for v in ("io1", "gp2")}
    assert met["io1"] <= met["gp2"]
    at_30k = {v: sorted(r["cost_per_1k_at_target"] for (_, _, vv), r in by_shape.items() if vv == v and r["met_target"])
              for v in ("io1", "gp2")}
    assert at_30k["io1"][0] > at_30k["gp2"][-1]
    assert (dollars(at_30k["io1"][0]), dollars(at_30k["gp2"][0])) == (183, 80)
    # "gp2 ... the best option": the cheapest config at 30k is on gp2, and it is scaled-out 8 vCPU VMs
    assert (board[0]["volume_type"], board[0]["instance_type"]) == ("gp2", "c5.2xlarge")
    # "Scaling up with 3 large VMs was never optimal": 3 x c5.9xlarge leads no board, except io1 at 30k, where the
    # seed's conclusion rests on its slip: $5,479.80 / 30 = $183 is the cheapest io1 config that met 30k; the seed's
    # $135 and $151 ahead of it are 5x16's and 7x8's cost / 45k (correct: $202 and $226).
    for r in tables["leaderboards"]:
        if (r["nodes"], r["instance_type"]) == (3, "c5.9xlarge"):
            assert r["volume_rank_at_top_any_latency"] != 1
            assert (r["volume_rank_at_target"] == 1) == (r["volume_type"] == "io1"), r["volume_type"]
    assert ("io1", 5, "c5.4xlarge") in AT_TARGET_SLIPS and ("io1", 7, "c5.2xlarge") in AT_TARGET_SLIPS


# ---------------------------------------------------------------------------------------------------- seed 002

# Seed 002 (mirrored queues; the gp2 clusters and Fig 9's two larger ones), as its text says, scenario by scenario:
# seconds of reduced publish rate per config (0: "handled it", "without the publish rate dropping").
SLOWDOWN_20K = {"n7-c5.4xlarge-gp2": 0, "n9-c5.2xlarge-gp2": 0, "n7-c5.2xlarge-gp2": 60,  # "very close"
                "n5-c5.4xlarge-gp2": 900, "n5-c5.2xlarge-gp2": 1200, "n3-c5.4xlarge-gp2": 1800,
                "n3-c5.9xlarge-gp2": 1500}
# "none of our clusters were able to handle 30k ... The best were the 7x16 and 9x8 clusters that had a reduced
# publish rate for around 20-25 minutes"; Fig 9: "The 9x16 cluster handles the 30k msg/s load" (11x8 does not: "we
# would need to go up to 13 instances")
SLOWDOWN_30K = {"n7-c5.4xlarge-gp2": 1350, "n9-c5.2xlarge-gp2": 1350, "n7-c5.2xlarge-gp2": 2400,
                "n5-c5.4xlarge-gp2": 3000, "n5-c5.2xlarge-gp2": 3600, "n3-c5.4xlarge-gp2": 4200,
                "n3-c5.9xlarge-gp2": 4000, "n9-c5.4xlarge-gp2": 0, "n11-c5.2xlarge-gp2": 600}
# "The 7x16, 9x8, 7x8 clusters handle the peak, with the 5x8 mostly handling it with a couple of momentary drops"
PEAK_10K_20K = {"n7-c5.4xlarge-gp2": 0, "n9-c5.2xlarge-gp2": 0, "n7-c5.2xlarge-gp2": 0, "n5-c5.2xlarge-gp2": 10,
                "n5-c5.4xlarge-gp2": 300, "n3-c5.4xlarge-gp2": 600, "n3-c5.9xlarge-gp2": 500}
# "Only the 7x16 and 9x8 clusters could handle it, but the 5 node clusters were close."
PEAK_20K_30K = {"n7-c5.4xlarge-gp2": 0, "n9-c5.2xlarge-gp2": 0, "n7-c5.2xlarge-gp2": 400, "n5-c5.2xlarge-gp2": 120,
                "n5-c5.4xlarge-gp2": 120, "n3-c5.4xlarge-gp2": 900, "n3-c5.9xlarge-gp2": 800}
# "Only the 7x16 cluster reached the 40k msg/s publish rate but the 9x8 was close."
PEAK_30K_40K = {"n7-c5.4xlarge-gp2": 0, "n9-c5.2xlarge-gp2": 60, "n7-c5.2xlarge-gp2": 900, "n5-c5.2xlarge-gp2": 1200,
                "n5-c5.4xlarge-gp2": 900, "n3-c5.4xlarge-gp2": 1800, "n3-c5.9xlarge-gp2": 1500}
# Broker kill at 30k (Fig 2): "the 5x16, 7x16, 7x8 and 9x8 clusters fully recover, while ... the 3 node clusters
# see the biggest dip"; "The smaller 3 and 5 broker clusters see that drop in the lower intensity tests": 5x8 too.
KILL_HELD = {"n5-c5.4xlarge-gp2", "n7-c5.4xlarge-gp2", "n7-c5.2xlarge-gp2", "n9-c5.2xlarge-gp2"}
# Ideal conditions (the mirrored study's part 1, quoted by seed 002): its top 5 at 30k lists 5x8, 7x8, 5x16 and 9x8
# on gp2; 7x16 gp2 is one of the survivors, so it met 30k too. Assumed: 3x36 gp2 met it, 3x16 gp2 did not.
MET_30K = {"n5-c5.2xlarge-gp2", "n7-c5.2xlarge-gp2", "n5-c5.4xlarge-gp2", "n9-c5.2xlarge-gp2", "n7-c5.4xlarge-gp2",
           "n3-c5.9xlarge-gp2"}


def backlog_phases(campaign: str, config: str, scenario: str, base: float, peak: float,
                   reduced_s: float) -> list[dict]:
    """The five phases of a seed-002 profile with the per-second figures phase_summary derives: the reduced seconds
    fall in the phases after the peak (the backlog is drained by the end: the seed's backlogs cleared)."""
    base, peak = float(base), float(peak)
    rates = [base, (base + peak) / 2, peak, (base + peak) / 2, base]
    share = [0.0, 0.0, 0.3, 0.4, 0.3]
    rows = []
    for n, (rate, part) in enumerate(zip(rates, share, strict=True), start=1):
        last = n == 5
        rows.append(phase(campaign, config, scenario, rate, rate * (1 - part * reduced_s / 6000), phase_number=n,
                          phase_name=f"seg{n}", p99_ms=30000.0, reduced_publish_s=part * reduced_s,
                          publishers_blocked_s=0.0, backlog_max=2_000_000 * n if n <= 3 else 1_000_000,
                          backlog_max_client=2_000_000 if n == 3 else 1000, backlog_peak_s=1800.0 if n == 3 else 0.0,
                          backlog_end_client=500 if last else 1_500_000,
                          backlog_last_above_s=4000.0 if n == 5 else (2999.0 if n == 4 else None),
                          drain_level_msgs=base, broker_mem_max_fraction=0.5))
    return rows


@pytest.fixture(scope="module")
def seed_002(spark):
    campaign = load_campaign(CAMPAIGNS / "mirrored-sizing-2020.yaml")
    rows = []
    for config in sorted(set(SLOWDOWN_30K)):
        if config not in SLOWDOWN_20K:  # Fig 9's clusters ran the 30k slowdown only
            rows += backlog_phases(campaign.name, config, "consumer-slowdown-30k", 30000, 30000, SLOWDOWN_30K[config])
            continue
        rows.append(phase(campaign.name, config, "increasing-intensity-rate-30000", 30000.0,
                          30000.0 if config in MET_30K else 27000.0))
        for rate in (1000.0, 30000.0):  # two of the kill runs up to the target; the 30k one tells them apart
            held = config in KILL_HELD or rate < 30000
            rows.append(phase(campaign.name, config, f"broker-kill-rate-{rate:g}", rate,
                              rate if held else 0.9 * rate, faults=1, time_to_recover_s=20.0 if held else 200.0,
                              recovered=True, worst_dip_ratio=0.7 if held else 0.2, unavailable_s=5.0))
        scenarios = {"consumer-slowdown-10k": (10000, 10000, 0), "consumer-slowdown-20k": (20000, 20000,
                                                                                           SLOWDOWN_20K[config]),
                     "consumer-slowdown-30k": (30000, 30000, SLOWDOWN_30K[config]),
                     "publish-peak-10k-20k": (10000, 20000, PEAK_10K_20K[config]),
                     "publish-peak-20k-30k": (20000, 30000, PEAK_20K_30K[config]),
                     "publish-peak-30k-40k": (30000, 40000, PEAK_30K_40K[config])}
        for scenario, (base, peak, reduced) in scenarios.items():
            rows += backlog_phases(campaign.name, config, scenario, base, peak, reduced)
    return campaign, build(spark, campaign, rows)


def report_verdicts(tables: dict[str, list[dict]]) -> list[ConfigVerdict]:
    """The `recommendation` table the leaderboards step wrote, read back as the report's verdict reads it."""
    return [ConfigVerdict.from_row(r) for r in sorted(tables["recommendation"], key=lambda r: r["standing"])]


def test_seed_002_two_survivors_are_7x16_and_9x8(seed_002) -> None:
    """'After running the adverse conditions tests we're down to two potentials from the original set: 7 nodes, 16
    vCPUs, gp2 and 9 nodes, 8 vCPUs, gp2'. The verdict code recommends exactly those two (the 30k slowdown and
    30k->40k peak, sized 'just in case', are not required), the cheaper first. The seed's survivors line prices them
    at $104 and $81: those are its own top-5 figures of 9x8 ($104) and 7x8 ($81), one row off (7x16 is
    $4,127.20 / 30 = $138 and 9x8 $3,103.20 / 30 = $103)."""
    _, tables = seed_002
    rows = report_verdicts(tables)
    survivors = [v for v in rows if v.passes_all]
    assert [v.config_id for v in survivors] == ["n9-c5.2xlarge-gp2", "n7-c5.4xlarge-gp2"]
    assert [dollars(v.cost_at_target) for v in survivors] == [103, 138]
    # 7x16 holds even the optional 30k->40k peak; 9x8 does not ("was close"); neither the 30k slowdown
    by_id = {v.config_id: v for v in rows}
    assert by_id["n7-c5.4xlarge-gp2"].optional_failed == ("consumer-slowdown-30k",)
    assert by_id["n9-c5.2xlarge-gp2"].optional_failed == ("consumer-slowdown-30k", "publish-peak-30k-40k")


def test_seed_002_the_platform_recommends_9x8_where_the_study_calls_7x16_the_best_all_rounder(seed_002) -> None:
    """'the 7x16 was the best all-rounder when taking into account the resiliency tests': the platform differs, and
    says why. It recommends the cheapest config that holds every required scenario (9x8, $103 per 1k msg/s at 30k);
    the study's all-rounder is the survivor that also holds the most optional ones (7x16 holds the 30k->40k peak,
    9x8 does not), for $35 more. Both read the same verdicts: the difference is the ranking, not the measurement."""
    _, tables = seed_002
    rows = report_verdicts(tables)
    survivors = [v for v in rows if v.passes_all]
    study_pick = "n7-c5.4xlarge-gp2"
    assert recommended_config(tables["recommendation"]) == survivors[0].config_id == "n9-c5.2xlarge-gp2" != study_pick
    most_robust = min(survivors, key=lambda v: (len(v.optional_failed), v.cost_at_target))
    assert most_robust.config_id == study_pick
    assert dollars(most_robust.cost_at_target) - dollars(survivors[0].cost_at_target) == 35


def test_seed_002_each_adverse_scenario_keeps_the_clusters_its_text_names(seed_002) -> None:
    _, tables = seed_002
    held = {(r["config_id"], r["scenario"]): r["held"] for r in tables["adverse"]}

    def holders(scenario: str) -> set[str]:
        return {c for (c, s), ok in held.items() if s == scenario and ok}

    assert holders("broker-kill") == KILL_HELD  # judged at the intensities up to the 30k target
    assert holders("consumer-slowdown-10k") == set(SLOWDOWN_20K)  # "At 10k msg/s, all clusters handle"
    assert holders("consumer-slowdown-20k") == {"n7-c5.4xlarge-gp2", "n9-c5.2xlarge-gp2"}
    assert holders("consumer-slowdown-30k") == {"n9-c5.4xlarge-gp2"}  # Fig 9: only 9x16 handles 30k
    assert holders("publish-peak-10k-20k") == {"n7-c5.4xlarge-gp2", "n9-c5.2xlarge-gp2", "n7-c5.2xlarge-gp2"}
    assert holders("publish-peak-20k-30k") == {"n7-c5.4xlarge-gp2", "n9-c5.2xlarge-gp2"}
    assert holders("publish-peak-30k-40k") == {"n7-c5.4xlarge-gp2"}
    verdict = {(r["config_id"], r["scenario"]): r for r in tables["adverse"]}
    best_30k = verdict[("n7-c5.4xlarge-gp2", "consumer-slowdown-30k")]
    assert (best_30k["criterion"], best_30k["reduced_publish_s"], best_30k["drained"]) == ("backlog", 1350.0, True)
    assert best_30k["reason"] == "publish rate reduced for 1,350 s (tolerance 0 s)"
    # every backlog scenario missed its rate/SLO in some phase (p99 of 30 s in the backlog): not what is judged
    assert verdict[("n7-c5.4xlarge-gp2", "consumer-slowdown-20k")]["max_e2e_p99_ms"] == 30000.0


# ---------------------------------------------------------------------------------------------------- seed 001

SSD1, SSD2, SSD3 = "n3-c4.4xlarge-io1-200gb", "n3-c4.4xlarge-io1-200gb-wal", "n3-c4.4xlarge-io1-200gb-wal-segments"
HDD1, HDD2, HDD3 = "n3-c4.4xlarge-st1-1000gb", "n3-c4.4xlarge-st1-1000gb-wal", "n3-c4.4xlarge-st1-1000gb-wal-segments"
SSDS, HDDS = (SSD1, SSD2, SSD3), (HDD1, HDD2, HDD3)
# Publish rate, msg/s, of the throughput tests (rabbitmq1/4/7 = SSD1..3, rabbitmq10/13/16 = HDD1..3), as seed 001
# states them. Assumed where it gives only a comparison: pure 4 queues "HDDs outperform their SSD counterparts by
# ~2k msg/s" (SSDs taken at 20k); light mixed 1 queue "a slight drop" for 2/3 HDDs from ~17k (taken as 16k);
# medium 4 queues "barely a single message" (1 msg/s) for one HDD.
THROUGHPUT = {
    "pure-throughput-1q": {**dict.fromkeys(SSDS, 19000.0), HDD1: 13000.0, HDD2: 17000.0, HDD3: 17000.0},
    "pure-throughput-4q": {**dict.fromkeys(SSDS, 20000.0), **dict.fromkeys(HDDS, 22000.0)},
    "mixed-throughput-1q": {**dict.fromkeys(SSDS, 20000.0), HDD1: 6000.0, HDD2: 16000.0, HDD3: 16000.0},
    "medium-throughput-1q": {**dict.fromkeys(SSDS, 20000.0), HDD1: 300.0, HDD2: 1700.0, HDD3: 2300.0},
    "medium-throughput-4q": {HDD1: 1.0, HDD2: 2300.0, HDD3: 2300.0, SSD2: 20000.0, SSD3: 20000.0},
}
# End-to-end p75 / p99.9, ms, of the latency tests at 2000 msg/s: pure "75th percentile ~4ms vs ~15ms, 99.9th
# ~20ms vs ~110ms" (SSD vs HDD; 2/3 HDDs "lower latency than the single HDD": taken as 10 / 60 ms).
LATENCY_2000 = {**dict.fromkeys(SSDS, (4.0, 20.0)), HDD1: (15.0, 110.0), HDD2: (10.0, 60.0), HDD3: (10.0, 60.0)}


@pytest.fixture(scope="module")
def seed_001(spark):
    """disks-matter-2020 fed seed 001's figures, each as the median of three repeats 1 % apart (the seed ran each
    test once; three repeats let the comparisons reach their 90 % level: the verdicts below are then the platform's,
    with intervals, not a reading of single runs)."""
    campaign = load_campaign(CAMPAIGNS / "disks-matter-2020.yaml")
    rows = []
    for repeat, jitter in enumerate((0.99, 1.0, 1.01), start=1):
        for scenario, rates in THROUGHPUT.items():
            for config, rate in rates.items():
                rows.append(phase(campaign.name, config, scenario, 0.0, rate * jitter, phase_name="rate=max",
                                  repeat=repeat, rate_mode="max", latency_basis="sent", e2e_p75_ms=5.0,
                                  e2e_p99_ms=20.0, e2e_p999_ms=40.0))
        for config, (p75, p999) in LATENCY_2000.items():
            rows.append(phase(campaign.name, config, "pure-latency-2000", 2000.0, 2000.0, repeat=repeat,
                              e2e_p75_ms=p75 * jitter, e2e_p99_ms=p999 * 0.7 * jitter, e2e_p999_ms=p999 * jitter))
    return campaign, build(spark, campaign, rows)


def effect(tables, scenario: str, config: str, baseline: str, metric: str = "publish_rate") -> dict:
    return next(r for r in tables["findings"] if r["kind"] == "effect" and r["family"] == scenario
                and r["config_id"] == config and r["baseline_config_id"] == baseline and r["metric"] == metric)


def test_seed_001_ssd_over_hdd(seed_001) -> None:
    """'We highly recommend SSDs ... quorum queues do not handle mixed workloads very well when running on HDDs':
    against one SSD (rabbitmq1), every HDD layout publishes less under a mixed workload and in the one-queue test,
    and has the higher latency at 2000 msg/s; only pure 4-queue sequential writes favour the HDD (the seed's own
    'HDDs can potentially produce similar or even better results')."""
    _, tables = seed_001
    for hdd in HDDS:
        for scenario in ("pure-throughput-1q", "mixed-throughput-1q", "medium-throughput-1q"):
            found = effect(tables, scenario, hdd, SSD1)
            assert (found["verdict"], found["better"]) == ("lower", False), (scenario, hdd, found)
            assert found["effect_level"] == pytest.approx(0.9) and (found["n"], found["n_baseline"]) == (3, 3)
        for metric in ("e2e_p75_ms", "e2e_p999_ms"):
            slower = effect(tables, "pure-latency-2000", hdd, SSD1, metric)
            assert (slower["verdict"], slower["better"]) == ("higher", False)
        assert effect(tables, "pure-throughput-4q", hdd, SSD1)["verdict"] == "higher"
    p999 = effect(tables, "pure-latency-2000", HDD1, SSD1, "e2e_p999_ms")
    assert p999["effect"] == pytest.approx(110 / 20 - 1, rel=0.02)  # ~20 ms vs ~110 ms
    assert p999["effect_low"] <= 110 / 20 - 1 <= p999["effect_high"]


def test_seed_001_a_separate_wal_rescues_hdd_under_light_mixed_load_not_under_medium(seed_001) -> None:
    """'It is possible to mitigate those issues by isolating the segment and WAL files on separate HDDs ... but at a
    certain classic queue traffic level, the throughput will drop a lot': under the light mix a WAL drive lifts an
    HDD cluster from 6k to 16k msg/s (within 20 % of the SSD), under the medium mix to 1.7-2.3k (over 85 % below
    it); and the layouts rank three drives > two drives > one drive."""
    _, tables = seed_001
    for layout in (HDD2, HDD3):
        rescued = effect(tables, "mixed-throughput-1q", layout, HDD1)
        assert rescued["verdict"] == "higher" and rescued["effect"] == pytest.approx(16 / 6 - 1, rel=0.02)
        assert effect(tables, "mixed-throughput-1q", layout, SSD1)["effect"] > -0.25
        assert effect(tables, "medium-throughput-1q", layout, SSD1)["effect"] < -0.85
    medium = {layout: effect(tables, "medium-throughput-1q", layout, HDD1)["effect"] for layout in (HDD2, HDD3)}
    assert medium[HDD3] > medium[HDD2] > 0  # 2300 > 1700 > 300 msg/s
    assert effect(tables, "medium-throughput-4q", HDD2, HDD1)["verdict"] == "higher"


def test_seed_001_the_report_answers_the_comparison_it_asks(seed_001) -> None:
    campaign, tables = seed_001
    head, lines = headline(campaign, pd.DataFrame(tables["findings"]))
    assert head.startswith("What the disk type and the layout change for quorum queues (seed 001)?")
    single_hdd = next(line for line in lines if line.startswith(f"{HDD1} vs {SSD1}:"))
    # lower in the 1-queue tests, higher in pure 4 queues, the same 2000 msg/s in the latency test
    assert "publish rate lower in 3 of 5 (median -" in single_hdd
