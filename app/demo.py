"""The one-command local demo: S3-compatible server + Airflow (LocalExecutor) on 127.0.0.1, a
`sizing_campaign` run through the REST API, progress, the leaderboard. Idempotent; `stop()` undoes it.

No Airflow import here: Airflow runs as its own processes (api-server, scheduler, dag-processor) and
is driven over HTTP like a user would. Everything lives under <repo>/.state (SIZING_STATE_DIR).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.procs import pid_alive, stop_process_group
from sizing.layout import report_key

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVICES = ("s3", "api-server", "scheduler", "dag-processor")
DAG_ID = "sizing_campaign"
FINISHED = {"success", "failed"}


@dataclass(frozen=True)
class DemoSettings:
    state: Path
    api_port: int = 8080
    s3_port: int = 9090
    bucket: str = "rabbit-sizing"
    user: str = "admin"
    password: str = "admin"
    parallelism: int = 4
    slot_offset: int = 0
    bin_dir: Path = field(default_factory=lambda: Path(sys.executable).parent)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DemoSettings:
        env = os.environ if env is None else env
        return cls(state=Path(env.get("SIZING_STATE_DIR") or REPO_ROOT / ".state").resolve(),
                   api_port=int(env.get("SIZING_DEMO_API_PORT", 8080)),
                   s3_port=int(env.get("SIZING_DEMO_S3_PORT", 9090)),
                   bucket=env.get("SIZING_S3_BUCKET", "rabbit-sizing"),
                   slot_offset=int(env.get("SIZING_SLOT_OFFSET", 0)))

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def s3_url(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def airflow_home(self) -> Path:
        return self.state / "airflow"


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
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
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
            "conn_type": "aws", "login": "testing", "password": "testing",
            "extra": {"endpoint_url": s.s3_url, "region_name": "us-east-1"}}),
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        "SIZING_S3_ENDPOINT": s.s3_url, "SIZING_S3_BUCKET": s.bucket,
        "SIZING_STATE_DIR": str(s.state), "SIZING_SLOT_OFFSET": str(s.slot_offset),
        # spark-submit and `python -m loadgen` must resolve to this virtualenv inside the tasks.
        "PATH": f"{s.bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
    })
    return env


def _secret(s: DemoSettings) -> str:
    path = s.state / "jwt_secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(os.urandom(24).hex())
    return path.read_text().strip()


# ------------------------------------------------------------------------------------------ processes


def _pid_file(s: DemoSettings, name: str) -> Path:
    return s.state / "pids" / f"{name}.pid"



def running_pid(s: DemoSettings, name: str) -> int | None:
    path = _pid_file(s, name)
    if not path.exists():
        return None
    pid = int(path.read_text().strip() or 0)
    return pid if pid and pid_alive(pid) else None


def _start(s: DemoSettings, name: str, command: list[str], env: Mapping[str, str]) -> int:
    pid = running_pid(s, name)
    if pid:
        return pid
    (s.state / "logs").mkdir(parents=True, exist_ok=True)
    _pid_file(s, name).parent.mkdir(parents=True, exist_ok=True)
    log = open(s.state / "logs" / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    _pid_file(s, name).write_text(str(proc.pid))
    return proc.pid


def _wait_http(url: str, timeout_s: float, what: str) -> None:
    import requests

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=2).status_code < 500:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{what} did not answer at {url} within {timeout_s:.0f}s")


def start(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """Start whatever is not running yet (S3 server, Airflow) and wait until it answers."""
    env = airflow_env(s)
    _start(s, "s3", [str(s.bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(s.s3_port)], env)
    _wait_http(s.s3_url, 60, "S3 server")
    import boto3

    client = boto3.client("s3", endpoint_url=s.s3_url, region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    if s.bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=s.bucket)
    say(f"S3 (moto) on {s.s3_url}, bucket {s.bucket}")
    if not all(running_pid(s, name) for name in ("api-server", "scheduler", "dag-processor")):
        s.airflow_home.mkdir(parents=True, exist_ok=True)
        passwords = s.airflow_home / "passwords.json"
        passwords.write_text(json.dumps({s.user: s.password}))
        say("airflow db migrate ...")
        subprocess.run([str(s.bin_dir / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
        for name in ("api-server", "scheduler", "dag-processor"):
            _start(s, name, [str(s.bin_dir / "airflow"), name], env)
    _wait_http(f"{s.api_url}/api/v2/monitor/health", 120, "Airflow api-server")
    say(f"Airflow on {s.api_url} (LocalExecutor, parallelism {s.parallelism})")


def stop(s: DemoSettings, say: Callable[[str], None] = print) -> None:
    """Stop the servers, then any load generator or RabbitMQ node a run left behind; drop cluster leases."""
    for name in ("scheduler", "dag-processor", "api-server", "s3"):
        pid = running_pid(s, name)
        if pid:
            stop_process_group(pid)
            say(f"stopped {name} (pid {pid})")
        _pid_file(s, name).unlink(missing_ok=True)
    for pid in _leftover_pids(s):
        stop_process_group(pid, grace_s=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        say(f"stopped leftover process {pid}")
    leases = s.state / "leases"
    if leases.exists():
        for path in leases.rglob("*.lease"):
            path.unlink()


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


class AirflowClient:
    def __init__(self, s: DemoSettings) -> None:
        import requests

        self.s = s
        self.http = requests.Session()
        response = self.http.post(f"{s.api_url}/auth/token", json={"username": s.user, "password": s.password},
                                  timeout=10)
        response.raise_for_status()
        self.token = response.json()["access_token"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def get(self, path: str, attempts: int = 5, **params) -> Any:
        """GET with retries: on a busy 2-core machine the single api-server worker can be slow to answer."""
        import requests

        for attempt in range(attempts):
            try:
                response = self.http.get(f"{self.s.api_url}/api/v2{path}", params=params, timeout=30)
                response.raise_for_status()
                return response.json()
            except (requests.ConnectionError, requests.Timeout):
                if attempt == attempts - 1:
                    raise
                time.sleep(2 * (attempt + 1))
        raise AssertionError("unreachable")

    def wait_for_dag(self, dag_id: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            response = self.http.get(f"{self.s.api_url}/api/v2/dags/{dag_id}", timeout=10)
            if response.status_code == 200:
                if response.json().get("is_paused"):
                    self.http.patch(f"{self.s.api_url}/api/v2/dags/{dag_id}", json={"is_paused": False},
                                    timeout=10).raise_for_status()
                return
            time.sleep(1)
        errors = self.get("/importErrors")
        raise TimeoutError(f"DAG {dag_id} was not parsed within {timeout_s:.0f}s; import errors: {errors}")

    def trigger(self, dag_id: str, conf: Mapping[str, Any]) -> str:
        response = self.http.post(f"{self.s.api_url}/api/v2/dags/{dag_id}/dagRuns",
                                  json={"logical_date": None, "conf": dict(conf)}, timeout=10)
        response.raise_for_status()
        return response.json()["dag_run_id"]

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=1000)["task_instances"]


def wait_for_run(client: AirflowClient, dag_id: str, run_id: str, timeout_s: float,
                 say: Callable[[str], None] = print, poll_s: float = 3.0) -> tuple[dict, list[dict]]:
    """Poll until the run finishes, printing each task as it finishes."""
    seen: set[tuple[str, int]] = set()
    start = time.monotonic()
    while True:
        run = client.run(dag_id, run_id)
        tis = client.task_instances(dag_id, run_id)
        for ti in sorted(tis, key=lambda t: t.get("end_date") or ""):
            key = (ti["task_id"], ti.get("map_index", -1))
            if ti.get("state") in ("success", "failed", "upstream_failed", "skipped") and key not in seen:
                seen.add(key)
                label = ti["task_id"] + (f"[{ti.get('rendered_map_index') or ti['map_index']}]"
                                         if ti.get("map_index", -1) >= 0 else "")
                duration = ti.get("duration")
                say(f"  [{time.monotonic() - start:6.0f}s] {ti['state']:<15} {label}"
                    + (f" ({duration:.1f}s)" if duration else ""))
        if run["state"] in FINISHED:
            return run, tis
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"run {run_id} still {run['state']} after {timeout_s:.0f}s")
        time.sleep(poll_s)


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


def read_table(s: DemoSettings, prefix: str):
    """Concatenate the parquet parts under an S3 prefix into a pandas DataFrame (None if absent)."""
    import boto3
    import pandas as pd
    import pyarrow.parquet as pq

    client = boto3.client("s3", endpoint_url=s.s3_url, region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    keys = [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=s.bucket, Prefix=prefix)
            for o in page.get("Contents", []) if o["Key"].endswith(".parquet")]
    if not keys:
        return None
    frames = [pq.read_table(io.BytesIO(client.get_object(Bucket=s.bucket, Key=k)["Body"].read())).to_pandas()
              for k in keys]
    return pd.concat(frames, ignore_index=True)


LEADERBOARD_COLUMNS = {  # column -> heading, in the order a sizing decision reads them
    "rank_at_target": "rank", "config_id": "config", "monthly_cost": "$/month",
    "top_matched_throughput": "top msg/s (SLO met)", "cost_per_1k_at_top": "$/1k msg/s at top",
    "cost_per_1k_at_target": "$/1k msg/s at target", "met_target": "met target", "pareto": "pareto",
}


def print_leaderboard(s: DemoSettings, campaign: str, say: Callable[[str], None] = print) -> bool:
    """The campaign's leaderboard, cheapest config at the target first (full table: `sizing query`)."""
    df = read_table(s, f"tables/leaderboards/campaign={campaign}/")
    if df is None or df.empty:
        return False
    board = df.sort_values(["rank_at_target", "rank_at_top"], na_position="last")
    board = board[[c for c in LEADERBOARD_COLUMNS if c in board.columns]].rename(columns=LEADERBOARD_COLUMNS)
    say(f"\n== leaderboard: {campaign} (cost per 1000 msg/s per month, cheapest at the target first)\n"
        + board.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    return True


def demo(campaign: str = "campaigns/local-quick.yaml", run_label: str = "demo", timeout_s: float = 1800,
         settings: DemoSettings | None = None, say: Callable[[str], None] = print) -> dict:
    """Start (if needed), trigger, wait, print. Returns timings and the run's final state."""
    s = settings or DemoSettings.from_env()
    t0 = time.monotonic()
    start(s, say)
    t_started = time.monotonic()
    client = AirflowClient(s)
    client.wait_for_dag(DAG_ID)
    from sizing.spec import load_campaign

    name = load_campaign(REPO_ROOT / campaign if not Path(campaign).is_absolute() else campaign).name
    run_id = client.trigger(DAG_ID, {"campaign": campaign, "run_label": run_label})
    say(f"triggered {DAG_ID} run {run_id} ({campaign}); follow it at {s.api_url}/dags/{DAG_ID}")
    t_triggered = time.monotonic()
    run, tis = wait_for_run(client, DAG_ID, run_id, timeout_s, say)
    t_done = time.monotonic()
    busy = busy_seconds(tis)
    run_wall = t_done - t_triggered
    timings = {"state": run["state"], "run_id": run_id, "startup_s": round(t_started - t0, 1),
               "run_wall_s": round(run_wall, 1), "busy_s": round(busy, 1),
               "orchestration_overhead_s": round(run_wall - busy, 1),
               "overhead_share": round((run_wall - busy) / run_wall, 3) if run_wall else None,
               "total_s": round(t_done - t0, 1)}
    say(f"\nrun {run['state']} in {run_wall:.0f}s (tasks busy {busy:.0f}s, orchestration overhead "
        f"{run_wall - busy:.0f}s = {100 * timings['overhead_share']:.0f}%); total with start-up {t_done - t0:.0f}s")
    if run["state"] == "success" and not print_leaderboard(s, name, say):
        say("(no leaderboard table found under tables/leaderboards/)")
    say(f"\nUI:     {s.api_url}/dags/{DAG_ID}  (user {s.user}, password {s.password})"
        f"\nTables: s3://{s.bucket}/tables/ at endpoint {s.s3_url} "
        f"(AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing); `python -m app.cli query ...`"
        f"\nReport: s3://{s.bucket}/{report_key(name, run_label)}; "
        f"`python -m app.cli report --campaign {name} --run-id {run_label} -o report.html`"
        f"\nLogs:   {s.state / 'logs'} and {s.airflow_home / 'logs'}\nStop:   make stop")
    (s.state / "last_demo.json").write_text(json.dumps(timings, indent=2))
    return timings
