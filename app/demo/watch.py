"""Watching a run of the demo's DAG over Airflow's REST API: the demo's logged-in client, progress while it runs
(each task as it finishes, what the run waits for), and why a task failed (the line of its log that says so)."""

from __future__ import annotations

import time
from collections.abc import Callable

from adapters import airflowapi
from adapters.airflowapi import AirflowLogin, HttpError
from adapters.leases import LeaseBoard
from app.demo.settings import FINISHED, DemoSettings

# ------------------------------------------------------------------------------------------ REST API


class AirflowClient(airflowapi.AirflowClient):
    """The shared REST client (adapters.airflowapi), logged in as the demo's user; keeps the demo's settings for
    what a wait says (the lease boards of its state directory)."""

    def __init__(self, s: DemoSettings) -> None:
        super().__init__(AirflowLogin(s.api_url, s.user, s.password))
        self.s = s


def label(ti: dict) -> str:
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
                say(f"  [{time.monotonic() - start:6.0f}s] {ti['state']:<15} {label(ti)}"
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
    running = [label(t) for t in tis if t.get("state") in ("running", "queued", "scheduled", "deferred")]
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
