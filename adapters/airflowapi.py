"""Airflow 3's public REST API (edge module): the one client the CLI (`sizing trigger` / `backfill`), the demo and
the tests' Airflow stacks share. A JWT from POST /auth/token (SimpleAuthManager), then /api/v2: trigger a run,
read a run and its task instances, patch states, read a task's log; and the api-server's health, which needs no
login. No Airflow import: Airflow is driven over HTTP as a user would."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from adapters.httpprobe import HttpError, status, wait_answering
from adapters.statepaths import state_paths

__all__ = ["AirflowClient", "AirflowLogin", "HttpError", "health_status", "wait_healthy"]

HEALTH_PATH = "/api/v2/monitor/health"


def health_status(url: str, timeout_s: float = 2.0) -> int | None:
    """The api-server's health endpoint's HTTP status (200: healthy); None when nothing answers at `url`."""
    return status(f"{url.rstrip('/')}{HEALTH_PATH}", timeout_s)


def wait_healthy(url: str, timeout_s: float, what: str = "Airflow api-server") -> None:
    """Until the api-server at `url` answers its health endpoint (below 500); TimeoutError naming `what`."""
    wait_answering(f"{url.rstrip('/')}{HEALTH_PATH}", timeout_s, what)


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
                              f"{state_paths(env).stack_file}) or set SIZING_AIRFLOW_URL, SIZING_AIRFLOW_USER and "
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


PAGE_LIMIT = 100  # Airflow's default [api] maximum_page_limit: a larger limit is answered with this many


class AirflowClient:
    """Airflow 3's public REST API with a JWT from POST /auth/token (STACK-NOTES: SimpleAuthManager)."""

    def __init__(self, login: AirflowLogin) -> None:
        self.url = login.url
        self.http = requests.Session()
        response = self.http.post(f"{login.url}/auth/token", json={"username": login.user, "password": login.password},
                                  timeout=10)
        if response.status_code in (401, 403):
            raise PermissionError(f"Airflow at {login.url} refused user {login.user!r} (HTTP {response.status_code})")
        response.raise_for_status()
        self.token: str = response.json()["access_token"]  # also what a browser test sends the UI
        self.http.headers["Authorization"] = f"Bearer {self.token}"
        # Called before each retry of a GET: the demo checks there that the api-server is still running, so a dead
        # one is named at once rather than after every retry has failed.
        self.before_retry: Callable[[], None] | None = None

    def get(self, path: str, attempts: int = 5, **params: Any) -> Any:
        """GET with retries: on a busy 2-core machine the single api-server worker can be slow to answer."""
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

    def wait_for_dag(self, dag_id: str, timeout_s: float = 120) -> None:
        """Until the DAG is parsed and not stale (then unpaused); TimeoutError with Airflow's import errors."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            response = self.http.get(f"{self.url}/api/v2/dags/{dag_id}", timeout=10)
            # A DAG whose file failed its last parse stays listed, stale: a run cannot be triggered on it.
            if response.status_code == 200 and not response.json().get("is_stale"):
                if response.json().get("is_paused"):
                    self.unpause(dag_id)
                return
            time.sleep(1)
        errors = self.get("/importErrors")
        raise TimeoutError(f"DAG {dag_id} was not parsed within {timeout_s:.0f}s; import errors: {errors}")

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
        """Every task instance of the run. The api-server answers at most `[api] maximum_page_limit` (100) a page
        whatever the limit asked (fidelity-001's 18 trials have 114), so the pages are read until total_entries."""
        path, found = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", []
        while True:
            page = self.get(path, limit=PAGE_LIMIT, offset=len(found))
            found += page["task_instances"]
            if not page["task_instances"] or len(found) >= page.get("total_entries", len(found)):
                return found

    def task_log(self, dag_id: str, run_id: str, ti: Mapping[str, Any]) -> Any:
        """A task instance's log content (Airflow 3: structured entries), of its latest try."""
        try_number = ti.get("try_number") or 1
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{ti['task_id']}/logs/{try_number}"
        return self.get(path, map_index=ti.get("map_index", -1), full_content="true").get("content")
