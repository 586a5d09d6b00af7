"""Supervising the demo's stack: its services as processes (start, pid files, ports), the local S3 server and its
bucket, ending what a stopped or crashed stack left (interrupted runs, orphans, clusters, envelopes, leases), `stop`
and `clean`, and the check that every service still runs."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from adapters import airflowapi, httpprobe
from adapters.leases import LeaseBoard
from adapters.procs import busy_ports, pid_alive, stop_process_group
from adapters.statepaths import StatePaths
from app import s3server, stackstate
from app.demo.settings import (
    DAG_ID,
    PROGRAMS,
    REPO_ROOT,
    SERVICE_NAMES,
    SERVICES,
    STACK_MARKER,
    TASK_FINISHED,
    UNFINISHED,
    DemoSettings,
    airflow_env,
    use_stack,
)
from app.demo.watch import AirflowClient

# ------------------------------------------------------------------------------------------ processes


def _pid_file(s: DemoSettings, name: str) -> Path:
    return s.paths.pids / f"{name}.pid"



def running_pid(s: DemoSettings, name: str) -> int | None:
    """The service's pid while its process is alive and still runs the service's program."""
    path = _pid_file(s, name)
    if not path.exists():
        return None
    pid = int(path.read_text().strip() or 0)
    return pid if pid and pid_alive(pid) and _runs(pid, PROGRAMS.get(name, "")) else None


def _runs(pid: int, program: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    # Airflow's servers retitle themselves ("airflow api_server -- host:..."), all in argv[0]: its first word counts.
    words = [arg.decode(errors="replace").split(" ", 1)[0] for arg in argv[:2] if arg]
    return any(Path(word).name == program for word in words)


def _start(s: DemoSettings, name: str, command: list[str], env: Mapping[str, str]) -> int:
    pid = running_pid(s, name)
    if pid:
        return pid
    s.paths.logs.mkdir(parents=True, exist_ok=True)
    _pid_file(s, name).parent.mkdir(parents=True, exist_ok=True)
    log = open(s.paths.log(name), "ab")  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env={**env, STACK_MARKER: str(s.state)}, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    _pid_file(s, name).write_text(str(proc.pid))
    return proc.pid


class PortTaken(RuntimeError):
    """A port this stack's service is about to listen on is held by something else."""


def refuse_taken_ports(service: str, ports: Mapping[str, int], variable: str, grace_s: float = 10.0) -> None:
    """Before a service of this stack starts: its ports must be free. Something else listening there (another
    checkout's `make demo`, any server) would make the new service fail to bind while the old one answers in its
    place, and this stack would then drive the other's Airflow or S3 server. A process of ours killed a moment ago
    may still hold them for `grace_s` (its leader is a zombie while its other threads still close their sockets)."""
    deadline = time.monotonic() + grace_s
    while (taken := [f"{port} ({role})" for role, port in ports.items() if busy_ports(port, 1)]) and (
            time.monotonic() < deadline):
        time.sleep(0.2)
    if taken:
        raise PortTaken(f"cannot start the {service}: port(s) {', '.join(taken)} already in use by something that is "
                        f"not this stack's (another checkout's `make demo`? `make stop` there), or start this one on "
                        f"other ports: {variable}=PORT make demo. Nothing was started.")



def start(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """Start whatever is not running yet (S3 server, Airflow) and wait until it answers.

    When the scheduler is not running, runs a previous stack left unfinished (`make stop` or a crash in the
    middle of a run) are ended first (clusters torn down, run marked failed), before a new scheduler could
    resume them silently.
    """
    env = airflow_env(s)
    use_stack(s)
    start_object_store(s, say)
    fresh_scheduler = not running_pid(s, "scheduler")
    if not all(running_pid(s, name) for name in ("api-server", "scheduler", "dag-processor")):
        if not running_pid(s, "api-server"):
            refuse_taken_ports("Airflow api-server", {"api": s.api_port}, "SIZING_DEMO_API_PORT")
        s.airflow_home.mkdir(parents=True, exist_ok=True)
        s.passwords_file.write_text(json.dumps({s.user: s.password}))
        say("airflow db migrate ...")
        subprocess.run([str(s.bin_dir / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
        _start(s, "api-server", [str(s.bin_dir / "airflow"), "api-server"], env)
    say(f"waiting for the Airflow api-server on {s.api_url} (about 30 s on a fresh start) ...")
    airflowapi.wait_healthy(s.api_url, 120)
    stackstate.write_state(s.stack_state(), s.paths.stack_file)
    if fresh_scheduler:
        # A scheduler that died leaves its LocalExecutor workers and task processes running: they would go on
        # taking cluster slots and starting load after the clean-up below. They go first.
        end_orphans(s, _service_groups(s, ("s3", "api-server", "dag-processor")), say)
        end_interrupted_runs(s, say)
        _reclaim_envelopes(s, say)  # a crash with no run left to end may still have left envelopes
    for name in ("scheduler", "dag-processor"):
        _start(s, name, [str(s.bin_dir / "airflow"), name], env)
    say(f"Airflow on {s.api_url} (LocalExecutor, parallelism {s.parallelism})")


def start_object_store(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """The local S3 server (SeaweedFS) on its data directory, and the bucket: what earlier runs stored is there."""
    use_stack(s)
    server = s.s3_server()
    if not running_pid(s, "s3"):
        refuse_taken_ports("S3 server", server.ports(), "SIZING_DEMO_S3_PORT")
        say(f"starting the S3 server on {s.s3_url} (SeaweedFS; objects kept in {s.store_dir}) ...")
        server.write_config()
        _start(s, "s3", server.command(), os.environ)
    httpprobe.wait_answering(s.s3_url, 60, "S3 server")
    _ensure_bucket(s, timeout_s=60)
    _wait_volumes(s, timeout_s=60)
    say(f"S3 on {s.s3_url}, bucket {s.bucket} (kept on disk in {s.store_dir}; `make clean` deletes it)")


def _ensure_bucket(s: DemoSettings, timeout_s: float) -> None:
    """The bucket, once the server's filer accepts writes (its HTTP port answers a moment earlier)."""
    from botocore.exceptions import ClientError, ConnectionError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            s.s3.ensure_bucket()
            return
        except (ConnectionError, ClientError) as err:
            status = getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 503)
            if status < 500 or time.monotonic() >= deadline:
                raise TimeoutError(f"S3 server at {s.s3_url} did not accept bucket {s.bucket} within "
                                   f"{timeout_s:.0f}s: {err} (its log: {s.paths.log('s3')})") from err
        time.sleep(0.5)


def _wait_volumes(s: DemoSettings, timeout_s: float) -> None:
    """Until the server's master knows every volume on disk: right after a restart its S3 port answers while the
    volume server is still registering, and a read of an older object then fails."""
    server = s.s3_server()
    master = f"http://127.0.0.1:{server.ports()['master']}"
    deadline = time.monotonic() + timeout_s
    waiting = sorted(s3server.volume_ids_on_disk(s.store_dir))
    while waiting:
        with contextlib.suppress(httpprobe.HttpError, ValueError):
            waiting = [v for v in waiting if not s3server.volume_known(
                httpprobe.get_json(f"{master}/dir/lookup", {"volumeId": v}))]
        if waiting and time.monotonic() >= deadline:
            raise TimeoutError(f"S3 server at {s.s3_url}: volume(s) {waiting} in {s.store_dir} not served after "
                               f"{timeout_s:.0f}s (its log: {s.paths.log('s3')})")
        if waiting:
            time.sleep(0.5)


def end_interrupted_runs(s: DemoSettings, say: Callable[[str], None] = print) -> list[str]:
    """With no scheduler running, every queued or running run was interrupted: tear down what it left
    (cluster processes, Terraform state, leases) and mark it failed. Returns the run ids ended."""
    try:
        client = AirflowClient(s)
        runs = client.runs(DAG_ID, UNFINISHED) if client.dag_exists(DAG_ID) else []
    except Exception as err:  # a stack that cannot answer has nothing to end
        say(f"(could not list interrupted runs: {err})")
        return []
    if not runs:
        return []
    _tear_down_leftovers(s, say)
    ended = []
    for run in runs:
        client.patch_run_state(DAG_ID, run["dag_run_id"], "failed")
        # Marking a run failed skips its pending tasks but leaves its teardowns (terraform_destroy) to run, and the
        # run running until they have; it then ends on its leaves, all skipped or successful: "success" (measured,
        # fault matrix case A). The clusters are torn down above, so the teardowns are skipped too and the run marked
        # failed again, for good.
        for ti in client.task_instances(DAG_ID, run["dag_run_id"]):
            if ti.get("state") not in TASK_FINISHED:
                client.patch_task_state(DAG_ID, run["dag_run_id"], ti["task_id"], ti.get("map_index", -1), "skipped")
        client.patch_run_state(DAG_ID, run["dag_run_id"], "failed")
        ended.append(run["dag_run_id"])
        say(f"ended interrupted run {run['dag_run_id']} (was {run['state']}): marked failed, its clusters torn down")
    return ended


def _leftover_workspaces(s: DemoSettings) -> list[Path]:
    """Local Terraform workspaces whose state still holds resources (a cluster no destroy has removed)."""
    out = []
    # the stack's own state dir, and the repository's default one (where clusters of earlier versions landed: their
    # Terraform default ignored SIZING_STATE_DIR)
    for root in dict.fromkeys([s.paths.terraform.resolve(), StatePaths.from_env({}).terraform.resolve()]):
        for tfstate in sorted(root.glob("*/*/terraform.tfstate")) if root.exists() else ():
            try:
                resources = json.loads(tfstate.read_text()).get("resources") or []
            except (OSError, ValueError):
                continue
            vars_file = tfstate.parent / "vars.tfvars.json"
            if resources and vars_file.exists() and "port_base" in vars_file.read_text():
                out.append(tfstate.parent)
    return out


def _tear_down_leftovers(s: DemoSettings, say: Callable[[str], None]) -> list[str]:
    """Kill cluster and load-generator processes of demo runs, destroy their Terraform state, drop leases."""
    from adapters.terraform import TERRAFORM_ROOT, TerraformError, TerraformStack, Workspace

    left = []
    for pid in _leftover_pids(s):
        stop_process_group(pid, grace_s=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        say(f"stopped leftover process {pid}")
    for ws_dir in _leftover_workspaces(s):
        stack = TerraformStack(Workspace(stack_dir=TERRAFORM_ROOT / "stacks" / "local", state_dir=ws_dir),
                               runner=_quiet_terraform)
        try:
            stack.destroy()
            say(f"destroyed leftover cluster {ws_dir.parent.name}/{ws_dir.name}")
        except TerraformError as err:
            left.append(f"Terraform state {ws_dir} (destroy failed: {str(err).splitlines()[0]})")
    left += _reclaim_envelopes(s, say)
    leases = s.paths.leases
    for board_dir in sorted(p for p in leases.iterdir() if p.is_dir()) if leases.exists() else ():
        dropped = LeaseBoard(board_dir).clear()
        if dropped:
            say(f"dropped {dropped} cluster lease(s) of {board_dir.name}")
    return left


def _reclaim_envelopes(s: DemoSettings, say: Callable[[str], None]) -> list[str]:
    """The scale model's envelopes (cgroups, mounts, loop devices) and the nodes' networks (namespaces, links) a
    crash left that no destroy removed; what is still there afterwards, one line per state root."""
    from adapters import netns
    from adapters.envelope import EnvelopeError, leftovers, reclaim

    left = []
    for root in dict.fromkeys([s.paths.terraform.resolve(), StatePaths.from_env({}).terraform.resolve()]):
        try:
            for line in reclaim(root):
                say(f"reclaimed envelope: {line}")
        except EnvelopeError as err:
            left.append(f"envelopes under {root} ({err})")
        rest = leftovers(root)
        if not rest.empty():
            left.append(f"envelopes under {root}: {rest.describe()}")
        if (slots := netns.recorded_slots(root)) and netns.available() is None:
            try:
                for line in netns.reclaim_recorded(slots):
                    say(f"reclaimed network: {line}")
            except netns.NetnsError as err:
                left.append(f"networks under {root} ({err})")
            if still := netns.leftover_slots(slots):
                left.append(f"networks under {root}: slot(s) {', '.join(map(str, still))}")
    return left


def _quiet_terraform(command, logger=None, capture_stdout: bool = False) -> str:
    import logging

    from adapters.terraform import run

    quiet = logging.getLogger("sizing.demo.terraform")
    quiet.setLevel(logging.WARNING)
    return run(command, quiet, capture_stdout=capture_stdout)


def stop(s: DemoSettings, say: Callable[[str], None] = print) -> list[str]:
    """Stop the scheduler first (nothing resumes), end unfinished runs, stop the servers, then any load
    generator or RabbitMQ node a run left behind; destroy leftover cluster state; drop cluster leases.
    Says what it leaves behind, and returns that list."""
    for name in ("scheduler", "dag-processor"):
        pid = running_pid(s, name)
        if pid:
            stop_process_group(pid)
            say(f"stopped {name} (pid {pid})")
    end_orphans(s, _service_groups(s, ("api-server", "s3")), say)  # a crashed scheduler's workers and tasks
    if running_pid(s, "api-server"):
        end_interrupted_runs(s, say)
    for name in ("api-server", "s3"):
        pid = running_pid(s, name)
        if pid:
            stop_process_group(pid)
            say(f"stopped {name} (pid {pid})")
    end_orphans(s, set(), say)
    for name in SERVICES:  # kept until now: a dead service's process group is how its orphans are found
        _pid_file(s, name).unlink(missing_ok=True)
    left = _tear_down_leftovers(s, say)
    left += [f"process {pid} (still alive)" for pid in sorted(set(_leftover_pids(s)) | set(stack_processes(s)))]
    s.paths.stack_file.unlink(missing_ok=True)
    if s.state.exists():
        left.append(f"{s.state} (stored results, Airflow DB and task logs, Terraform state, service logs; "
                    "`make clean` removes it)")
    say("left behind: " + ("; ".join(left) if left else "nothing")
        + f". Stored results (raw runs, tables, reports) stay in {s.store_dir}: the next `make demo` serves them "
        "again; `make clean` deletes them.")
    return left


def clean(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """`make clean`: stop the stack, then delete the state dir, stored results included, saying what goes."""
    stop(s, lambda line: None)
    if not s.state.exists():
        say(f"nothing to delete: {s.state} does not exist")
        return
    files, size = s3server.stored_size(s.store_dir)
    say(f"deleting {s.state}: the local S3 store's {files} file(s), {size / 2**20:.1f} MiB (every stored raw run, "
        "table and report), the Airflow DB, task logs and Terraform state")
    shutil.rmtree(s.state)


def stack_processes(s: DemoSettings) -> dict[int, int]:
    """{pid: process group} of every live process of this stack (this process excepted; epmd too: a node of ours
    may have started it, every Erlang node on the machine uses it): those carrying the stack's marker, and those in
    the process group of a service that run its program (each leads its own, so the group outlives a killed leader;
    Airflow's servers retitle themselves over their environment, where the marker was). The program is checked
    because a pid file outlives its process: once the machine hands that pid out again (pids wrap around), it names
    someone else's group (a CI run once lost a test process group that way)."""
    marker = f"{STACK_MARKER}={s.state}".encode() + b"\0"
    groups: dict[int, str] = {}  # process group -> the program of the service that leads it
    booted = _boot_time()
    for pid_file in s.paths.pids.glob("*.pid") if s.paths.pids.exists() else ():
        with contextlib.suppress(OSError, ValueError):
            if pid_file.stat().st_mtime >= booted:  # a pid from before a reboot names someone else's group now
                groups[int(pid_file.read_text().strip())] = PROGRAMS.get(pid_file.stem, "")
    out = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            group = os.getpgid(int(proc.name))
            marked = marker in (proc / "environ").read_bytes() + b"\0"
            if not marked and not (group in groups and _runs(int(proc.name), groups[group])):
                continue
            if not pid_alive(int(proc.name)):
                continue
            if (proc / "comm").read_text().strip() == "epmd":  # shared by every Erlang node on the machine
                continue
            out[int(proc.name)] = os.getpgid(int(proc.name))
        except (OSError, ProcessLookupError):
            continue
    return out


def _boot_time() -> float:
    try:
        return float(next(line.split()[1] for line in Path("/proc/stat").read_text().splitlines()
                          if line.startswith("btime ")))
    except (OSError, StopIteration, ValueError):
        return 0.0


def _service_groups(s: DemoSettings, names: tuple[str, ...]) -> set[int]:
    """Process groups of the named services that are running (each service leads a session of its own)."""
    return {pid for pid in (running_pid(s, name) for name in names) if pid}


def end_orphans(s: DemoSettings, keep_groups: set[int], say: Callable[[str], None] = print,
                grace_s: float = 10.0) -> list[int]:
    """End every process of this stack outside the `keep_groups` process groups: SIGTERM, then SIGKILL after
    `grace_s`. Returns the pids ended."""
    victims = sorted(pid for pid, group in stack_processes(s).items() if group not in keep_groups)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline and any(pid_alive(pid) for pid in victims):
            for pid in victims:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(0.2)
        if not any(pid_alive(pid) for pid in victims):
            break
    if victims:
        say(f"ended {len(victims)} process(es) a crashed or stopped service left running (pids "
            f"{', '.join(map(str, victims[:10]))}{', ...' if len(victims) > 10 else ''})")
    return victims


class StackDown(RuntimeError):
    """A service of the demo's stack died: the message says which, what it means and what to do next."""


def check_services(s: DemoSettings, run_id: str | None = None) -> None:
    """Raises StackDown naming the first service of the stack whose process is gone."""
    for name in ("s3", "api-server", "scheduler", "dag-processor"):
        if running_pid(s, name):
            continue
        pid_file = _pid_file(s, name)
        was = f" (pid {pid_file.read_text().strip()})" if pid_file.exists() else ""
        run = f"run {run_id} cannot go on" if run_id else "nothing can run"
        raise StackDown(f"{SERVICE_NAMES[name]}{was} is no longer running, so {run} (its log: "
                        f"{s.paths.log(name)}). Next: `make stop` (ends the run, tears its clusters "
                        f"down, ends what the service left running), then `make demo` again; stored results are "
                        f"kept.")


def _leftover_pids(s: DemoSettings) -> list[int]:
    """Processes started by demo runs: loadgen runs and Erlang VMs whose command line names our state dir."""
    marker = str(s.state)
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and ("beam.smp" in cmdline or "loadgen" in cmdline or "epmd" in cmdline):
            out.append(int(proc.name))
    return out
