"""The demo stack's settings: its ports, credentials and state directory (DemoSettings), the environment of its
Airflow processes, and the names every part of the demo shares (the DAG, run and task states, the services)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters.objectstore import S3Settings
from adapters.planning import slot_offset
from adapters.statepaths import StatePaths, state_dir
from app import s3server
from app.stackstate import DemoState
from sizing.contract.layout import DEFAULT_BUCKET

REPO_ROOT = Path(__file__).resolve().parents[2]
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



def use_stack(s: DemoSettings) -> None:
    """This process talks to the demo's own S3 server only: its endpoint and local credentials."""
    os.environ.update(s.stack_state().s3_env())
