"""The demo's stack survives its own crashes (issue 25, item 2), with real processes: a service killed with -9 leaves
orphans that `make stop` ends; the demo names a dead service and the next step; a lease whose run is gone is
reclaimed. The whole stack's fault matrix (real Airflow, clusters, load) is benchmarks/fault_matrix.py, its figures
in README's "Reliability" section.

Independent counter: /proc (which processes exist, and their process groups), not the demo's own bookkeeping.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from adapters.leases import LeaseBoard
from adapters.procs import pid_alive
from app import demo

FAKE_SCHEDULER = """#!{python}
# Stands in for `airflow scheduler`: a forked worker in its process group (LocalExecutor's), and a task that
# starts a process in a session of its own (the load generator's), then waits.
import os, subprocess, sys, time
if os.fork() == 0:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    time.sleep(600)
    sys.exit(0)
time.sleep(600)
"""


def _wait(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_stop_ends_what_a_killed_scheduler_left_running(tmp_path):
    s = demo.DemoSettings(state=tmp_path / "state", bin_dir=tmp_path / "bin")
    s.bin_dir.mkdir()
    fake = s.bin_dir / "airflow"
    fake.write_text(FAKE_SCHEDULER.format(python=sys.executable))
    fake.chmod(0o755)
    scheduler = demo.stack._start(s, "scheduler", [str(fake)], dict(os.environ))
    assert demo.running_pid(s, "scheduler") == scheduler
    assert _wait(lambda: len(demo.stack_processes(s)) == 3), demo.stack_processes(s)
    os.kill(scheduler, signal.SIGKILL)
    assert _wait(lambda: not pid_alive(scheduler))
    orphans = demo.stack_processes(s)
    assert len(orphans) == 2 and all(pid_alive(pid) for pid in orphans)  # what the issue measured: left running
    assert len(set(orphans.values())) == 2  # one in the dead scheduler's group, one in a session of its own

    said: list[str] = []
    left = demo.stop(s, said.append)
    assert demo.stack_processes(s) == {} and not any(pid_alive(pid) for pid in orphans)
    assert any(line.startswith("ended 2 process(es) a crashed or stopped service left running") for line in said)
    assert not any("still alive" in item for item in left)


@pytest.mark.tools
def test_a_dead_service_is_named_with_its_log_and_the_next_step(tmp_path):
    s = demo.DemoSettings(state=tmp_path / "state", s3_port=21000 + 50 * 68 + 10)  # slot 68: this area's
    demo.start_object_store(s, lambda line: None)
    pid = demo.running_pid(s, "s3")
    try:
        with pytest.raises(demo.StackDown) as down:
            demo.check_services(s, "manual__1")  # the S3 server runs, Airflow does not
        assert str(down.value).startswith("the Airflow api-server is no longer running, so run manual__1 cannot go on")
        os.kill(pid, signal.SIGKILL)
        assert _wait(lambda: demo.running_pid(s, "s3") is None)
        with pytest.raises(demo.StackDown) as down:
            demo.check_services(s, "manual__1")
        message = str(down.value)
        assert message.startswith(f"the S3 server (pid {pid}) is no longer running, so run manual__1 cannot go on")
        assert str(s.state / "logs" / "s3.log") in message and "Next: `make stop`" in message
        assert "then `make demo` again; stored results are kept" in message
    finally:
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)


def test_a_lease_whose_run_is_gone_is_reclaimed_and_a_live_ones_is_kept(tmp_path):
    board = LeaseBoard(tmp_path)
    dead, live = "sizing_campaign/manual__old/n1-c5.2xlarge-gp2-r1", "sizing_campaign/manual__new/n1-x-r1"
    assert board.try_acquire(dead, 2).slot == 0 and board.try_acquire(live, 2).slot == 1
    assert board.try_acquire("sizing_campaign/manual__new/n1-y-r1", 2) is None  # both slots held
    reclaimed = board.reclaim(lambda owner: "manual__new" in owner)
    assert [(lease.slot, lease.owner) for lease in reclaimed] == [(0, dead)]
    assert board.holders() == {1: live}
    assert board.try_acquire("sizing_campaign/manual__new/n1-y-r1", 2).slot == 0


def test_a_server_that_retitled_itself_is_still_recognised(tmp_path):
    """Airflow's api-server rewrites its command line to `airflow api_server -- host:... port:...` (seen in /proc
    here); the demo missed it once, called it dead and left it running at `make stop`."""
    import subprocess

    s = demo.DemoSettings(state=tmp_path / "state")
    server = subprocess.Popen(["bash", "-c", 'exec -a "airflow api_server -- host:127.0.0.1 port:1" sleep 60'],
                              start_new_session=True)
    try:
        (s.state / "pids").mkdir(parents=True)
        (s.state / "pids" / "api-server.pid").write_text(str(server.pid))
        assert _wait(lambda: Path(f"/proc/{server.pid}/cmdline").read_bytes().startswith(b"airflow api_server"))
        assert demo.running_pid(s, "api-server") == server.pid
        assert demo.running_pid(s, "s3") is None
        (s.state / "pids" / "s3.pid").write_text(str(server.pid))  # the same pid, but not the S3 server's program
        assert demo.running_pid(s, "s3") is None
    finally:
        server.kill()
        server.wait()


def test_a_port_held_by_another_stack_is_refused_before_anything_starts(tmp_path: Path, capsys) -> None:
    """Two checkouts' demos on the default ports: the second's S3 server and api-server failed to bind while the
    first's answered in their place, so the second drove the first's Airflow (seen this session). Now the second
    refuses, naming the port and the variable that moves it, and starts nothing. Independent counter: the kernel's
    own answer to bind() (a listening socket of this test holds the port), and no pid file is written."""
    import socket

    from app.cli import main as sizing_cli

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        settings = demo.DemoSettings(state=tmp_path / "state", api_port=port, s3_port=port)
        # the S3 server's other ports follow the held one (app.s3server.PORT_ROLES); on a busy machine one of them
        # may be in use too and is then named after it (a CI run saw "37437 (s3), 37440 (volume)")
        with pytest.raises(demo.PortTaken, match=rf"S3 server: port\(s\) {port} \(s3\)(, \d+ \([a-z.]+\))* "
                                                 "already in use"):
            demo.start_object_store(settings, say=lambda line: None)  # after the grace a dying server gets
        with pytest.raises(demo.PortTaken, match=rf"Airflow api-server: port\(s\) {port} \(api\).*"
                                                 r"SIZING_DEMO_API_PORT=PORT make demo"):
            demo.refuse_taken_ports("Airflow api-server", {"api": settings.api_port}, "SIZING_DEMO_API_PORT", 0)
        assert not list((tmp_path / "state").rglob("*.pid"))
        # the CLI: one line, no traceback
        os.environ.update(SIZING_STATE_DIR=str(tmp_path / "state"), SIZING_DEMO_S3_PORT=str(port))
        try:
            assert sizing_cli(["demo"]) == 1
        finally:
            del os.environ["SIZING_STATE_DIR"], os.environ["SIZING_DEMO_S3_PORT"]
        err = capsys.readouterr().err
        assert f"cannot start the S3 server: port(s) {port} (s3)" in err and "Traceback" not in err
    demo.refuse_taken_ports("S3 server", {"s3": port}, "SIZING_DEMO_S3_PORT")  # free again: no refusal
