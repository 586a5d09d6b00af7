"""The one-command local demo: S3-compatible server + Airflow (LocalExecutor) on 127.0.0.1, a
`sizing_campaign` run through the REST API, progress, the leaderboard. Idempotent; `stop()` undoes it.

No Airflow import here: Airflow runs as its own processes (api-server, scheduler, dag-processor) and
is driven over HTTP like a user would. Everything lives under <repo>/.state (SIZING_STATE_DIR).

`demo()` (here) runs the steps of the other modules: `settings` (DemoSettings, the Airflow environment, shared
names), `stack` (supervising the services: start, stop, clean, leftovers, crashes), `watch` (a run followed over
the REST API, a failed task's reason) and `output` (the leaderboard and client-setting tables, the next commands).
The names the CLI, tests and benchmarks use are re-exported here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from adapters.calibration import current, measure_by_command
from adapters.planning import checked_params
from app.demo.output import (
    CLIENT_SETTINGS_COLUMNS,
    LEADERBOARD_COLUMNS,
    client_settings_table,
    next_steps,
    print_client_settings,
    print_leaderboard,
    read_table,
)
from app.demo.settings import DAG_ID, FINISHED, REPO_ROOT, SERVICES, STACK_MARKER, DemoSettings, airflow_env, use_stack
from app.demo.stack import (
    PortTaken,
    StackDown,
    check_services,
    clean,
    end_interrupted_runs,
    end_orphans,
    refuse_taken_ports,
    running_pid,
    stack_processes,
    start,
    start_object_store,
    stop,
)
from app.demo.watch import AirflowClient, busy_seconds, failure_reason, label, log_lines, pick_reason, wait_for_run
from sizing.contract.layout import TABLES_ROOT, report_key, s3_uri, table_prefix

__all__ = ["CLIENT_SETTINGS_COLUMNS", "DAG_ID", "FINISHED", "LEADERBOARD_COLUMNS", "REPO_ROOT", "SERVICES",
           "STACK_MARKER", "AirflowClient", "DemoSettings", "PortTaken", "StackDown", "airflow_env", "busy_seconds",
           "check_services", "clean", "client_settings_table", "demo", "end_interrupted_runs", "end_orphans",
           "failure_reason", "label", "log_lines", "next_steps", "pick_reason", "print_client_settings",
           "print_leaderboard", "read_table", "refuse_taken_ports", "running_pid", "stack_processes", "start",
           "start_object_store", "stop", "use_stack", "wait_for_run"]


def demo(campaign: str = "campaigns/local-quick.yaml", run_label: str = "demo", timeout_s: float = 1800,
         settings: DemoSettings | None = None, say: Callable[[str], None] = print) -> dict:
    """Start (if needed), trigger, wait, print. Returns timings and the run's final state."""
    from sizing.criteria.rules import is_client_settings
    from sizing.planning.runparams import RunParams

    s = settings or DemoSettings.from_env()
    params = RunParams(campaign=campaign, run_label=run_label)
    # admitted as the DAG's validate_spec will admit it, before anything starts: a refusal is a SpecError (exit 2);
    # a host without calibration is measured here first (about 45 s, once per host: adapters.calibration)
    _, admission = checked_params(params, host=lambda: current(measure_by_command, echo=say))
    for line in admission.remarks():
        say(line)
    t0 = time.monotonic()
    start(s, say)
    t_started = time.monotonic()
    client = AirflowClient(s)
    say(f"waiting for the DAG processor to parse {DAG_ID} ...")
    client.wait_for_dag(DAG_ID)
    spec = admission.campaign
    name = spec.name
    client_settings = [sc.name for sc in spec.scenarios if is_client_settings(sc)]
    run_id = client.trigger(DAG_ID, params.to_dict())
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
                say(f"  {label(ti)} failed: {failure_reason(client, DAG_ID, run_id, ti)}")
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
