"""adapters.airflowapi, the one Airflow REST client of the CLI, the demo and the tests, against a stand-in
api-server on 127.0.0.1 (http.server: the paths and bodies Airflow 3 answers with, no Airflow here)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from adapters.airflowapi import AirflowClient, AirflowLogin, health_status, wait_healthy


class FakeAirflow(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict]] = []

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def _answer(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_POST(self) -> None:
        body = self._body()
        self.seen.append(("POST", self.path, body))
        if self.path == "/auth/token":
            ok = body == {"username": "admin", "password": "pw"}
            return self._answer(201 if ok else 401, {"access_token": "jwt"} if ok else {"detail": "no"})
        if self.headers.get("Authorization") != "Bearer jwt":
            return self._answer(401, {"detail": "no token"})
        if self.path == "/api/v2/dags/sizing_campaign/dagRuns":
            return self._answer(200, {"dag_run_id": "manual_1"})
        return self._answer(404, {"detail": "no such DAG"})

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, {}))
        if self.path == "/api/v2/monitor/health":
            return self._answer(200, {"metadatabase": {"status": "healthy"}})
        if self.headers.get("Authorization") != "Bearer jwt":
            return self._answer(401, {"detail": "no token"})
        if self.path.startswith("/api/v2/dags/d/dagRuns/r1/taskInstances/t/logs/2"):
            return self._answer(200, {"content": [{"event": "ValueError: boom"}]})
        if self.path.startswith("/api/v2/dags/d/dagRuns/r1/taskInstances"):
            return self._answer(200, {"task_instances": [{"task_id": "t", "state": "failed"}], "total_entries": 1})
        if self.path.startswith("/api/v2/dags/d/dagRuns/many/taskInstances"):
            # as Airflow answers: at most maximum_page_limit (here 100) a page, whatever the limit asked
            query = dict(part.split("=") for part in self.path.partition("?")[2].split("&") if "=" in part)
            offset, limit = int(query.get("offset", 0)), min(int(query.get("limit", 50)), 100)
            tis = [{"task_id": f"t{i}", "state": "success"} for i in range(offset, min(offset + limit, 250))]
            return self._answer(200, {"task_instances": tis, "total_entries": 250})
        if self.path == "/api/v2/dags/d/dagRuns/r1":
            return self._answer(200, {"dag_run_id": "r1", "state": "failed"})
        return self._answer(404, {"detail": "not found"})


@pytest.fixture
def api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAirflow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_client_logs_in_triggers_and_reads_a_run(api: str) -> None:
    assert health_status(api) == 200
    wait_healthy(api, timeout_s=5)
    client = AirflowClient(AirflowLogin(api, "admin", "pw"))
    assert client.token == "jwt"
    assert client.trigger("sizing_campaign", {"campaign": "c"}) == "manual_1"
    assert FakeAirflow.seen[-1][2] == {"logical_date": None, "conf": {"campaign": "c"}}
    with pytest.raises(LookupError, match="has no DAG 'other'"):
        client.trigger("other", {})
    assert client.run("d", "r1")["state"] == "failed"
    assert client.task_instances("d", "r1") == [{"task_id": "t", "state": "failed"}]
    # a run of more task instances than one page holds (fidelity-001's 18 trials: 114) is read whole
    assert [ti["task_id"] for ti in client.task_instances("d", "many")] == [f"t{i}" for i in range(250)]
    assert client.task_log("d", "r1", {"task_id": "t", "try_number": 2}) == [{"event": "ValueError: boom"}]
    with pytest.raises(PermissionError, match="refused user 'admin'"):
        AirflowClient(AirflowLogin(api, "admin", "wrong"))


def test_nothing_answering_is_no_health() -> None:
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert health_status(f"http://127.0.0.1:{port}", timeout_s=0.5) is None
    with pytest.raises(TimeoutError, match="Airflow api-server did not answer"):
        wait_healthy(f"http://127.0.0.1:{port}", timeout_s=0.6)


def test_a_login_from_the_environment_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(LookupError, match="no Airflow to talk to"):
        AirflowLogin.from_env({"SIZING_STATE_DIR": str(tmp_path)})
    with pytest.raises(LookupError, match="no password for Airflow user 'admin'"):
        AirflowLogin.from_env({"SIZING_AIRFLOW_URL": "http://a/"})
    (tmp_path / "passwords.json").write_text('{"admin": "s3cret"}')
    login = AirflowLogin.from_env({"SIZING_AIRFLOW_URL": "http://a/",
                                   "SIZING_AIRFLOW_PASSWORD_FILE": str(tmp_path / "passwords.json")})
    assert login == AirflowLogin("http://a", "admin", "s3cret")
