"""Workload groups in the generator (issue 14), without a broker: the plan per group and the records per group.

`Runner.drive` runs over the in-process fake worker pool of tests/test_loadgen_runner.py (fake clock). Known
answers: each group's published total equals its own schedule (foreground steps 20 then 40 msg/s for 4 s each;
background 3 publishers x 5 msg/s held for 8 s), and the accounting's per-group totals equal the same counts.
"""

from __future__ import annotations

import copy
import json

import numpy as np

from loadgen import accounting
from loadgen.groups import plan_groups
from loadgen.runner import Runner, RunOptions
from sizing.campaign import parse_campaign
from sizing.planning.timeline import expand
from tests.test_loadgen_runner import CLUSTER, SPEC, FakeClock, FakePool, read

GROUPS_SPEC = copy.deepcopy(SPEC)
GROUPS_SPEC["scenarios"] = [{
    "name": "steps", "warmup_s": 1, "steps": {"rates": [20, 40], "duration_s": 4},
    "groups": [{"name": "fg"},
               {"name": "bg", "rate": 5, "per_publisher": True,
                "workload": {"queues": {"count": 3, "name_pattern": "lazy-{n}", "type": "classic",
                                        "arguments": {"x-queue-mode": "lazy"}},
                             "message": {"size_bytes": 64}, "publishers": {"count": 3}, "consumers": {"count": 3}}}],
}]


class OwnSliceFakePool(FakePool):
    """The fake pool with several workers: each worker's books mark only its own publishers' messages delivered
    (the base fake marks the whole flat array, which two workers would count twice)."""

    def _save_books(self, cfg):
        size = cfg.offsets[-1]
        fresh = np.zeros(size, dtype=np.uint8)
        for p in cfg.publishers:
            fresh[cfg.offsets[p.index]:cfg.offsets[p.index] + self.schedules[p.index].total] = 1
        books = accounting.WorkerBooks(
            fresh, np.zeros(0, np.int64), np.zeros(0, np.int64),
            published={p.index: self.schedules[p.index].total for p in cfg.publishers},
            states={p.index: np.ones(self.schedules[p.index].total, dtype=np.uint8) for p in cfg.publishers})
        return accounting.save(accounting.worker_path(cfg.out_dir, cfg.worker), books)


def test_plan_gives_each_group_its_workers_clients_and_queues() -> None:
    scenario = parse_campaign(GROUPS_SPEC).scenarios[0]
    timeline = expand(scenario, 3)
    fg, bg = plan_groups(scenario, timeline, nodes=3, workers=3, seed="s")
    assert fg.workers == (0, 2) and bg.workers == (1,)
    assert [p.index for p in fg.publishers] == [0, 1] and [p.index for p in bg.publishers] == [2, 3, 4]
    assert {p.queue for p in bg.publishers} == {"lazy-1", "lazy-2", "lazy-3"}
    assert {p.worker for p in bg.publishers} == {1}
    assert {c.queue for c in fg.consumers} == {"q-1", "q-2"} and [c.index for c in bg.consumers] == [2, 3, 4]
    assert fg.timeline is timeline and [p.target_rate for p in bg.timeline.phases] == [15.0, 15.0]
    assert [(p.start_s, p.duration_s) for p in bg.timeline.phases] == [(p.start_s, p.duration_s)
                                                                        for p in timeline.phases]
    assert json.loads(bg.detail)["arguments"] == {"x-queue-mode": "lazy"} and fg.foreground and not bg.foreground


def test_every_record_carries_its_group_and_each_group_keeps_its_schedule(tmp_path) -> None:
    campaign = parse_campaign(GROUPS_SPEC)
    clock = FakeClock()
    # one worker asked for, two groups: the runner gives each group a worker of its own
    opts = RunOptions(workers=1, out_dir=tmp_path, upload=False, progress_interval_s=2.0, drain_timeout_s=6.0,
                      drain_idle_s=2.0)
    runner = Runner(campaign, "n3-c5.2xlarge-gp2", "steps", "fake-run", CLUSTER, options=opts, echo=lambda _: None,
                    clock=clock)
    assert runner.options.workers == 2
    pools: list[FakePool] = []
    assert runner.drive(lambda configs: pools.append(OwnSliceFakePool(configs, clock)) or pools[0]) == 0, runner.errors
    assert {c.workload.queues.type for c in pools[0].configs} == {"quorum", "classic"}
    seconds = read(tmp_path, runner, "client_seconds")
    steady = seconds[seconds.phase > 0]
    published = steady.groupby("group")["published"].sum().to_dict()
    assert published == {"fg": 20 * 4 + 40 * 4, "bg": 3 * 5 * 8}
    phases = read(tmp_path, runner, "phases")
    assert sorted(zip(phases["group"], phases["phase"], phases["target_rate"], phases["foreground"], strict=True)) == [
        ("bg", 1, 15.0, False), ("bg", 2, 15.0, False), ("fg", 1, 20.0, True), ("fg", 2, 40.0, True)]
    books = read(tmp_path, runner, "accounting")
    assert books.groupby("group")["published"].sum().to_dict() == {"fg": 240, "bg": 120}
    assert books["lost"].sum() == 0 and books["consumed_unique"].sum() == 360
