"""The pure half of the load generator: vectorised open-loop schedule, client plan, publisher pacing on a fake
clock (no sockets)."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen import wire
from loadgen.drivers import PublisherState, SecondStats
from loadgen.messages import WorkerConfig
from loadgen.schedule import BatchSchedule, per_second_counts, plan_clients, publisher_offsets
from sizing.campaign import parse_campaign
from sizing.planning.timeline import OpenLoopSchedule, expand
from sizing.resources.cluster import ClusterInfo, NodeInfo

BASE = {
    "name": "t", "catalog": "aws-us-east-1-2020", "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 2, "name_pattern": "q-{n}", "type": "quorum"},
        "message": {"size_bytes": 256, "persistent": True},
        "publishers": {"count": 4, "confirms_in_flight": 50, "random_start_delay_s": 2},
        "consumers": {"count": 3, "prefetch": 100, "multi_ack_every": 10, "processing_ms": 0},
    },
    "clusters": {"list": [{"nodes": 3, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [
        {"name": "steps", "warmup_s": 1, "steps": {"rates": [100, 400, 1000], "duration_s": 5}},
        {"name": "peak", "warmup_s": 1,
         "publish_rate": [{"hold": 200, "for_s": 3}, {"ramp": [200, 900], "for_s": 4}, {"hold": 900, "for_s": 1.5},
                          {"ramp": [900, 0], "for_s": 2}],
         "consumer_processing_ms": [{"hold": 1, "for_s": 5}, {"ramp": [1, 30], "for_s": 5.5}]},
    ],
}


@pytest.fixture(scope="module")
def campaign():
    return parse_campaign(BASE)


def reference(timeline, share, start):
    schedule, out = OpenLoopSchedule(timeline, share, start), []
    while (due := schedule.next_due()) is not None:
        out.append(due)
    return np.array(out)


@pytest.mark.parametrize("scenario", ["steps", "peak"])
@pytest.mark.parametrize(("share", "start"), [(0.25, 0.0), (0.25, 1.37), (1 / 3, 5.0), (0.1, 9.9), (1.0, 0.2)])
def test_batch_schedule_equals_open_loop_schedule(campaign, scenario, share, start):
    timeline = expand(campaign.scenario(scenario), 3)
    expected = reference(timeline, share, start)
    batch = BatchSchedule(timeline, share, start)
    assert batch.total == len(expected)
    got = np.concatenate([batch.due_times(i, 97) for i in range(0, batch.total + 97, 97)])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert np.all(np.diff(got) >= 0)


@pytest.mark.parametrize("scenario", ["steps", "peak"])
def test_phase_first_seq_puts_every_message_in_the_phase_of_its_intended_time(campaign, scenario):
    timeline = expand(campaign.scenario(scenario), 3)
    batch = BatchSchedule(timeline, 0.25, 0.8)
    due = batch.due_times(0, batch.total)
    firsts = batch.phase_first_seq()
    assert firsts[0] == 0 and firsts[-1] == batch.total
    for i, phase in enumerate(timeline.phases):
        chunk = due[firsts[i]:firsts[i + 1]]
        assert np.all((chunk >= phase.start_s - 1e-9) & (chunk <= phase.end_s + 1e-9)), phase.name


def test_schedule_counts_per_second_follow_steps_and_ramps(campaign):
    timeline = expand(campaign.scenario("peak"), 3)
    batch = BatchSchedule(timeline, 1.0, 0.0)
    counts = per_second_counts(batch.due_times(0, batch.total), 13)
    assert counts[:3].tolist() == [200, 200, 200]
    # second 4 lies in the ramp 200 -> 900 over [3, 7): mean rate over [4, 5) is 200 + 700 * 1.5/4 = 462.5
    assert abs(counts[4] - 462.5) <= 1
    assert counts[7] == 900
    assert counts.sum() == batch.total


def test_plan_spreads_clients_over_queues_workers_and_nodes(campaign):
    workload = campaign.workload
    pubs, cons = plan_clients(workload, nodes=3, workers=2, seed="x")
    assert [p.queue for p in pubs] == ["q-1", "q-2", "q-1", "q-2"]
    assert [p.worker for p in pubs] == [0, 1, 0, 1]
    assert {c.queue for c in cons} == {"q-1", "q-2"}
    assert all(0 <= p.start_s < 2 for p in pubs) and len({p.start_s for p in pubs}) == 4
    assert sum(p.share for p in pubs) == pytest.approx(1.0)
    again, _ = plan_clients(workload, nodes=3, workers=2, seed="x")
    assert [p.start_s for p in again] == [p.start_s for p in pubs]  # seeded
    assert publisher_offsets([3, 0, 5]) == [0, 3, 3, 8]


# ------------------------------------------------------------------------------ pacing on a fake clock


class FakeLink:
    """An in-memory loadgen.protocol.Link: publish batches are the real template bytes, kept for inspection."""

    def __init__(self):
        self.template = wire.PublishTemplate(1, "q-1", 256, True, False)
        self.sent = bytearray()

    def publish_batch(self, nonce, publisher, first_seq, intended_us):
        self.sent += self.template.batch(nonce, publisher, first_seq, intended_us)

    def ack(self, delivery_tag, multiple):
        raise AssertionError("a publisher never acks")

    def backlog_bytes(self):
        return 0

    def close(self):
        pass


class FakeWorker:
    def __init__(self, duration):
        self.nonce = 42
        self.stats = SecondStats()
        self.clock = 0.0
        self.scheduled = np.zeros(duration + 1, dtype=np.int64)

    def now_s(self):
        return self.clock

    def add_scheduled(self, due):
        self.scheduled += per_second_counts(due, len(self.scheduled))


def make_publisher(campaign, scenario, confirms):
    workload = campaign.scenario(scenario).workload
    workload = type(workload)(workload.queues, workload.message,
                              type(workload.publishers)(1, confirms, 0.0), workload.consumers)
    timeline = expand(campaign.scenario(scenario), 3)
    cluster = ClusterInfo("local", "c", (NodeInfo(1, "n1", "127.0.0.1", 1, 2),))
    pubs, _ = plan_clients(workload, 1, 1)
    cfg = WorkerConfig(0, 1, cluster, workload, timeline, tuple(pubs), (), (0, 10**6), 42, "/tmp")
    worker = FakeWorker(int(timeline.duration_s))
    pub = PublisherState(pubs[0], cfg, worker)
    pub.on_open(FakeLink())
    pub.ready = True
    pub.ensure_due(1.0)
    return pub, worker, timeline


def sent_messages(pub):
    data, size, off = pub.link.sent, pub.link.template.size, pub.link.template.body_header_offset
    return [wire.parse_body_header(data, i + off) for i in range(0, len(data), size)]


def test_publisher_sends_exactly_what_is_due_on_a_fake_clock(campaign):
    pub, worker, timeline = make_publisher(campaign, "steps", confirms=0)
    expected = reference(timeline, 1.0, 0.0)
    for step in range(1, 1501):  # 15 s in 10 ms ticks
        worker.clock = step * 0.01
        pub.publish_due(worker.clock, worker.stats)
        assert pub.next_seq == np.count_nonzero(expected <= worker.clock)
    msgs = sent_messages(pub)
    assert [m[2] for m in msgs] == list(range(len(expected)))  # sequence numbers
    assert all(m[0] == 42 and m[1] == 0 for m in msgs)
    np.testing.assert_array_equal([m[3] for m in msgs], (expected * 1e6).astype(np.int64))  # intended times
    lateness = np.concatenate([sent - due for sent, due in worker.stats.delay_parts])
    assert lateness.min() >= 0 and lateness.max() <= 0.01 + 1e-9  # never more than one tick late
    assert worker.scheduled[:15].tolist() == [100] * 5 + [400] * 5 + [1000] * 5


def test_publisher_at_its_in_flight_limit_falls_behind_and_says_how_far(campaign):
    pub, worker, _ = make_publisher(campaign, "steps", confirms=20)
    # the broker confirms 20 messages every 100 ms: 200 msg/s, below the 400 and 1000 msg/s steps
    for step in range(1, 1501):
        worker.clock = step * 0.01
        if step % 10 == 0 and pub.in_flight:
            pub.on_confirm(pub.tag_base + (pub.next_seq - pub.tag_base), 1, True)
        pub.publish_due(worker.clock, worker.stats)
        assert pub.in_flight <= 20
    lateness = np.concatenate([sent - due for sent, due in worker.stats.delay_parts])
    assert lateness.max() > 4.0  # seconds behind by the end, recorded rather than hidden
    assert pub.next_seq < pub.total  # the schedule was not stretched: messages are still owed
    assert worker.stats.confirmed == pub.next_seq - pub.in_flight
    assert np.all(pub.state[:worker.stats.confirmed] == 1) and not pub.state[worker.stats.confirmed:].any()


def test_a_publisher_answers_the_workers_questions_lateness_books_and_blocked_time(campaign):
    """The query surface the worker reads a publisher through (its row's lateness, its books, connection.blocked):
    known answers on the fake clock."""
    pub, worker, timeline = make_publisher(campaign, "steps", confirms=0)
    expected = reference(timeline, 1.0, 0.0)
    worker.clock = 1.5
    pub.publish_due(worker.clock, worker.stats)  # everything due by 1.5 s is sent: nothing is late
    assert pub.lateness_s(1.5) == 0.0 and pub.sent_total == np.count_nonzero(expected <= 1.5)
    # nothing sent for 0.3 s: the next message is as late as the oldest one still due
    assert pub.lateness_s(1.8) == pytest.approx(1.8 - expected[pub.next_seq])
    taken, states = pub.books()
    assert taken == pub.next_seq and len(states) == pub.total
    # blocked at 2.25 s: the second [2, 3) counts 0.5 s of it when it closes at 2.75 s, 0.25 s more at unblocking
    assert pub.set_blocked(True, 2.25, 2.0) == 0.0
    assert pub.blocked_ms_in(2.0, 2.75) == pytest.approx(500.0)
    assert pub.set_blocked(True, 2.5, 2.0) == 0.0  # already blocked: still since 2.25 s
    assert pub.set_blocked(False, 3.25, 3.0) == pytest.approx(250.0)  # the new second's part
    assert pub.blocked_ms_in(3.0, 4.0) == 0.0 and pub.set_blocked(False, 3.5, 3.0) == 0.0


def test_a_blocked_connections_event_carries_the_brokers_own_reason():
    """connection.blocked's reason as the broker sent it (pika hands the callback the Method frame): the alarm that
    blocked the publishers, which a management sample taken every few seconds can miss (known answer: the frame pika
    builds from the broker's method)."""
    from pika import frame, spec

    from loadgen.client import _blocked_reason

    assert _blocked_reason(frame.Method(0, spec.Connection.Blocked(reason="low on memory"))) == "low on memory"
    assert _blocked_reason(frame.Method(0, spec.Connection.Blocked(reason=b"low on disk"))) == "low on disk"
    assert _blocked_reason(None) is None
