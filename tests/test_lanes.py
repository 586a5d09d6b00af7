"""The second pass's lock (tests/fixtures/lanes.py) on real flock(2) locks in a tmp dir: shared holders run side by
side, an exclusive one runs alone, and a waiting exclusive one is served before shared ones that came after it.
Known answers: the order in which threads (each with its own open file description) get the lock."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

import pytest

from tests.fixtures import lanes
from tests.fixtures.lanes import lane_of, machine_held, phase_lane, sharing

WAIT_S = 0.3  # long enough for a thread that could take the lock to have taken it


class Holder(threading.Thread):
    """Takes the machine in a mode, says when it has it, holds it until released."""

    def __init__(self, root: Path, mode: int, log: list[str], name: str) -> None:
        super().__init__(daemon=True)
        self.root, self.mode, self.log, self.label = root, mode, log, name
        self.has_it, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with machine_held(self.mode, self.root / "machine.lock", self.root / "turnstile.lock"):
            self.log.append(self.label)
            self.has_it.set()
            self.release.wait(10)


def start(root: Path, mode: int, log: list[str], name: str) -> Holder:
    holder = Holder(root, mode, log, name)
    holder.start()
    time.sleep(WAIT_S)
    return holder


def test_two_shared_holders_run_side_by_side(tmp_path):
    log: list[str] = []
    first, second = start(tmp_path, fcntl.LOCK_SH, log, "a"), start(tmp_path, fcntl.LOCK_SH, log, "b")
    assert first.has_it.is_set() and second.has_it.is_set()
    first.release.set()
    second.release.set()


def test_an_exclusive_holder_waits_for_the_shared_one_and_keeps_later_ones_out(tmp_path):
    log: list[str] = []
    shared = start(tmp_path, fcntl.LOCK_SH, log, "shared")
    alone = start(tmp_path, fcntl.LOCK_EX, log, "alone")
    later = start(tmp_path, fcntl.LOCK_SH, log, "later")
    assert log == ["shared"]  # the exclusive one waits; the later shared one queues behind it, not beside `shared`
    shared.release.set()
    assert alone.has_it.wait(5) and not later.has_it.wait(WAIT_S)
    alone.release.set()
    assert later.has_it.wait(5)
    later.release.set()
    assert log == ["shared", "alone", "later"]


class Item:
    def __init__(self, *markers: str, path: str = "") -> None:
        self.markers = set(markers)
        self.path = Path(path)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@pytest.mark.parametrize(("markers", "mode"), [
    (("cluster", "alone"), fcntl.LOCK_EX), (("alone",), fcntl.LOCK_EX), (("cluster",), fcntl.LOCK_SH), ((), None)])
def test_alone_tests_take_the_machine_and_cluster_tests_share_it(markers, mode):
    assert lane_of(Item(*markers)) == mode


@pytest.mark.parametrize(("markers", "phases"), [
    (("cluster", "alone"), (fcntl.LOCK_SH, fcntl.LOCK_EX, fcntl.LOCK_SH)),
    (("cluster",), (fcntl.LOCK_SH,) * 3), ((), (None,) * 3)])
def test_an_alone_test_is_alone_only_while_it_measures(markers, phases):
    """Its set-up and tear-down (building and destroying its cluster) share the machine; its call does not."""
    assert tuple(phase_lane(Item(*markers), phase) for phase in ("setup", "call", "teardown")) == phases


def test_an_alone_test_shares_the_machine_while_it_analyses_and_has_it_alone_again_after(tmp_path, monkeypatch):
    """Known answers on the locks: inside `sharing()` a shared holder gets in; leaving it waits until that holder is
    done, and then a new shared holder stays out. Outside an alone test's call `sharing()` takes nothing."""
    with sharing():  # no alone test in its call here: nothing held, nothing to wait for
        pass
    log: list[str] = []
    monkeypatch.setattr(lanes._Alone, "turnstile", tmp_path / "turnstile.lock")
    with machine_held(fcntl.LOCK_EX, tmp_path / "machine.lock", tmp_path / "turnstile.lock") as fd:
        monkeypatch.setattr(lanes._Alone, "fd", fd)
        beside = start(tmp_path, fcntl.LOCK_SH, log, "beside")
        assert not beside.has_it.is_set()  # the alone test measures: nothing beside it
        with sharing():
            assert beside.has_it.wait(5)  # it analyses: the other worker's test runs
            threading.Timer(WAIT_S, beside.release.set).start()
            left_at = time.monotonic()
        assert time.monotonic() - left_at >= WAIT_S * 0.9  # alone again only once the one beside it was done
        later = start(tmp_path, fcntl.LOCK_SH, log, "later")
        assert not later.has_it.is_set()
    assert later.has_it.wait(5)
    later.release.set()
    assert log == ["beside", "later"]


def test_modules_run_slow_first_then_airflow_then_the_rest_and_alone_last():
    """Both passes hand modules out in this order (`--no-loadscope-reorder`): a long module starts early, so neither
    pass ends on one worker's long module; a module keeps its tests together and in their own order."""
    items = [Item("cluster", "alone", path="m_alone"), Item("cluster", path="m_plain"),
             Item("airflow", path="m_airflow"), Item("spark", path="m_slow"), Item("spark", "slow", path="m_slow"),
             Item("cluster", path="m_plain")]
    lanes.pytest_collection_modifyitems(items)
    assert [str(item.path) for item in items] == ["m_slow", "m_slow", "m_airflow", "m_plain", "m_plain", "m_alone"]


def test_leaving_sharing_never_deadlocks_with_an_exclusive_waiter(tmp_path, monkeypatch):
    """The other worker's alone test waits in the turnstile for the machine while this one shares it: leaving
    `sharing()` lets that one measure first, then has the machine alone again (CI hung here once). The leaving runs
    in a thread with a deadline, so a deadlock fails this test instead of hanging the suite."""
    log: list[str] = []
    others: list[Holder] = []
    monkeypatch.setattr(lanes._Alone, "turnstile", tmp_path / "turnstile.lock")

    def share_then_leave() -> None:
        with sharing():
            others.append(start(tmp_path, fcntl.LOCK_EX, log, "other alone"))  # waits in the turnstile
            log.append("other waiting" if not others[0].has_it.is_set() else "other beside us")
            threading.Timer(WAIT_S, others[0].release.set).start()
        log.append("back")  # reached only once the other one had its turn

    with machine_held(fcntl.LOCK_EX, tmp_path / "machine.lock", tmp_path / "turnstile.lock") as fd:
        monkeypatch.setattr(lanes._Alone, "fd", fd)
        leaving = threading.Thread(target=share_then_leave, daemon=True)
        leaving.start()
        leaving.join(10)
        assert not leaving.is_alive(), f"leaving sharing() deadlocked with an exclusive waiter: {log}"
    assert others[0].has_it.is_set() and log == ["other waiting", "other alone", "back"]


class _Item:
    """What the lane hooks read of a pytest item: its markers and its user properties."""

    def __init__(self, *markers: str) -> None:
        self.markers, self.user_properties = set(markers), []

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


class _Reporter:
    def __init__(self, reports: list[object]) -> None:
        self.stats, self.lines = {"passed": reports}, []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line.strip())


def test_each_phase_records_its_wait_and_an_alone_call_the_time_it_held_the_machine(tmp_path, monkeypatch):
    """Known answers: a phase run through the lane hooks on real locks records its wait for the machine; an `alone`
    call also the seconds it held it (here WAIT_S of work), a `cluster` call and an alone test's set-up do not; the
    pass's summary adds them up and lists them."""
    locks = tmp_path / "machine.lock", tmp_path / "turnstile.lock"
    monkeypatch.setattr(lanes, "machine_held", lambda mode: machine_held(mode, *locks))

    def run(item: _Item, phase: str, work_s: float = 0.0) -> None:
        hook = lanes._held_for(item, phase)
        next(hook)  # the machine is held: the phase runs
        time.sleep(work_s)
        with pytest.raises(StopIteration):
            hook.send(None)

    alone, shared = _Item("alone", "cluster"), _Item("cluster")
    run(alone, "setup")
    run(alone, "call", WAIT_S)
    run(shared, "call", WAIT_S)
    assert [name for name, _ in alone.user_properties] == [lanes.WAIT_PROPERTY, lanes.WAIT_PROPERTY,
                                                           lanes.ALONE_PROPERTY]
    assert [name for name, _ in shared.user_properties] == [lanes.WAIT_PROPERTY]
    held = alone.user_properties[-1][1]
    assert WAIT_S * 0.9 <= held <= WAIT_S + 1.0

    report = type("Report", (), {"nodeid": "tests/test_x.py::test_alone", "user_properties": alone.user_properties})
    reporter = _Reporter([report])
    lanes.pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    assert reporter.lines[0].startswith(f"`alone` calls held the machine {held:,.0f} s over 1 tests")
    assert reporter.lines[1] == f"{held:.1f}s tests/test_x.py::test_alone"
    assert reporter.lines[2].startswith("waits for the machine:") and "over 2 phases" in reporter.lines[2]
