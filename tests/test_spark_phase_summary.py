"""Known-answer tests of the phase_summary transforms on a local SparkSession (hand-built raw records)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adapters.objectstore import StoreSpec
from sizing.contract import raw_layout
from sizing.contract.histogram import RELATIVE_ACCURACY
from sizing.contract.layout import RunKey
from sizing.judgement import adverse
from spark_jobs.lib import phase_summary as ps
from spark_jobs.lib.recovery import fault_impact
from spark_jobs.lib.tableio import read_raw
from tests.spark_records import client_rows, frames, phase_row, table

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n3-c5.2xlarge-gp2", "increasing-intensity", "R1")


def exact_quantile(values: np.ndarray, q: float) -> float:
    ordered = np.sort(values)
    return float(ordered[max(1, math.ceil(q * ordered.size - 1e-9)) - 1])


def test_merged_histogram_percentiles_are_within_the_documented_error_of_exact_ones(spark):
    rng = np.random.default_rng(7)
    rows, steady = [], []
    for worker in range(3):
        samples = [rng.lognormal(math.log(8000), 0.8, size=int(rng.integers(150, 250))) for _ in range(20)]
        for s in range(5):  # warm-up seconds carry huge latencies: they must not reach the summary
            samples[s] = samples[s] * 1000
        steady.extend(samples[5:])
        rows += client_rows(KEY, 1, worker, range(20), 5, target_rate=600, per_second=200, e2e_us=samples)
    stats = ps.client_phase_stats(ps.ClientRecords.of(frames(spark, "client_seconds", rows)).partials).collect()
    assert len(stats) == 1
    got = stats[0].asDict()
    exact = np.concatenate(steady)
    assert got["e2e_samples"] == exact.size
    for name, q in {"p50": 0.5, "p75": 0.75, "p95": 0.95, "p99": 0.99, "p999": 0.999, "max": 1.0}.items():
        want_ms = exact_quantile(exact, q) / 1000.0
        assert abs(got[f"e2e_{name}_ms"] - want_ms) <= RELATIVE_ACCURACY * want_ms * (1 + 1e-9), name
    assert got["workers"] == 3 and got["steady_seconds_observed"] == 15


def test_a_percentiles_spread_within_the_run_comes_from_the_windows_of_its_planned_steady_seconds(spark):
    """Known answer for phase_summary's e2e_<q>_ms_rse, computed here from the raw latencies with numpy: the whole
    steady window's exact nearest-rank percentile and each window's (247 steady seconds: the first 2 dropped, five
    windows of 49 s from second 12; sizing.criteria.stats.window_layout), then sqrt(sum(log(w_i / whole)^2) / 4 / 5).
    Latencies sit on the histogram's representative values, so its quantiles equal the exact ones. A phase of 200
    steady seconds (under sizing.criteria.stats.SECTION_MIN_SECONDS) and a fold not given the phases' windows have
    none."""
    from sizing.contract.histogram import bucket_value

    rng = np.random.default_rng(32)
    phases = [phase_row(KEY, 1, 0, 257, 10, 200), phase_row(KEY, 2, 257, 210, 10, 200)]
    rows, samples = [], {}
    for phase, (start, end, warmup_until) in {1: (0, 257, 10), 2: (257, 467, 267)}.items():
        for worker in range(2):
            # the level climbs window by window (and the 2 dropped seconds are far above it): a window misplaced by
            # a second changes the figure
            buckets = [700 + (0 if s < warmup_until + 2 else 40 + 15 * ((s - warmup_until - 2) // 49))
                       for s in range(start, end)]
            per_second = [bucket_value(b + rng.integers(0, 60, 100)) for b in buckets]
            for s, values in zip(range(start, end), per_second, strict=True):
                samples.setdefault(phase, {}).setdefault(s, []).append(values)
            rows += client_rows(KEY, phase, worker, range(start, end), warmup_until, target_rate=200,
                                per_second=100, e2e_us=per_second)
    client_seconds, phase_frame = frames(spark, "client_seconds", rows), frames(spark, "phases", phases)
    got = {r["phase"]: r.asDict() for r in ps.client_phase_stats(
        ps.ClientRecords.of(client_seconds, phase_frame).partials).collect()}
    of_seconds = {s: np.concatenate(v) for s, v in samples[1].items()}
    for name, q in {"p75": 0.75, "p95": 0.95, "p99": 0.99}.items():
        whole = exact_quantile(np.concatenate([of_seconds[s] for s in range(10, 257)]), q)
        windows = [exact_quantile(np.concatenate([of_seconds[s] for s in range(12 + 49 * i, 12 + 49 * (i + 1))]), q)
                   for i in range(5)]
        assert got[1][f"e2e_{name}_ms"] == pytest.approx(whole / 1000.0)
        want = math.sqrt(sum(math.log(w / whole) ** 2 for w in windows) / 4 / 5)
        assert got[1][f"e2e_{name}_ms_rse"] == pytest.approx(want, rel=1e-9), name
    # p99.9: a window of 49 x 200 latencies holds 9.8 beyond it, under sizing.criteria.stats.SECTION_TAIL_MIN
    assert got[1]["e2e_p999_ms_rse"] is None
    assert all(got[2][f"e2e_{q}_ms_rse"] is None for q in ("p75", "p95", "p99", "p999"))
    without = ps.client_phase_stats(ps.ClientRecords.of(client_seconds).partials).collect()
    assert all(r[f"e2e_{q}_ms_rse"] is None for r in without for q in ("p75", "p95", "p99"))
    assert {r["phase"]: r["e2e_p95_ms"] for r in without} == {p: got[p]["e2e_p95_ms"] for p in got}


def test_matched_target_validity_and_recovery_rules(spark):
    slo = 1000.0
    phases, rows = [], []
    cases = [  # (target rate, per-worker msgs/s, e2e us, cpu_s, publish delay us)
        (100, 50, 5_000, 0.2, 500),         # 1: kept up, fast -> matched
        (200, 75, 5_000, 0.2, 500),         # 2: carried 150 of 200 (75 %) -> not matched
        (100, 50, 5_000, 0.99, 500),        # 3: a worker used 99 % of a core -> invalid, matched anyway
        (100, 50, 2_000_000, 0.2, 500),     # 4: p99 2 s > 1 s SLO -> valid but not matched
        (100, 50, 5_000, 0.2, 500_000),     # 5: sends 500 ms late (back-pressure), rate achieved -> matched
        (100, 49, 5_000, 0.2, 500),         # 6: 98 % of target exactly -> matched (boundary is inclusive)
        (100, 50, 5_000, 0.2, 500),         # 7: the generator reported itself behind -> invalid, matched anyway
        (200, 75, 5_000, 0.99, 500),        # 8: saturated generator and 75 % of target -> inconclusive
    ]
    for number, (rate, per_worker, e2e, cpu, delay) in enumerate(cases, start=1):
        start = (number - 1) * 10
        phases.append(phase_row(KEY, number, start, 10, 2, rate))
        for worker in range(2):
            samples = [np.full(per_worker, float(e2e)) for _ in range(10)]
            rows += client_rows(KEY, number, worker, range(start, start + 10), start + 2, target_rate=rate,
                                per_second=per_worker, e2e_us=samples, cpu_s=cpu, publish_delay_us=delay)
    # A second run with one fault: 100 msg/s, down 10 s at t=60, 5 s catching up at 150, then back to 100.
    fkey = RunKey("c", "n3-c5.2xlarge-gp2", "broker-kill", "R1")
    phases.append(phase_row(fkey, 1, 0, 120, 5, 100))
    rate = [100] * 60 + [0] * 10 + [150] * 5 + [100] * 45
    for s, r in enumerate(rate):
        rows += client_rows(fkey, 1, 0, range(s, s + 1), 5, target_rate=100, per_second=r)
    events = [{**fkey.as_dict(), "ts": 1.6e9 + 60, "second": 60.0, "phase": 1, "kind": "fault_start",
               "fault_id": "p01-f1", "fault_kind": "kill_node", "node": "rabbit1", "detail": None},
              {**KEY.as_dict(), "ts": 1.6e9 + 65, "second": 65.0, "phase": 7, "kind": "worker_behind",
               "fault_id": None, "fault_kind": None, "node": None, "detail": '{"tick_lag_ms": 180.0}'}]
    # The broker's samples (every 5 s, three nodes): rabbit3 down once at 10 s, rabbit1 at 60-70 s (the kill);
    # the fault healed at 68 s: every node ran again at the 75 s sample, 7 s after the heal.
    events.append({**fkey.as_dict(), "ts": 1.6e9 + 68, "second": 68.0, "phase": 1, "kind": "fault_heal",
                   "fault_id": "p01-f1", "fault_kind": "kill_node", "node": "rabbit1", "detail": None})
    samples = [{**fkey.as_dict(), "ts": 1.6e9 + t, "second": float(t), "phase": 1, "node": node,
                "running": not ((node == "rabbit1" and 60 <= t <= 70) or (node == "rabbit3" and t == 10)),
                "mem_alarm": False, "disk_alarm": False, "queue_messages": 0, "queue_messages_ready": 0,
                "queue_messages_unacked": 0} for t in range(0, 120, 5) for node in ("rabbit1", "rabbit2", "rabbit3")]
    summary = ps.summarise(frames(spark, "phases", phases), ps.ClientRecords.of(frames(spark, "client_seconds", rows)),
                           frames(spark, "accounting", []), frames(spark, "events", events),
                           frames(spark, "broker_samples", samples), ps.Rules(slo_p99_ms=slo))
    got = {(r["scenario"], r["phase"]): r.asDict() for r in summary.collect()}
    steady = {k: v for k, v in got.items() if k[0] == "increasing-intensity"}
    assert {v["broker_nodes_down"] for v in steady.values()} == {None}  # no samples, nothing seen down
    # matched_target is a figure whatever the validity (whether a phase is evidence is sizing.criteria.rules.conclusive)
    assert [steady[("increasing-intensity", n)]["matched_target"] for n in range(1, 9)] == [
        True, False, True, False, True, True, True, False]
    assert [steady[("increasing-intensity", n)]["invalid_reason"] for n in range(1, 9)] == [
        None, None, "loadgen_cpu_saturated", None, None, None, "loadgen_behind", "loadgen_cpu_saturated"]
    assert steady[("increasing-intensity", 5)]["publish_delay_p99_ms"] == pytest.approx(500.0, rel=0.01)
    assert steady[("increasing-intensity", 2)]["confirm_rate"] == pytest.approx(150.0)
    assert steady[("increasing-intensity", 1)]["publish_rate"] == pytest.approx(100.0)
    fault = got[("broker-kill", 1)]
    assert fault["faults"] == 1 and fault["fault_kinds"] == "kill_node"
    assert fault["time_to_recover_s"] == pytest.approx(10.0)  # the catch-up burst above baseline counts
    assert fault["recovered"] is True
    assert fault["unavailable_s"] == pytest.approx(10.0)
    assert fault["worst_dip_ratio"] == pytest.approx(0.0)
    assert fault["pre_fault_rate"] == pytest.approx(100.0)
    assert fault["broker_node_down_seen"] is True and fault["broker_nodes_down"] == "rabbit1,rabbit3"
    assert fault["broker_whole_after_heal_s"] == pytest.approx(7.0)


def test_fault_impact_rules_on_hand_built_series():
    seconds = np.arange(120)
    level = np.full(120, 100.0)
    dip = level.copy()
    dip[60:70] = 0.0
    dip[70:75] = 150.0
    impact = fault_impact(seconds, dip, 60.0)
    # Down 10 s, then a catch-up burst above the baseline: recovered when throughput is back at >= 95 %.
    assert (impact.pre_fault_rate, impact.time_to_recover_s, impact.unavailable_s) == (100.0, 10.0, 10.0)
    assert impact.worst_dip_ratio == 0.0
    # Never back within 5 %: throughput settles at 90 % of its former level (every second after is degraded).
    never = level.copy()
    never[60:] = 90.0
    stuck = fault_impact(seconds, never, 60.0)
    assert stuck.time_to_recover_s is None and stuck.worst_dip_ratio == pytest.approx(0.9)
    assert stuck.unavailable_s == 60.0
    # A fault in the phase's first second has no baseline: nothing to judge.
    assert fault_impact(seconds, level, 0.0).time_to_recover_s is None
    # A fault that does not hurt recovers in zero seconds; 4 % noise stays inside the band.
    noisy = level + np.where(seconds % 2 == 0, 4.0, -4.0)
    assert fault_impact(seconds, noisy, 60.5).time_to_recover_s == 0.0
    # A missing second inside the series counts as zero throughput.
    gap = fault_impact(np.delete(seconds, [60]), np.delete(level, [60]), 60.0)
    assert (gap.time_to_recover_s, gap.unavailable_s) == (1.0, 1.0)


def test_folding_where_objects_are_read_gives_what_folding_after_the_read_gives(spark, tmp_path):
    """Known answer: the same rows folded by a mapInArrow over the plain read (ClientRecords.of). The reader's
    ObjectFold changes where the fold runs, never what it computes. One object predates workload groups."""
    spec = StoreSpec("file", "bucket", root=str(tmp_path))
    store, rows = spec.open(), []
    for phase in (1, 2):
        for worker in (0, 1, 2):
            part = client_rows(KEY, phase, worker, range(20 * phase, 20 * phase + 20), 20 * phase + 5,
                               target_rate=300, per_second=100 + 10 * worker + phase, cpu_s=0.1 * worker)
            rows += part
            data = table("client_seconds", part)
            if (phase, worker) == (2, 2):
                data = data.drop_columns(["group"])
            store.put_parquet(raw_layout.raw_part_key(KEY, "client_seconds", phase, worker), data)

    def read(*args, **kwargs):
        return read_raw(spark, spec, KEY.campaign, [KEY.config_id], [KEY.run_id], "client_seconds", *args, **kwargs)

    clients = ps.ClientRecords.folded(read(ps.CLIENT_FOLD))
    folded, series = clients.partials, clients.series
    plain = ps.ClientRecords.of(frames(spark, "client_seconds", rows))
    assert folded.count() == 6  # one partial row per worker phase reached the JVM, not 120 seconds
    # one block per phase and warm-up state, holding each second once: the three workers summed in the reader
    assert series.count() == 4 and len(ps.series_rows(series.toPandas())) == 40

    def ordered(frame) -> list[tuple]:
        return sorted((tuple(r) for r in frame.collect()), key=repr)

    assert ordered(ps.client_phase_stats(folded)) == ordered(ps.client_phase_stats(plain.partials))
    no_events = frames(spark, "events", [])
    assert ordered(ps.phase_dynamics(series, no_events)) == ordered(ps.phase_dynamics(plain.series, no_events))


def test_backlog_criterion_figures_per_phase_and_the_runs_drain(spark):
    """Issue 22, known answers by hand: 100 msg/s offered throughout; consumers at 50 msg/s in phase 2 (the
    backlog builds), at 200 msg/s in phase 3 until it is gone; confirms stall for seconds 40-44 (caught up at 45)
    while an alarm blocks publishers for 2.5 s."""
    key = RunKey("c", "n3-c5.2xlarge-gp2", "consumer-slowdown", "R1")
    phases = [phase_row(key, n, 30 * (n - 1), 30, 5 if n == 1 else 0, 100) for n in (1, 2, 3)]
    rows = []
    for n in (1, 2, 3):
        rows += client_rows(key, n, 0, range(30 * (n - 1), 30 * n), 5, target_rate=100, per_second=100)
    confirmed = {s: 0 for s in range(40, 45)} | {45: 500}
    consumed = {s: 50 for s in range(30, 60)} | {s: 200 for s in range(60, 74)}
    blocked = {41: 1000.0, 42: 1000.0, 43: 500.0}
    for row in rows:
        s = row["second"]
        row.update(confirmed=confirmed.get(s, 100), consumed=consumed.get(s, 100), acked=consumed.get(s, 100),
                   blocked_ms=blocked.get(s, 0.0))
    summary = ps.summarise(frames(spark, "phases", phases), ps.ClientRecords.of(frames(spark, "client_seconds", rows)),
                           frames(spark, "accounting", []), frames(spark, "events", []),
                           frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000.0))
    got = {r["phase"]: r.asDict() for r in summary.collect()}
    # the 5 s windows ending at 40..44 hold 400, 300, 200, 100, 0 of 500 offered; the one ending at 45 all 500
    assert [got[n]["reduced_publish_s"] for n in (1, 2, 3)] == [0.0, 5.0, 0.0]
    assert [got[n]["publishers_blocked_s"] for n in (1, 2, 3)] == [0.0, 2.5, 0.0]
    # backlog = confirmed - consumed, cumulated: +50/s for 30..39 (500), -50/s for 40..44 (250), +450 at 45 (700),
    # +50/s to 1,400 at 59; then -100/s from 60: 100 at 72, 0 at 73. Drain level: 1 s of the final 100 msg/s.
    assert [(got[n]["backlog_max_client"], got[n]["backlog_peak_s"], got[n]["backlog_end_client"],
             got[n]["backlog_last_above_s"]) for n in (1, 2, 3)] == [(0, 0.0, 0, None), (1400, 59.0, 1400, 59.0),
                                                                   (1300, 60.0, 0, 71.0)]
    assert {got[n]["drain_level_msgs"] for n in (1, 2, 3)} == {100.0}
    drain = adverse.run_drain(list(got.values()))
    assert drain == adverse.Drain(peak=1400, drained=True, drain_s=13.0)  # from 59 to 72, the first second at 100


def test_each_rate_carries_its_spread_within_the_run_end_to_end(spark):
    """Issue 32: the phase_summary row of a phase long enough for batch means carries each rate's relative standard
    error from its steady seconds (known answer: numpy's means of the 5 windows), a short phase none."""
    key = RunKey("c", "n3-c5.2xlarge-gp2", "flow", "R1")
    phases = [phase_row(key, 1, 0, 190, 5, 100), phase_row(key, 2, 190, 30, 5, 100)]
    rows = client_rows(key, 1, 0, range(0, 190), 5, target_rate=100, per_second=100)
    rows += client_rows(key, 2, 0, range(190, 220), 195, target_rate=100, per_second=100)
    for row in rows:  # confirms and deliveries rise by one a second: windows' means 37 s apart
        row.update(confirmed=100 + row["second"], consumed=200 - row["second"] // 2)
    summary = ps.summarise(frames(spark, "phases", phases), ps.ClientRecords.of(frames(spark, "client_seconds", rows)),
                           frames(spark, "accounting", []), frames(spark, "events", []),
                           frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000.0))
    got = {r["phase"]: r.asDict() for r in summary.collect()}
    steady = np.arange(5, 190)  # 185 steady seconds: the 5 windows of 37 start at second 5
    for column, counts in (("confirm_rate_rse", 100 + steady), ("consume_rate_rse", 200 - steady // 2),
                           ("publish_rate_rse", np.full(steady.size, 100))):
        windows = counts.astype(float).reshape(5, 37).mean(axis=1)
        assert got[1][column] == pytest.approx(windows.std(ddof=1) / math.sqrt(5) / windows.mean()), column
    assert got[1]["rate_batches"] == 5 and got[1]["publish_rate_rse"] == 0.0  # a flat rate: no spread
    assert all(got[2][c] is None for c in ("publish_rate_rse", "confirm_rate_rse", "consume_rate_rse",
                                           "rate_batches"))  # 25 steady seconds: too short
