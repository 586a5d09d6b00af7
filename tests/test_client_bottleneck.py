"""Issue 44, known answers of the bottleneck rule on plain values: the clients' own ceilings (a publisher's confirm
window by Little's law, consumers' processing time, consumers' prefetch windows by the same law) and the order that
puts a node at its CPU quota before memory merely near its watermark (sizing.criteria.rules, "bottleneck")."""

from __future__ import annotations

import numpy as np
import pytest

from sizing.criteria import rules

# A node nowhere near a limit, a valid phase, no alarm: before issue 44 every phase below was `none`.
IDLE = dict(valid=True, alarm=False, mem_max_fraction=0.1, busiest_cpu_mean=0.3, machine_cpu_mean=0.3,
            volume_load_share=None, ebs_load_share=None, net_mbit_s=None, mbit_s_limit=None)


def test_a_confirm_window_over_its_mean_confirm_latency_is_littles_law():
    assert rules.publisher_window_ceiling(1, 200, 100.0) == pytest.approx(2000.0)  # 200 / 0.1 s
    assert rules.publisher_window_ceiling(4, 50, 20.0) == pytest.approx(10_000.0)  # 4 x 50 / 0.02 s
    # no confirms, no publishers or no latency measured: no ceiling
    assert rules.publisher_window_ceiling(1, 0, 100.0) is None
    assert rules.publisher_window_ceiling(0, 200, 100.0) is None
    assert rules.publisher_window_ceiling(1, 200, None) is None
    # the report's w / RTT is the same law over an injected round trip (one home: window_ceiling)
    assert rules.window_bound(200, 100.0) == rules.window_ceiling(200, 0.1) == pytest.approx(2000.0)


def test_consumers_at_500_ms_a_message_carry_two_messages_a_second_each():
    assert rules.consumer_ceiling(2, 500.0) == pytest.approx(4.0)
    assert rules.consumer_ceiling(25, 10.0) == pytest.approx(2500.0)
    per_second = rules.consumer_ceiling(np.array([2, 2]), np.array([500.0, 250.0]))  # the fold's per-second form
    assert per_second.tolist() == pytest.approx([4.0, 8.0])


def test_the_measured_1_node_phase_is_bound_by_its_publisher_window():
    """Issue 44's measurement: 3,200 msg/s offered, 200 confirms in flight, ~100 ms mean confirm latency (ceiling
    2,000 msg/s); carried 1,950: `publisher_window`, where the rule said `none`."""
    ceiling = rules.publisher_window_ceiling(1, 200, 100.0)
    got = rules.bottleneck(**IDLE, target_rate=3200.0, carried=1950.0, consume_rate=1950.0,
                           publisher_window_ceiling=ceiling)
    assert got == "publisher_window"
    # the same carried rate and window well under it (a 50 ms latency: ceiling 4,000): nothing near a limit
    assert rules.bottleneck(**IDLE, target_rate=3200.0, carried=1950.0, consume_rate=1950.0,
                            publisher_window_ceiling=rules.publisher_window_ceiling(1, 200, 50.0)) == "none"
    # a matched target is not limited by anything, however full the window
    assert rules.bottleneck(**IDLE, target_rate=1950.0, carried=1950.0, consume_rate=1950.0,
                            publisher_window_ceiling=ceiling) == "none"
    # closed loop (max mode, target 0): the window is what held the rate
    assert rules.bottleneck(**IDLE, target_rate=0.0, carried=1950.0, consume_rate=1950.0,
                            publisher_window_ceiling=ceiling) == "publisher_window"


def test_consumers_stalled_at_500_ms_a_message_are_the_bottleneck():
    ceiling = rules.consumer_ceiling(2, 500.0)
    got = rules.bottleneck(**IDLE, target_rate=1000.0, carried=3.9, consume_rate=3.9, consumer_ceiling=ceiling)
    assert got == "consumers"
    # the backlog they leave fills memory near the watermark: still the consumers (the cause) ...
    near = {**IDLE, "mem_max_fraction": 0.95}
    assert rules.bottleneck(**near, target_rate=1000.0, carried=3.9, consume_rate=3.9,
                            consumer_ceiling=ceiling) == "consumers"
    # ... until the alarm blocks the publishers outright
    assert rules.bottleneck(**{**near, "alarm": True}, target_rate=1000.0, carried=3.9, consume_rate=3.9,
                            consumer_ceiling=ceiling) == "memory"
    # consumers that keep up with a target they are far from: not named
    assert rules.bottleneck(**IDLE, target_rate=3.0, carried=3.0, consume_rate=3.0,
                            consumer_ceiling=ceiling) == "none"


def test_a_prefetch_window_over_its_slots_trip_is_littles_law():
    """A slot is held for the hold (delivery -> ack) plus the refill (the ack freeing the slot -> the
    delivery): 2 consumers x 10 slots over 1 + 19 ms carry 1,000 msg/s."""
    assert rules.prefetch_ceiling(2, 10, 1.0, 19.0) == pytest.approx(1000.0)
    assert rules.prefetch_ceiling(1, 1, None, 20.0) == pytest.approx(50.0)  # no hold measured: the refill alone
    # no message ever waited for a slot (no refill), no consumers, no prefetch (unlimited) or a zero trip: no ceiling
    assert rules.prefetch_ceiling(2, 10, 1.0, None) is None
    assert rules.prefetch_ceiling(0, 10, 1.0, 19.0) is None
    assert rules.prefetch_ceiling(2, 0, 1.0, 19.0) is None
    assert rules.prefetch_ceiling(2, 10, 0.0, 0.0) is None


def test_consumers_held_by_their_prefetch_are_named_after_the_node_and_before_the_publishers():
    ceiling = rules.prefetch_ceiling(1, 10, 0.5, 20.0)  # 488 msg/s
    behind = {"target_rate": 2000.0, "carried": 470.0, "consume_rate": 470.0, "confirm_rate": 1990.0}
    assert rules.bottleneck(**IDLE, **behind, prefetch_ceiling=ceiling) == "consumer_prefetch"
    # consumed well under it (the window was full now and then): not named
    assert rules.bottleneck(**IDLE, **{**behind, "carried": 300.0, "consume_rate": 300.0},
                            prefetch_ceiling=ceiling) == "none"
    # a node at its CPU quota delivers late and so fills the windows too: the node is the cause
    assert rules.bottleneck(**{**IDLE, "busiest_cpu_mean": 0.99}, **behind, prefetch_ceiling=ceiling) == "cpu"
    # both windows full, the consumers behind: theirs first (the publishers' confirms wait on nothing they do)
    assert rules.bottleneck(**IDLE, **behind, prefetch_ceiling=ceiling,
                            publisher_window_ceiling=480.0) == "consumer_prefetch"
    # consumers that keep up with publishers held by their confirm window are not the bound, though their slots'
    # trips give a ceiling at their rate (fidelity-001/fid2's st1 layouts: late publishers' messages look as if they
    # waited for a slot): the publishers' window is named
    assert rules.bottleneck(**IDLE, **{**behind, "confirm_rate": 470.0}, prefetch_ceiling=ceiling,
                            publisher_window_ceiling=480.0) == "publisher_window"


def test_a_node_at_its_cpu_quota_is_cpu_bound_though_its_memory_nears_the_watermark():
    at_quota = {**IDLE, "busiest_cpu_mean": 0.99, "mem_max_fraction": 0.95}
    assert rules.bottleneck(**at_quota) == "cpu"
    # an active alarm still names memory: it blocks publishers, whatever the CPU
    assert rules.bottleneck(**{**at_quota, "alarm": True}) == "memory"
    # memory near the watermark on an idle CPU is memory, as before
    assert rules.bottleneck(**{**IDLE, "mem_max_fraction": 0.95}) == "memory"
    # a node at its quota fills its publishers' windows too: the node is the cause, the window its symptom
    assert rules.bottleneck(**at_quota, target_rate=3200.0, carried=1950.0, consume_rate=1950.0,
                            publisher_window_ceiling=2000.0) == "cpu"


def test_client_labels_need_no_node_figures_only_where_nothing_before_them_is_unknown():
    ceiling = rules.consumer_ceiling(2, 500.0)
    assert rules.bottleneck(**IDLE, resources_seen=False, target_rate=1000.0, carried=3.9, consume_rate=3.9,
                            consumer_ceiling=ceiling) == "consumers"
    # an alarm needs none either; memory near its watermark comes after cpu, unknown without them
    assert rules.bottleneck(**{**IDLE, "alarm": True}, resources_seen=False) == "memory"
    assert rules.bottleneck(**{**IDLE, "mem_max_fraction": 0.95}, resources_seen=False) is None
    # the window comes after cpu: without node figures a busy node cannot be ruled out
    assert rules.bottleneck(**IDLE, resources_seen=False, target_rate=3200.0, carried=1950.0, consume_rate=1950.0,
                            publisher_window_ceiling=2000.0) is None


def test_every_check_of_the_order_names_a_label_of_the_table():
    assert {rules.bottleneck_label(c) for c in rules.BOTTLENECK_ORDER} == set(rules.BOTTLENECKS)
    assert rules.BOTTLENECK_ORDER.index("cpu") < rules.BOTTLENECK_ORDER.index("memory")
    assert rules.BOTTLENECK_ORDER[:rules.BOTTLENECK_ORDER.index("cpu")] == rules.DECIDED_WITHOUT_NODES


def test_a_phase_summary_row_gets_the_label_of_its_own_figures():
    """rules.phase_bottleneck reads a row by phase_summary's column names (what a run fixture keeps): the carried
    rate is the lower of the two rates, a missing figure decides nothing, and without node figures only the checks
    that need none can name the phase."""
    row = {"valid": True, "broker_alarm": False, "broker_mem_max_fraction": 0.2, "cpu_busiest_mean": 0.3,
           "machine_cpu_busy_mean": 0.4, "resource_nodes": 1, "target_rate": 3200.0, "confirm_rate": 3190.0,
           "consume_rate": 1950.0, "publisher_window_ceiling": 2000.0}
    assert rules.phase_bottleneck(row) == "publisher_window"  # carried 1,950 (the consumed rate) of a 2,000 window
    assert rules.phase_bottleneck({**row, "cpu_busiest_mean": 0.97}) == "cpu"
    assert rules.phase_bottleneck({**row, "cpu_busiest_mean": 0.97, "resource_nodes": 0}) is None
    assert rules.phase_bottleneck({**row, "consumer_ceiling": 1960.0, "resource_nodes": None}) == "consumers"
    assert rules.phase_bottleneck({**row, "valid": None}) == "generator"
    assert rules.phase_bottleneck({**row, "publisher_window_ceiling": None}) == "none"


def test_the_checks_read_only_the_columns_a_run_fixture_keeps():
    """Known answer: every column bottleneck_checks asks for (by any of its three readers) is one of
    rules.BOTTLENECK_COLUMNS, the list app/runfixture keeps, and every listed column but resource_nodes (read by the
    bottleneck itself, for `None`) is asked for: a check reading a new column without the list fails here."""
    asked: set[str] = set()

    def reader(missing: float):
        def read(name: str) -> float:
            asked.add(name)
            return missing
        return read

    checks = rules.bottleneck_checks(reader(0.0), reader(rules.UNKNOWN_LIMIT), reader(False), carried=0.0)
    assert set(checks) == set(rules.BOTTLENECK_ORDER)
    assert asked == set(rules.BOTTLENECK_COLUMNS) - {"resource_nodes"}
