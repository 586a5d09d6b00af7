"""Issue 44 on phase_summary (Spark local, hand-built raw records): the client ceilings are folded from the
per-second client settings and the mean confirm latency, and `bottleneck` names them (sizing.criteria.rules.bottleneck,
the same rule on the same figures in plain Python as the cross-check)."""

from __future__ import annotations

import pytest

from sizing.contract.histogram import RELATIVE_ACCURACY, LogHistogram
from sizing.contract.layout import RunKey
from sizing.criteria import rules
from tests.spark_records import client_rows, node_rows, phase_row
from tests.test_spark_resources import limit_row, summarise

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n1-c5.4xlarge-gp2", "window-steps", "R1")


def with_clients(rows: list[dict], *, confirm_us: float, confirms_in_flight: int, consumers: int = 1,
                 processing_ms: float = 0.0, carried: int, prefetch: int = 100,
                 slot_trip_us: tuple[int, int] | None = None, confirmed: int | None = None) -> list[dict]:
    """client_rows with the settings of a step: its window, consumers, prefetch and processing time, each second's
    confirm latency at `confirm_us` and `carried` messages confirmed and consumed (`confirmed`: published and
    confirmed instead, the consumers behind); with `slot_trip_us` (hold, refill), each acked message held that long
    and a tenth of them waiting for a slot that long after its ack."""
    for row in rows:
        confirm = LogHistogram()
        confirm.add(confirm_us, carried)
        row.update(confirm_hist=confirm.to_bytes(), confirms_in_flight=confirms_in_flight, prefetch=prefetch,
                   consumers=consumers, processing_ms=processing_ms, published=confirmed or carried,
                   confirmed=confirmed or carried, consumed=carried, acked=carried)
        if slot_trip_us is not None:
            refills = carried // 10
            row.update(ack_hold_us=carried * slot_trip_us[0], ack_holds=carried, refill_us=refills * slot_trip_us[1],
                       refills=refills)
    return rows


def test_phase_summary_names_the_publisher_window_and_the_consumers(spark):
    """Phase 1, issue 44's measurement: 3,200 msg/s offered, 1 publisher with 200 confirms in flight, confirms after
    100 ms: ceiling 2,000 msg/s, 1,950 carried: `publisher_window` (it said `none`). Phase 2: 2 consumers at 500 ms a
    message, ceiling 4 msg/s, 4 consumed of 1,000 offered: `consumers`. Phase 3: the same window over a 20 ms
    confirm (ceiling 10,000) carries its 3,200: `none`. The node is idle in these; phase 4 is phase 1 on a node at
    its CPU quota (the node is the cause: `cpu`), phase 5 phase 1 without node figures (a busy node cannot be ruled
    out: null). Phase 6: 1 consumer with 10 slots, each held 1 ms and refilled 19 ms after its ack: ceiling 500 msg/s,
    480 consumed of the 2,000 offered and confirmed: `consumer_prefetch`."""
    phases, clients, nodes = [], [], []
    steps = {1: dict(confirm_us=100_000.0, confirms_in_flight=200, carried=1950, rate=3200.0),
             2: dict(confirm_us=5_000.0, confirms_in_flight=200, consumers=2, processing_ms=500.0, carried=4,
                     rate=1000.0),
             3: dict(confirm_us=20_000.0, confirms_in_flight=200, carried=3200, rate=3200.0),
             4: dict(confirm_us=100_000.0, confirms_in_flight=200, carried=1950, rate=3200.0),
             5: dict(confirm_us=100_000.0, confirms_in_flight=200, carried=1950, rate=3200.0),
             6: dict(confirm_us=5_000.0, confirms_in_flight=200, carried=480, rate=2000.0, prefetch=10,
                     slot_trip_us=(1_000, 19_000), confirmed=2000)}
    cpu = {1: 0.3, 2: 0.3, 3: 0.3, 4: 0.95, 6: 0.3}
    for number, step in steps.items():
        start, rate = (number - 1) * 10, step.pop("rate")
        phases.append(phase_row(KEY, number, start, 10, 2, rate))
        clients += with_clients(client_rows(KEY, number, 0, range(start, start + 10), start + 2, target_rate=rate,
                                            per_second=step["carried"]), **step)
        if number in cpu:
            nodes += node_rows(KEY, number, "a", range(start, start + 10), cpu_busy=cpu[number])
    got = {r["phase"]: r.asDict() for r in summarise(spark, phases, clients, nodes,
                                                      limit_row(KEY.config_id)).collect()}
    window, consumers, free = got[1], got[2], got[3]
    assert window["confirm_mean_ms"] == pytest.approx(100.0, rel=RELATIVE_ACCURACY)
    assert window["publisher_window_ceiling"] == pytest.approx(2000.0, rel=RELATIVE_ACCURACY)
    assert window["consumer_ceiling"] is None  # no processing time: no ceiling
    assert window["bottleneck"] == "publisher_window"
    assert window["bottleneck_detail"].startswith("publisher_window: carried 1950 msg/s of a 20")
    assert consumers["consumer_ceiling"] == pytest.approx(4.0)
    assert (consumers["bottleneck"], consumers["bottleneck_detail"]) == (
        "consumers", "consumers: consumed 4 msg/s of a 4 msg/s processing ceiling (>= 0.9; processing 0-0 ms), "
                     "target 1000")
    assert free["publisher_window_ceiling"] == pytest.approx(10_000.0, rel=RELATIVE_ACCURACY)
    assert free["bottleneck"] == "none"
    assert (got[4]["bottleneck"], got[5]["bottleneck"]) == ("cpu", None)
    prefetch = got[6]
    assert (prefetch["consumer_hold_mean_ms"], prefetch["consumer_refill_mean_ms"]) == pytest.approx((1.0, 19.0))
    assert prefetch["prefetch_ceiling"] == pytest.approx(500.0)
    assert window["prefetch_ceiling"] is None  # no window was full: no ceiling
    assert (prefetch["bottleneck"], prefetch["bottleneck_detail"]) == (
        "consumer_prefetch", "consumer_prefetch: consumed 480 msg/s of a 500 msg/s prefetch ceiling (>= 0.9; a slot's "
                             "trip: hold 1.0 ms + refill 19.0 ms), target 2000")
    # the plain-value rule gives the same labels on the same figures
    for row in (window, consumers, free, got[4], prefetch):
        assert rules.bottleneck(
            valid=row["valid"], alarm=bool(row["broker_alarm"]), mem_max_fraction=row["broker_mem_max_fraction"],
            busiest_cpu_mean=row["cpu_busiest_mean"], machine_cpu_mean=row["machine_cpu_busy_mean"],
            volume_load_share=row["volume_load_share"], ebs_load_share=row["ebs_load_share"],
            net_mbit_s=row["net_peak_mbit_s"], mbit_s_limit=row["network_limit_mbit_s"],
            target_rate=row["target_rate"], carried=rules.carried_rate(row["confirm_rate"], row["consume_rate"]),
            consume_rate=row["consume_rate"], confirm_rate=row["confirm_rate"],
            publisher_window_ceiling=row["publisher_window_ceiling"], consumer_ceiling=row["consumer_ceiling"],
            prefetch_ceiling=row["prefetch_ceiling"]) == row["bottleneck"]
