"""The one-command local demo: S3-compatible server + Airflow (LocalExecutor) on 127.0.0.1, a
`sizing_campaign` run through the REST API, progress, the leaderboard. Idempotent; `stop()` undoes it.

No Airflow import here: Airflow runs as its own processes (api-server, scheduler, dag-processor) and
is driven over HTTP like a user would. Everything lives under <repo>/.state (SIZING_STATE_DIR).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters import airflowapi, httpprobe
from adapters.airflowapi import AirflowLogin, HttpError
from adapters.leases import LeaseBoard
from adapters.objectstore import S3Settings
from adapters.planning import slot_offset
from adapters.procs import busy_ports, pid_alive, stop_process_group
from adapters.statepaths import StatePaths, state_dir
from app import s3server, stackstate
from app.stackstate import DemoState
from sizing.layout import DEFAULT_BUCKET, TABLES_ROOT, report_key, s3_uri, table_prefix

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("s3", "api-server", "scheduler", "dag-processor")
DAG_ID = "sizing_campaign"
FINISHED = {"success", "failed"}
UNFINISHED = ("queued", "running")
TASK_FINISHED = {"success", "failed", "skipped", "upstream_failed", "removed"}
LOCAL_S3_KEY = LOCAL_S3_SECRET = "testing"  # the local S3 server's only identity (app.s3server), on 127.0.0.1
# Set in the environment of every process the stack starts, and so inherited by everything those start (LocalExecutor
# workers, task processes, load generators, Spark): `make stop` finds the orphans of a crashed service by it.
STACK_MARKER = "SIZING_DEMO_STACK"
SERVICE_NAMES = {"s3": "the S3 server", "api-server": "the Airflow api-server", "scheduler": "the Airflow scheduler",
                 "dag-processor": "the Airflow dag-processor"}
# What each service's command line runs: a pid file whose process runs something else (a pid reused after a
# reboot, a pid file of an older demo) names no running service.
PROGRAMS = {"s3": s3server.PROGRAM, "api-server": "airflow", "scheduler": "airflow", "dag-processor": "airflow"}


@dataclass(frozen=True)
class DemoSettings:
    state: Path
    api_port: int = 8080
    s3_port: int = 9090
    bucket: str = DEFAULT_BUCKET
    user: str = "admin"
    password: str = "admin"
    parallelism: int = 4
    slot_offset: int = 0
    bin_dir: Path = field(default_factory=lambda: Path(sys.executable).parent)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DemoSettings:
        env = os.environ if env is None else env
        return cls(state=state_dir(env).resolve(),
                   api_port=int(env.get("SIZING_DEMO_API_PORT", 8080)),
                   s3_port=int(env.get("SIZING_DEMO_S3_PORT", 9090)),
                   bucket=S3Settings.from_env(dict(env)).bucket,
                   slot_offset=slot_offset(env))

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def s3_url(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def paths(self) -> StatePaths:
        """Every path of the stack under its state directory (adapters.statepaths: the one home)."""
        return StatePaths(self.state)

    @property
    def airflow_home(self) -> Path:
        return self.paths.airflow_home

    @property
    def passwords_file(self) -> Path:
        return self.airflow_home / "passwords.json"

    @property
    def s3(self) -> S3Settings:
        return S3Settings(bucket=self.bucket, endpoint_url=self.s3_url)

    @property
    def store_dir(self) -> Path:
        """Where the local S3 server keeps every object (kept by `make stop`, deleted by `make clean` only)."""
        return self.paths.objectstore

    def s3_server(self) -> s3server.S3Server:
        return s3server.S3Server(self.store_dir, self.s3_port, LOCAL_S3_KEY, LOCAL_S3_SECRET,
                                 self.bin_dir / s3server.PROGRAM)

    def stack_state(self) -> DemoState:
        """What the CLI in a new shell needs to reach this stack (written to <state>/demo.json)."""
        return DemoState(s3_endpoint=self.s3_url, bucket=self.bucket, region=self.s3.region,
                         aws_access_key_id=LOCAL_S3_KEY, aws_secret_access_key=LOCAL_S3_SECRET,
                         airflow_url=self.api_url, airflow_user=self.user,
                         airflow_password_file=str(self.passwords_file))

    def cli(self) -> str:
        """The CLI as a new shell can type it: this virtualenv's `sizing` command (the set-up installs the project),
        from the repository (a report lands there)."""
        import shlex

        return f"cd {shlex.quote(str(REPO_ROOT))} && {shlex.quote(str(self.bin_dir / 'sizing'))}"


def airflow_env(s: DemoSettings, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every Airflow process: config, connections, and what the tasks read."""
    env = dict(os.environ if base is None else base)
    home = s.airflow_home
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(s.parallelism),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{s.user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(s.passwords_file),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{s.api_url}/execution/",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(s.api_port),
        "AIRFLOW__API__BASE_URL": s.api_url,
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(s.api_port + 2),
        "AIRFLOW__API_AUTH__JWT_SECRET": _secret(s),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps({
            "conn_type": "aws", "login": LOCAL_S3_KEY, "password": LOCAL_S3_SECRET,
            "extra": {"endpoint_url": s.s3_url, "region_name": "us-east-1"}}),
        **s.stack_state().s3_env(),
        "SIZING_STATE_DIR": str(s.state), "SIZING_SLOT_OFFSET": str(s.slot_offset),
        STACK_MARKER: str(s.state),
        # spark-submit and `python -m loadgen` must resolve to this virtualenv inside the tasks.
        "PATH": f"{s.bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
    })
    return env


def _secret(s: DemoSettings) -> str:
    path = s.paths.jwt_secret
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(os.urandom(24).hex())
    return path.read_text().strip()


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


def _use_stack(s: DemoSettings) -> None:
    """This process talks to the demo's own S3 server only: its endpoint and local credentials."""
    os.environ.update(s.stack_state().s3_env())


def start(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """Start whatever is not running yet (S3 server, Airflow) and wait until it answers.

    When the scheduler is not running, runs a previous stack left unfinished (`make stop` or a crash in the
    middle of a run) are ended first (clusters torn down, run marked failed), before a new scheduler could
    resume them silently.
    """
    env = airflow_env(s)
    _use_stack(s)
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
    _use_stack(s)
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
    """The scale model's envelopes a crash left (cgroups, mounts, loop devices) that no destroy removed; what is
    still there afterwards, one line per state root."""
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
    the process group of a service (each leads its own, so the group outlives a killed leader; Airflow's servers
    retitle themselves over their environment, where the marker was)."""
    marker = f"{STACK_MARKER}={s.state}".encode() + b"\0"
    groups = set()
    booted = _boot_time()
    for pid_file in s.paths.pids.glob("*.pid") if s.paths.pids.exists() else ():
        with contextlib.suppress(OSError, ValueError):
            if pid_file.stat().st_mtime >= booted:  # a pid from before a reboot names someone else's group now
                groups.add(int(pid_file.read_text().strip()))
    out = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            group = os.getpgid(int(proc.name))
            if group not in groups and marker not in (proc / "environ").read_bytes() + b"\0":
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


# ------------------------------------------------------------------------------------------ REST API


class AirflowClient(airflowapi.AirflowClient):
    """The shared REST client (adapters.airflowapi), logged in as the demo's user; keeps the demo's settings for
    what a wait says (the lease boards of its state directory)."""

    def __init__(self, s: DemoSettings) -> None:
        super().__init__(AirflowLogin(s.api_url, s.user, s.password))
        self.s = s


def _label(ti: dict) -> str:
    return ti["task_id"] + (f"[{ti.get('rendered_map_index') or ti['map_index']}]"
                            if ti.get("map_index", -1) >= 0 else "")


def wait_for_run(client: AirflowClient, dag_id: str, run_id: str, timeout_s: float,
                 say: Callable[[str], None] = print, poll_s: float = 3.0,
                 check: Callable[[], None] | None = None) -> tuple[dict, list[dict]]:
    """Poll until the run finishes, printing each task as it finishes, and what the run waits for while
    nothing finishes (a queued run: the runs ahead of it; a running one: the tasks running). `check` runs before
    every poll and when Airflow does not answer: it raises when the stack itself is down (check_services)."""
    seen: set[tuple[str, int]] = set()
    start = time.monotonic()
    last_said = start
    client.before_retry = check
    while True:
        if check is not None:
            check()
        try:
            run = client.run(dag_id, run_id)
            tis = client.task_instances(dag_id, run_id)
        except HttpError:
            if check is not None:
                check()  # the api-server died meanwhile: say so rather than a connection error
            raise
        for ti in sorted(tis, key=lambda t: t.get("end_date") or ""):
            key = (ti["task_id"], ti.get("map_index", -1))
            if ti.get("state") in ("success", "failed", "upstream_failed", "skipped") and key not in seen:
                seen.add(key)
                duration = ti.get("duration")
                say(f"  [{time.monotonic() - start:6.0f}s] {ti['state']:<15} {_label(ti)}"
                    + (f" ({duration:.1f}s)" if duration else ""))
                last_said = time.monotonic()
        if run["state"] in FINISHED:
            return run, tis
        if time.monotonic() - last_said >= 30:
            say(f"  [{time.monotonic() - start:6.0f}s] waiting: {_waiting_for(client, dag_id, run, tis)}")
            last_said = time.monotonic()
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"run {run_id} still {run['state']} after {timeout_s:.0f}s, "
                               f"{_waiting_for(client, dag_id, run, tis)}; it goes on in Airflow ({client.url}), "
                               f"`make stop` ends it")
        time.sleep(poll_s)


def _waiting_for(client: AirflowClient, dag_id: str, run: dict, tis: list[dict]) -> str:
    if run["state"] == "queued":
        ahead = [r["dag_run_id"] for r in client.runs(dag_id, ("running",)) if r["dag_run_id"] != run["dag_run_id"]]
        return (f"run queued behind {', '.join(ahead)} (one campaign run at a time)" if ahead
                else "run queued; the scheduler has not started it yet")
    running = [_label(t) for t in tis if t.get("state") in ("running", "queued", "scheduled", "deferred")]
    said = "running " + (", ".join(running) if running else "(no task yet: the scheduler is creating them)")
    if any(label.startswith("cluster.wait_for_slot") for label in running) and isinstance(client, AirflowClient):
        holders = sorted({owner for board in client.s.paths.leases.glob("*")
                          for owner in LeaseBoard(board).holders().values()})
        said += f" (cluster slots held by {', '.join(holders) or 'nobody'})"
    return said


def failure_reason(client: AirflowClient, dag_id: str, run_id: str, ti: dict) -> str:
    """The one-line reason a task failed: the last error line of its log (e.g. the port pre-check's line)."""
    try:
        content = client.task_log(dag_id, run_id, ti)
    except Exception as err:  # the reason is a convenience; the log stays in the UI
        return f"(log not readable: {err})"
    return pick_reason(log_lines(content))


def log_lines(content: object) -> list[str]:
    """A task log's text lines. Airflow 3 logs structured entries: the exception of a failed task is in the
    entry's `error_detail` (`{exc_type, exc_value}`), its `event` only says "Task failed with exception"."""
    lines = []
    for entry in content if isinstance(content, list) else str(content or "").splitlines():
        event = entry.get("event", "") if isinstance(entry, dict) else str(entry)
        lines.extend(line.strip() for line in str(event).splitlines() if line.strip())
        details = entry.get("error_detail") if isinstance(entry, dict) else None
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, dict) and detail.get("exc_type"):
                lines.append(f"{detail['exc_type']}: {detail.get('exc_value', '')}".strip())
    return lines


def pick_reason(lines: list[str]) -> str:
    """The most specific error line of a failed task's log: a line the port pre-check or an operator wrote
    for people (it starts with 'error:'), else the last exception message."""
    for line in reversed(lines):
        if "error: " in line.lower() and "port " in line.lower():
            return line[line.lower().index("error: "):]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and ":" in line:
            return line
    return lines[-1] if lines else "(empty log)"


def busy_seconds(tis: list[dict]) -> float:
    """Length of the union of task running intervals: the time some task was doing work."""
    from datetime import datetime

    spans = sorted((datetime.fromisoformat(t["start_date"]), datetime.fromisoformat(t["end_date"]))
                   for t in tis if t.get("start_date") and t.get("end_date"))
    total, current = 0.0, None
    for a, b in spans:
        if current is None or a > current[1]:
            if current:
                total += (current[1] - current[0]).total_seconds()
            current = [a, b]
        else:
            current[1] = max(current[1], b)
    if current:
        total += (current[1] - current[0]).total_seconds()
    return total


# ------------------------------------------------------------------------------------------ results


def read_table(s: DemoSettings, prefix: str, run_id: str | None = None):
    """The parquet parts of a table under an object-store prefix (of run `run_id` only, if given) as a pandas
    DataFrame (None if absent), read as the report reads its tables (one Parquet reader in app/)."""
    from app.report.tables import TableReader

    _use_stack(s)
    return TableReader(s.s3).parquet(prefix, run_id=run_id)


LEADERBOARD_COLUMNS = {  # column -> heading, in the order a sizing decision reads them
    "rank_at_target": "rank", "config_id": "config", "monthly_cost": "$/month",
    "top_matched_throughput": "top msg/s (SLO met)", "cost_per_1k_at_top": "$/1k msg/s at top",
    "cost_per_1k_at_target": "$/1k msg/s at target", "met_target": "met target", "pareto": "pareto",
}


def print_leaderboard(s: DemoSettings, campaign: str, say: Callable[[str], None] = print,
                      run_id: str | None = None) -> bool:
    """The run's leaderboard, cheapest config at the target first (full table: `sizing query`)."""
    df = read_table(s, table_prefix("leaderboards", campaign), run_id)
    if df is None or df.empty:
        return False
    board = df.sort_values(["rank_at_target", "rank_at_top"], na_position="last")
    board = board[[c for c in LEADERBOARD_COLUMNS if c in board.columns]].rename(columns=LEADERBOARD_COLUMNS)
    runs = read_table(s, table_prefix("runs", campaign), run_id)
    measured = (str(runs["measured_on"].iloc[-1]) if runs is not None and not runs.empty and "measured_on" in runs
                else "not recorded")
    say(f"\n== leaderboard: {campaign} (cost per 1000 msg/s per month, cheapest at the target first)\n"
        f"   measured on: {measured}\n"
        + board.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    answer = read_table(s, table_prefix("recommendation", campaign), run_id)
    if answer is not None and not answer.empty:
        from sizing.recommendation import recommended_config

        say("   recommended (the recommendation table: meets the target and holds every required adverse scenario, "
            f"cheapest per 1000 msg/s): {recommended_config(answer.to_dict('records')) or 'none'}")
    return True


CLIENT_SETTINGS_COLUMNS = {  # phase_summary column -> heading: what a client-setting step measured
    "scenario": "scenario", "phase_name": "step", "publish_rate": "published/s", "confirm_rate": "confirmed/s",
    "consume_rate": "consumed/s", "e2e_p99_ms": "e2e p99 ms", "latency_basis": "latency from", "valid": "kept up",
}


def client_settings_table(summary, scenarios: list[str]) -> str:
    """Per step of the client-setting scenarios (seed 003): rates and p99 with the basis it is measured from, as
    phase_summary holds them; per scenario, its steps in run order."""
    rows = summary[summary["scenario"].isin(scenarios)].sort_values(["config_id", "scenario", "start_s"])
    table = rows[[c for c in CLIENT_SETTINGS_COLUMNS if c in rows.columns]].rename(columns=CLIENT_SETTINGS_COLUMNS)
    return table.to_string(index=False, float_format=lambda v: f"{v:,.1f}")


def print_client_settings(s: DemoSettings, campaign: str, scenarios: list[str],
                          say: Callable[[str], None] = print, run_id: str | None = None) -> bool:
    df = read_table(s, table_prefix("phase_summary", campaign), run_id)
    if df is None or df.empty or not df["scenario"].isin(scenarios).any():
        return False
    say(f"\n== client settings: {campaign} (per step, from phase_summary; max mode measures latency from the "
        f"actual send)\n" + client_settings_table(df, scenarios))
    return True


def next_steps(s: DemoSettings, campaign: str, run_label: str) -> list[str]:
    """Follow-up commands that work verbatim in a new shell (the CLI reads <state>/demo.json by itself)."""
    cli = s.cli()
    return [
        f'{cli} query --campaign {campaign} --run-id {run_label} "SELECT config_id, top_matched_throughput, '
        f'cost_per_1k_at_target FROM leaderboards ORDER BY rank_at_target"',
        f"{cli} report --campaign {campaign} --run-id {run_label} -o report.html",
        f"{cli} runs",
    ]


def demo(campaign: str = "campaigns/local-quick.yaml", run_label: str = "demo", timeout_s: float = 1800,
         settings: DemoSettings | None = None, say: Callable[[str], None] = print) -> dict:
    """Start (if needed), trigger, wait, print. Returns timings and the run's final state."""
    s = settings or DemoSettings.from_env()
    t0 = time.monotonic()
    start(s, say)
    t_started = time.monotonic()
    client = AirflowClient(s)
    say(f"waiting for the DAG processor to parse {DAG_ID} ...")
    client.wait_for_dag(DAG_ID)
    from sizing.rules import is_client_settings
    from sizing.runparams import RunParams
    from sizing.spec import load_campaign

    spec = load_campaign(REPO_ROOT / campaign if not Path(campaign).is_absolute() else campaign)
    name = spec.name
    client_settings = [sc.name for sc in spec.scenarios if is_client_settings(sc)]
    run_id = client.trigger(DAG_ID, RunParams(campaign=campaign, run_label=run_label).to_dict())
    say(f"triggered {DAG_ID} run {run_id} ({campaign}); follow it at {s.api_url}/dags/{DAG_ID}")
    t_triggered = time.monotonic()
    run, tis = wait_for_run(client, DAG_ID, run_id, timeout_s, say, check=lambda: check_services(s, run_id))
    t_done = time.monotonic()
    busy = busy_seconds(tis)
    run_wall = t_done - t_triggered
    timings = {"state": run["state"], "run_id": run_id, "startup_s": round(t_started - t0, 1),
               "run_wall_s": round(run_wall, 1), "busy_s": round(busy, 1),
               "orchestration_overhead_s": round(run_wall - busy, 1),
               "overhead_share": round((run_wall - busy) / run_wall, 3) if run_wall else None,
               "total_s": round(t_done - t0, 1)}
    say(f"\nrun {run['state']} in {run_wall:.0f}s (tasks busy {busy:.0f}s, orchestration overhead "
        f"{run_wall - busy:.0f}s = {100 * (timings['overhead_share'] or 0):.0f}%); total with start-up "
        f"{t_done - t0:.0f}s")
    if run["state"] != "success":
        for ti in tis:
            if ti.get("state") == "failed":
                say(f"  {_label(ti)} failed: {failure_reason(client, DAG_ID, run_id, ti)}")
    else:
        # a campaign of client-setting steps only (seed 003/004) ranks no config: its steps are the result
        if len(client_settings) < len(spec.scenarios) and not print_leaderboard(s, name, say, run_label):
            say(f"(no leaderboard table found under {table_prefix('leaderboards', name)})")
        if client_settings and not print_client_settings(s, name, client_settings, say, run_label):
            say(f"(no client-setting rows under {table_prefix('phase_summary', name)})")
    steps = next_steps(s, name, run_label)
    say(f"\nUI:     {s.api_url}/dags/{DAG_ID}  (user {s.user}, password {s.password})"
        f"\nTables: {s3_uri(s.bucket, TABLES_ROOT)} at {s.s3_url}; the CLI finds this stack by itself "
        f"({s.paths.stack_file}), in any shell:"
        + "".join(f"\n  {step}" for step in steps)
        + f"\nReport: {s3_uri(s.bucket, report_key(name, run_label))}"
        f"\nLogs:   {s.paths.logs} and {s.airflow_home / 'logs'}\nStop:   make stop")
    s.paths.last_demo.write_text(json.dumps(timings, indent=2))
    return timings
