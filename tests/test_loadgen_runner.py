"""The runner's phase, drain and accounting logic without a broker: `Runner.drive` over an in-process fake worker
pool on a fake clock. The fake pool reports what a worker would (typed messages, per-second rows, an accounting
file written by `loadgen.accounting.save`), with loss, duplicates and reordering injected at known messages."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from loadgen import accounting
from loadgen.drivers import hist_bytes
from loadgen.messages import Done, Ready, Row, Start, WorkerConfig
from loadgen.runner import Runner, RunOptions
from loadgen.schedule import BatchSchedule, per_second_counts
from sizing.campaign import parse_campaign
from sizing.contract import raw_layout, records
from sizing.resources.cluster import ClusterInfo, NodeInfo

SPEC = {
    "name": "fake", "catalog": "aws-us-east-1-2020", "target": {"rate": 100, "p99_latency_ms": 1000},
    "workload": {
        "queues": {"count": 2, "name_pattern": "q-{n}", "type": "quorum"},
        "message": {"size_bytes": 256, "persistent": True},
        "publishers": {"count": 2, "confirms_in_flight": 100, "random_start_delay_s": 0},
        "consumers": {"count": 2, "prefetch": 100, "multi_ack_every": 1, "processing_ms": 0},
    },
    "clusters": {"list": [{"nodes": 3, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
    "scenarios": [{"name": "steps", "warmup_s": 1, "steps": {"rates": [20, 40], "duration_s": 4}}],
}
CLUSTER = ClusterInfo("local", "c", tuple(NodeInfo(i, f"n{i}", "127.0.0.1", 1, 2) for i in (1, 2, 3)))
WARMUP_E2E_US, STEADY_E2E_US = 900_000.0, 2_000.0
T0_EPOCH = 1_700_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def monotonic(self) -> float:
        return self.t

    def time(self) -> float:
        return T0_EPOCH + self.t


class FakePool:
    """One in-process 'worker' per config: every `receive` advances the fake clock and reports each second that
    ended, as a worker does. `consume` decides how many of the confirmed messages are delivered (the drain)."""

    def __init__(self, configs: list[WorkerConfig], clock: FakeClock, *, consume_until_s: float = 1e9,
                 lost: tuple[int, ...] = (), duplicated: tuple[int, ...] = (), reordered: tuple[int, ...] = ()):
        self.configs, self.clock, self.size = configs, clock, len(configs)
        self.consume_until_s = consume_until_s  # a consumer that stops receiving at this scenario second
        self.lost, self.duplicated, self.reordered = lost, duplicated, reordered
        self.start_cmd: Start | None = None
        self.stopped = False
        self.outbox: list = [Ready(c.worker) for c in configs]
        self.next_second = 0
        self.schedules = {p.index: BatchSchedule(c.timeline, p.share, p.start_s)
                          for c in configs for p in c.publishers}

    def _scheduled(self, cfg: WorkerConfig, second: int) -> int:
        seconds = int(cfg.timeline.duration_s) + 2
        return sum(int(per_second_counts(self.schedules[p.index].due_times(0, self.schedules[p.index].total),
                                         seconds)[second]) for p in cfg.publishers)

    def _row(self, cfg: WorkerConfig, second: int, final: bool = False) -> Row:
        timeline = cfg.timeline
        phase = timeline.phase_at(second)
        warmup = bool(phase and second < phase.steady_start_s)
        n = self._scheduled(cfg, second) if second < timeline.duration_s else 0
        consumed = n if second < self.consume_until_s else 0
        record = {c.name: 0 for c in records.CLIENT_SECONDS if c.type in ("int32", "int64")}
        record.update({c.name: 0.0 for c in records.CLIENT_SECONDS if c.type == "float64"})
        record.update({"worker": cfg.worker, "second": second, "ts": self.start_cmd.start_epoch + second,
                       "phase": phase.number if phase else 0, "warmup": warmup,
                       "target_rate": timeline.scheduled(second, second + 1), "scheduled": n, "published": n,
                       "confirmed": n, "consumed": consumed, "acked": consumed,
                       "publish_delay_hist": b"", "confirm_hist": b"",
                       "e2e_hist": hist_bytes(np.full(max(consumed, 1), WARMUP_E2E_US if warmup else STEADY_E2E_US))[0]
                       if consumed else b"", "e2e_max_us": None,
                       "rate_mode": phase.rate_mode if phase else "scheduled",
                       "latency_basis": phase.latency_basis if phase else "intended"})
        return Row(cfg.worker, record, final=final)

    def start(self, command: Start) -> None:
        self.start_cmd = command

    def receive(self, timeout: float) -> list:
        self.clock.t += timeout
        if self.start_cmd is not None and not self.stopped:
            now_s = self.clock.t - self.start_cmd.start_mono
            while now_s >= self.next_second + 1:
                self.outbox += [self._row(cfg, self.next_second) for cfg in self.configs]
                self.next_second += 1
        out, self.outbox = self.outbox, []
        return out

    def check_alive(self) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True
        for cfg in self.configs:
            self.outbox.append(self._row(cfg, self.next_second, final=True))
            self.outbox.append(Done(cfg.worker, self._save_books(cfg), 1.0, 0.5, published=0))

    def _save_books(self, cfg: WorkerConfig) -> str:
        """Every scheduled message sent and confirmed, delivered once, except the injected ones."""
        size = cfg.offsets[-1]
        fresh = np.ones(size, dtype=np.uint8)
        fresh[list(self.lost)] = 0
        fresh[list(self.duplicated)] = 2
        books = accounting.WorkerBooks(
            fresh, np.zeros(0, np.int64), np.array(self.reordered, dtype=np.int64),
            published={p.index: self.schedules[p.index].total for p in cfg.publishers},
            states={p.index: np.ones(self.schedules[p.index].total, dtype=np.uint8) for p in cfg.publishers})
        return accounting.save(accounting.worker_path(cfg.out_dir, cfg.worker), books)

    def finished(self) -> bool:
        return self.stopped and not self.outbox

    def join(self) -> None:
        pass


def make_runner(tmp_path, **options):
    campaign = parse_campaign(SPEC)
    clock = FakeClock()
    lines: list[str] = []
    opts = RunOptions(**{"workers": 1, "out_dir": tmp_path, "upload": False, "progress_interval_s": 2.0,
                         "drain_timeout_s": 6.0, "drain_idle_s": 2.0, **options})
    runner = Runner(campaign, "n3-c5.2xlarge-gp2", "steps", "fake-run", CLUSTER, options=opts, echo=lines.append,
                    clock=clock)
    return runner, clock, lines


def drive(runner, clock, **pool_args):
    pools = []

    def make_pool(configs):
        pools.append(FakePool(configs, clock, **pool_args))
        return pools[0]

    code = runner.drive(make_pool)
    return code, pools[0]


def read(tmp_path, runner, record_type):
    files = [f for f in sorted((tmp_path / raw_layout.raw_run_prefix(runner.key)).rglob("*.parquet"))
             if f"/{record_type}" in str(f)]
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def test_phases_advance_on_the_fake_clock_and_every_second_is_recorded(tmp_path):
    runner, clock, lines = make_runner(tmp_path)
    code, pool = drive(runner, clock)
    assert code == 0, runner.errors
    events = read(tmp_path, runner, "events")
    by_kind = {kind: group for kind, group in events.groupby("kind")}
    # known answer: the timeline of SPEC (two 4 s steps), stamped at scenario seconds, not at pump times
    assert by_kind["phase_start"].sort_values("phase")["second"].tolist() == [0.0, 4.0]
    assert by_kind["phase_end"].sort_values("phase")["second"].tolist() == [4.0, 8.0]
    run_start = by_kind["run_start"].iloc[0]
    assert run_start["second"] == 0.0 and run_start["ts"] == pool.start_cmd.start_epoch  # issue 12: second 0
    seconds = read(tmp_path, runner, "client_seconds")
    steady = seconds[seconds.phase > 0].sort_values("second")
    assert steady["second"].tolist() == list(range(8))
    # independent counter: the published totals equal the schedule of the timeline (20 x 4 + 40 x 4)
    assert steady["published"].sum() == 240 == runner.totals["published"]
    assert not any(line.startswith("drain:") for line in lines)  # everything was consumed: no waiting


def test_progress_p99_leaves_out_warm_up_seconds(tmp_path):
    runner, clock, lines = make_runner(tmp_path)
    assert drive(runner, clock)[0] == 0
    p99s = [float(m.group(1)) for line in lines if (m := re.search(r"p99 e2e ([\d.]+) ms", line))]
    assert p99s, lines
    # the fake reports 900 ms in warm-up seconds and 2 ms in steady ones; within the histogram's 1 %
    assert all(p == pytest.approx(STEADY_E2E_US / 1000, rel=0.011) for p in p99s), p99s


def test_drain_stops_when_consumption_stalls(tmp_path):
    runner, clock, lines = make_runner(tmp_path)
    code, pool = drive(runner, clock, consume_until_s=6)  # the last two seconds are never consumed
    assert code == 0
    assert any(line.startswith("drain: nothing consumed for 2s with 80 messages outstanding") for line in lines), lines
    stopped_at = clock.t - pool.start_cmd.start_mono
    assert 8 + 2 <= stopped_at < 8 + 6  # after the idle limit, before the drain timeout


def test_drain_stops_at_its_deadline_when_consumption_creeps(tmp_path):
    runner, clock, lines = make_runner(tmp_path, drain_idle_s=100.0)  # only the deadline can end this drain
    code, pool = drive(runner, clock, consume_until_s=6)
    assert code == 0 and "drain: timed out after 6s" in lines
    assert clock.t - pool.start_cmd.start_mono >= 8 + 6


def test_accounting_finds_injected_loss_duplicates_and_reordering_per_phase(tmp_path):
    runner, clock, _ = make_runner(tmp_path)
    # flat keys: publisher 0's messages first; phase 1 holds the first 40 of each publisher (20 msg/s x 4 s / 2)
    code, _pool = drive(runner, clock, lost=(3, 45), duplicated=(7,), reordered=(9, 50))
    assert code == 0, runner.errors
    rows = {r["phase"]: r for r in read(tmp_path, runner, "accounting").to_dict("records")}
    firsts = {layout_.index: layout_ for layout_ in runner.attempt.plan.layouts}
    # known answer from the injection: which phase each key falls in, via the plan's phase_first_seq
    def phase_of(key):
        for p in firsts.values():
            if p.offset <= key < p.offset + p.phase_first_seq[-1]:
                seq = key - p.offset
                return next(i + 1 for i in range(len(p.phase_first_seq) - 1)
                            if p.phase_first_seq[i] <= seq < p.phase_first_seq[i + 1])
        raise AssertionError(key)

    expected = {1: {"lost": 0, "duplicates": 0, "reordered": 0}, 2: {"lost": 0, "duplicates": 0, "reordered": 0}}
    for key in (3, 45):
        expected[phase_of(key)]["lost"] += 1
    expected[phase_of(7)]["duplicates"] += 1
    for key in (9, 50):
        expected[phase_of(key)]["reordered"] += 1
    for phase, want in expected.items():
        assert {k: rows[phase][k] for k in want} == want
    assert rows[1]["published"] + rows[2]["published"] == 240 and rows[1]["confirmed"] + rows[2]["confirmed"] == 240
    assert runner.manifest["accounting"] == runner.accounting


def test_the_accounting_file_round_trips(tmp_path):
    books = accounting.WorkerBooks(np.array([1, 0, 2], np.uint8), np.array([1], np.int64), np.zeros(0, np.int64),
                                   published={4: 3}, states={4: np.array([1, 1, 2], np.uint8)})
    back = accounting.load(accounting.save(str(tmp_path / "a.npz"), books))
    assert back.fresh_counts.tolist() == [1, 0, 2] and back.redelivered.tolist() == [1]
    assert back.published == {4: 3} and back.states[4].tolist() == [1, 1, 2]


def test_two_attempts_of_one_session_are_values_of_their_own_on_one_recording(tmp_path):
    """The seam a capacity search drives (loadgen.session): each attempt keeps its own nonce, key layout, placement
    and steady rows; the recording holds both on the run's clock. Known answers from the fake pool's schedule."""
    from loadgen.session import Placement
    from sizing.planning.timeline import Timeline

    runner, clock, _ = make_runner(tmp_path)
    session, recording = runner.session, runner.recording
    recording.start_mono, recording.start_epoch = clock.monotonic(), clock.time()
    own = Timeline(runner.timeline.scenario, runner.timeline.phases[:1], ())  # one 4 s phase at 20 msg/s
    recording.timeline = Timeline(runner.timeline.scenario, (), ())  # as a search's: no phase ahead of the run
    attempts = []
    for number, at_s in ((1, 1), (2, 9)):
        attempt = session.open(lambda configs: FakePool(configs, clock), own, placement=Placement(at_s, number - 1))
        placed = replace(own.phases[0], number=number, start_s=float(at_s))
        session.place(attempt, placed)
        session.follow_until_written(attempt, placed, 5.0)
        session.stop(attempt, runner.errors)
        attempts.append((attempt, placed))
    (first, p1), (second, p2) = attempts
    assert first.plan.configs[0].nonce != second.plan.configs[0].nonce and first.done and second.done
    for attempt, placed in attempts:
        rows, behind = attempt.steady_rows(placed.number)
        # warm-up 1 s of 4: three steady seconds at 20 msg/s, on the run's clock from where it was placed
        assert sorted(r["second"] for r in rows) == [placed.start_s + s for s in (1, 2, 3)] and behind == 0
        assert sum(r["published"] for r in rows) == 60
    assert first.steady_rows(p2.number) == ([], 0)  # an attempt never sees another's rows
    assert [p.number for p in recording.timeline.phases] == [1, 2] and recording.sink.written >= {1, 2}
    assert recording.totals["published"] == 2 * 80 == sum(
        r["published"] for rows in recording.sink.rows.values() for r in rows)
    assert first.accounting_rows(lambda _own: p1.number)[0]["phase"] == 1
    assert second.accounting_rows(lambda _own: p2.number)[0]["phase"] == 2
