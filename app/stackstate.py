"""Where the CLI finds a running stack: the state file `make demo` writes (`.state/demo.json`), and the
Airflow REST client the demo and `sizing trigger` / `sizing backfill` share.

The demo's stack is a moto S3 server and an Airflow api-server on 127.0.0.1. The demo writes their
addresses and the local credentials to `<state dir>/demo.json`; the CLI applies them to its own
environment only when the environment names no S3 endpoint, bucket or credentials of its own
(`SIZING_S3_ENDPOINT`, `SIZING_S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_PROFILE`), and Airflow's address only
when `SIZING_AIRFLOW_URL` is unset. So a new shell needs nothing exported, and a user pointing the CLI at
real AWS is never redirected to the local server.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from adapters.statepaths import state_paths

# Any of these in the environment means "I chose my object store": the state file is not applied.
S3_CHOICE_VARIABLES = ("SIZING_S3_ENDPOINT", "SIZING_S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_PROFILE")


@dataclass(frozen=True)
class DemoState:
    """What a new shell needs to reach the demo's stack (the credentials are the local S3 server's)."""

    s3_endpoint: str
    bucket: str
    region: str
    aws_access_key_id: str
    aws_secret_access_key: str
    airflow_url: str
    airflow_user: str
    airflow_password_file: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DemoState:
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__})

    def s3_env(self) -> dict[str, str]:
        return {"SIZING_S3_ENDPOINT": self.s3_endpoint, "SIZING_S3_BUCKET": self.bucket,
                "AWS_ACCESS_KEY_ID": self.aws_access_key_id, "AWS_SECRET_ACCESS_KEY": self.aws_secret_access_key,
                "AWS_DEFAULT_REGION": self.region}


def state_file(env: Mapping[str, str] | None = None) -> Path:
    return state_paths(env).stack_file


def write_state(state: DemoState, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_dict(), indent=2))
    tmp.chmod(0o600)  # local credentials only, but still nobody else's business
    tmp.replace(path)


def read_state(env: Mapping[str, str] | None = None) -> DemoState | None:
    path = state_file(env)
    try:
        return DemoState.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a demo state file ({err}); delete it or rerun `make demo`") from err


def apply_state(env: MutableMapping[str, str]) -> DemoState | None:
    """Fill `env` from the demo's state file where the environment says nothing; returns the state applied."""
    state = read_state(env)
    if state is None:
        return None
    if not any(env.get(name) for name in S3_CHOICE_VARIABLES):
        env.update(state.s3_env())
    if not env.get("SIZING_AIRFLOW_URL"):
        env["SIZING_AIRFLOW_URL"] = state.airflow_url
        env.setdefault("SIZING_AIRFLOW_USER", state.airflow_user)
        env.setdefault("SIZING_AIRFLOW_PASSWORD_FILE", state.airflow_password_file)
    return state


@dataclass(frozen=True)
class AirflowLogin:
    url: str
    user: str
    password: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AirflowLogin:
        """SIZING_AIRFLOW_URL / _USER / _PASSWORD (or _PASSWORD_FILE: {user: password}, Airflow's simple
        auth manager format); raises LookupError naming what is missing."""
        env = os.environ if env is None else env
        url = env.get("SIZING_AIRFLOW_URL")
        if not url:
            raise LookupError("no Airflow to talk to: start the demo stack (`make demo`, which writes "
                              f"{state_file(env)}) or set SIZING_AIRFLOW_URL, SIZING_AIRFLOW_USER and "
                              "SIZING_AIRFLOW_PASSWORD")
        user = env.get("SIZING_AIRFLOW_USER") or "admin"
        password = env.get("SIZING_AIRFLOW_PASSWORD")
        if password is None and env.get("SIZING_AIRFLOW_PASSWORD_FILE"):
            path = Path(env["SIZING_AIRFLOW_PASSWORD_FILE"])
            try:
                password = json.loads(path.read_text()).get(user)
            except (OSError, ValueError) as err:
                raise LookupError(f"cannot read the Airflow password file {path}: {err}") from err
        if password is None:
            raise LookupError(f"no password for Airflow user {user!r}: set SIZING_AIRFLOW_PASSWORD")
        return cls(url.rstrip("/"), user, password)


class AirflowClient:
    """Airflow 3's public REST API with a JWT from POST /auth/token (STACK-NOTES: SimpleAuthManager)."""

    def __init__(self, login: AirflowLogin) -> None:
        import requests

        self.url = login.url
        self.http = requests.Session()
        response = self.http.post(f"{login.url}/auth/token", json={"username": login.user, "password": login.password},
                                  timeout=10)
        if response.status_code in (401, 403):
            raise PermissionError(f"Airflow at {login.url} refused user {login.user!r} (HTTP {response.status_code})")
        response.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {response.json()['access_token']}"
        # Called before each retry of a GET: the demo checks there that the api-server is still running, so a dead
        # one is named at once rather than after every retry has failed.
        self.before_retry: Callable[[], None] | None = None

    def get(self, path: str, attempts: int = 5, **params: Any) -> Any:
        """GET with retries: on a busy 2-core machine the single api-server worker can be slow to answer."""
        import requests

        for attempt in range(attempts):
            try:
                response = self.http.get(f"{self.url}/api/v2{path}", params=params, timeout=30)
                response.raise_for_status()
                return response.json()
            except (requests.ConnectionError, requests.Timeout):
                if attempt == attempts - 1:
                    raise
                if self.before_retry is not None:
                    self.before_retry()
                time.sleep(2 * (attempt + 1))
        raise AssertionError("unreachable")

    def dag_exists(self, dag_id: str) -> bool:
        return self.http.get(f"{self.url}/api/v2/dags/{dag_id}", timeout=10).status_code == 200

    def unpause(self, dag_id: str) -> None:
        self.http.patch(f"{self.url}/api/v2/dags/{dag_id}", json={"is_paused": False}, timeout=10).raise_for_status()

    def trigger(self, dag_id: str, conf: Mapping[str, Any]) -> str:
        response = self.http.post(f"{self.url}/api/v2/dags/{dag_id}/dagRuns",
                                  json={"logical_date": None, "conf": dict(conf)}, timeout=30)
        if response.status_code == 404:
            raise LookupError(f"Airflow at {self.url} has no DAG {dag_id!r} (not parsed yet, or another DAGs folder)")
        if response.status_code >= 400:
            detail = response.json().get("detail") if response.headers.get("content-type", "").startswith(
                "application/json") else response.text
            raise ValueError(f"Airflow refused the run (HTTP {response.status_code}): {detail}")
        return response.json()["dag_run_id"]

    def patch_run_state(self, dag_id: str, run_id: str, state: str) -> None:
        self.http.patch(f"{self.url}/api/v2/dags/{dag_id}/dagRuns/{run_id}", json={"state": state},
                        timeout=30).raise_for_status()

    def patch_task_state(self, dag_id: str, run_id: str, task_id: str, map_index: int, state: str) -> None:
        path = f"{self.url}/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        self.http.patch(path + (f"/{map_index}" if map_index >= 0 else ""), json={"new_state": state},
                        timeout=30).raise_for_status()

    def runs(self, dag_id: str, states: tuple[str, ...] = ()) -> list[dict]:
        params: dict[str, Any] = {"limit": 100, "order_by": "-start_date"}
        if states:
            params["state"] = list(states)
        return self.get(f"/dags/{dag_id}/dagRuns", **params)["dag_runs"]

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=1000)["task_instances"]
