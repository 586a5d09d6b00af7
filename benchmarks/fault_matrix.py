"""The demo stack's fault matrix (issue 25): each fault hits a real campaign run, then the user's next step is taken
and the run is retried. Prints one line per case and, last, the README's "Reliability" table (markdown).

    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/fault_matrix.py [--cases A,B,C,D,E] [--keep]
        [--network namespaces]     (issue 46: each node in a namespace of its own; the network's leftovers counted)

A throwaway state dir and ports of their own (S3 24420-24427, Airflow 24430/24432; clusters from slot 70, ports 24500+),
so a developer's own demo is never touched. Campaign: ci-tiny with one repeat of one config (one trial, one
fresh 1-node cluster, 2 x 6 s of load). Cases:

  A  kill -9 the scheduler while run_scenarios runs
  B  kill -9 the load generator of run_scenarios
  C  kill -9 the S3 server while the load generator uploads its records
  D  kill -9 the Airflow api-server while run_scenarios runs
  E  `make stop` while run_scenarios runs, then `make demo`
  F  kill -9 the cluster task's Terraform apply once its first node's envelope exists (issue 31)

For each: what the user sees (the demo's words), seconds until the demo said it, clusters leaked after the next step
(port blocks still bound, Terraform state with resources, RabbitMQ VMs of the stack), the scale model's envelopes
leaked (cgroups, mounts and loop devices of the stack's state root: adapters.envelope.leftovers), the private
network leaked (namespaces, veth links and hosts files of the trial's network slot: adapters.netns.leftovers), orphans
(processes of the stack left after `make stop`), and after the retry with the same run label: its state, duplicate
phase_summary rows and raw manifests, and confirmed messages unaccounted for (the accounting's `lost`, and the broker's
exact counters against the generator's in the run manifest). Case A also plants the lease of the killed run, as the
orphaned task process the issue measured did after the clean-up: the retry must reclaim it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adapters import netns  # noqa: E402
from adapters.leases import LeaseBoard  # noqa: E402
from adapters.procs import busy_ports  # noqa: E402
from adapters.terraform import network_slot  # noqa: E402
from app import demo  # noqa: E402
from sizing.contract import layout, raw_layout  # noqa: E402
from sizing.planning.plan import cluster_key  # noqa: E402
from sizing.planning.runplan import owner_id  # noqa: E402
from sizing.resources.localports import local_port_base  # noqa: E402

DAG_ID = "sizing_campaign"
CONFIG = "n1-c5.2xlarge-gp2"
CAMPAIGN = "extends: ci-tiny.yaml\nrepeats: 1\n"  # main() adds `network: namespaces` when asked
SLOT_OFFSET = 70
CASES = {"A": "kill -9 the scheduler mid-trial", "B": "kill -9 the load generator of run_scenarios",
         "C": "kill -9 the S3 server during the generator's uploads", "D": "kill -9 the Airflow api-server mid-trial",
         "E": "`make stop` mid-run, then `make demo`",
         "F": "kill -9 the Terraform apply of the cluster task mid-apply"}


def say(line: str) -> None:
    print(f"  | {line}", flush=True)


def processes(marker: str) -> dict[int, str]:
    out = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                out[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return {pid: cmd for pid, cmd in out.items() if marker in cmd}


def loadgen_pid(run_label: str) -> int | None:
    for pid, cmd in processes("-m loadgen run").items():
        if f"--run-id {run_label}" in cmd or f"run-id={run_label}" in cmd:
            return pid
    return None


def wait_for_task(client: demo.AirflowClient, run_id: str, task_id: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = {t["task_id"]: t["state"] for t in client.task_instances(DAG_ID, run_id)}
        if states.get(task_id) == "running":
            return
        time.sleep(0.5)
    raise TimeoutError(f"{task_id} of {run_id} never ran")


def leaked_clusters(s: demo.DemoSettings) -> int:
    """Port blocks of the trial slot still bound + Terraform workspaces with resources + the stack's RabbitMQ VMs."""
    blocks = [b for b in (local_port_base(SLOT_OFFSET),) if busy_ports(b)]
    beams = [pid for pid in demo.stack._leftover_pids(s) if "beam" in processes("beam").get(pid, "")]
    return len(blocks) + len(demo.stack._leftover_workspaces(s)) + len(beams)


def watch(s: demo.DemoSettings, client: demo.AirflowClient, run_id: str, since: float, timeout_s: float = 900
          ) -> tuple[str, float, dict | None]:
    """What the demo tells the user while it waits: (message, seconds after `since`, finished run or None)."""
    try:
        run, tis = demo.wait_for_run(client, DAG_ID, run_id, timeout_s, say=lambda line: None, poll_s=1.0,
                                     check=lambda: demo.check_services(s, run_id))
    except demo.StackDown as down:
        return str(down), time.monotonic() - since, None
    failed = [f"{demo.label(t)}: {demo.failure_reason(client, DAG_ID, run_id, t)[:200]}"
              for t in sorted(tis, key=lambda t: t.get("start_date") or "~") if t.get("state") == "failed"]
    return (f"run {run['state']}" + (f"; {failed[0]}" if failed else "")), time.monotonic() - since, run


def retry(s: demo.DemoSettings, label: str) -> dict:
    """The run again with the same label (what a user does after the next step), and what it left."""
    client = demo.AirflowClient(s)
    client.wait_for_dag(DAG_ID)
    run_id = client.trigger(DAG_ID, {"campaign": CAMPAIGN, "run_label": label, "configs": [CONFIG]})
    run, _ = demo.wait_for_run(client, DAG_ID, run_id, 1200, say=lambda line: None)
    summary = demo.read_table(s, layout.table_prefix("phase_summary", "ci-tiny", CONFIG))
    mine = summary[summary["run_id"] == label] if summary is not None else None
    keys = ["scenario", "run_id", "repeat", "phase"] + (["group"] if mine is not None and "group" in mine else [])
    duplicates = int(mine.duplicated(subset=keys).sum()) if mine is not None else None
    store = s.s3.store()
    prefix = raw_layout.raw_scenario_run_prefix("ci-tiny", CONFIG, "steps", label)
    manifests = [k for k in store.list(prefix) if raw_layout.is_manifest(k)]
    lost, agree = None, []
    for key in manifests:
        manifest = json.loads(store.get(key))
        lost = (lost or 0) + sum(int(a.get("lost", 0)) for a in manifest.get("accounting") or [])
        agree.append((manifest.get("broker_counts") or {}).get("agrees"))
    return {"state": run["state"], "rows": None if mine is None else len(mine), "duplicate_rows": duplicates,
            "duplicate_manifests": max(0, len(manifests) - 1), "lost": lost, "broker_counts_agree": agree}


def leaked_envelopes(s: demo.DemoSettings) -> int:
    """cgroups + mounts + loop devices of the stack's state root (the OS's own lists)."""
    from adapters.envelope import leftovers

    left = leftovers(s.paths.terraform.resolve())
    return len(left.cgroups) + len(left.mounts) + len(left.loops)


def leaked_network() -> int:
    """Namespaces + veth links + hosts files of the trial's network slot (the kernel's own lists)."""
    return len(netns.leftovers(network_slot(SLOT_OFFSET)).names())  # the one trial's port slot is the offset's


def kill_apply_once_enveloped(s: demo.DemoSettings, timeout_s: float = 300) -> None:
    """Waits until a node's loop volume is mounted under the state root, then kill -9 every `terraform apply`."""
    from adapters.envelope import leftovers

    deadline = time.monotonic() + timeout_s
    while not leftovers(s.paths.terraform.resolve()).mounts:
        if time.monotonic() > deadline:
            raise TimeoutError("no node envelope appeared")
        time.sleep(0.1)
    for pid, cmd in processes("terraform").items():
        if " apply " in f" {cmd} ":
            os.kill(pid, signal.SIGKILL)


def case(s: demo.DemoSettings, name: str) -> dict:
    label = f"fm-{name.lower()}"
    client = demo.AirflowClient(s)
    client.wait_for_dag(DAG_ID)
    run_id = client.trigger(DAG_ID, {"campaign": CAMPAIGN, "run_label": label, "configs": [CONFIG]})
    if name == "F":
        wait_for_task(client, run_id, "cluster.terraform_apply")
        fault_at = time.monotonic()
        kill_apply_once_enveloped(s)
        return finish(s, client, name, label, run_id, watch(s, client, run_id, fault_at))
    wait_for_task(client, run_id, "cluster.run_scenarios")
    deadline = time.monotonic() + 60
    while loadgen_pid(label) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # a few seconds into the load: records are being written and uploaded
    fault_at = time.monotonic()
    seen: tuple[str, float, dict | None]
    if name == "A":
        os.kill(demo.running_pid(s, "scheduler"), signal.SIGKILL)
        seen = watch(s, client, run_id, fault_at)
    elif name == "B":
        os.kill(loadgen_pid(label), signal.SIGKILL)
        seen = watch(s, client, run_id, fault_at)
    elif name == "C":
        os.kill(demo.running_pid(s, "s3"), signal.SIGKILL)
        seen = watch(s, client, run_id, fault_at)
    elif name == "D":
        os.kill(demo.running_pid(s, "api-server"), signal.SIGKILL)
        seen = watch(s, client, run_id, fault_at)
    else:  # E: the user stops the demo mid-run
        demo.stop(s, say)
        seen = ("make stop: " + "the run was ended (marked failed, its cluster torn down)", time.monotonic() - fault_at,
                None)
    return finish(s, client, name, label, run_id, seen)


def finish(s: demo.DemoSettings, client: demo.AirflowClient, name: str, label: str, run_id: str,
           seen: tuple[str, float, dict | None]) -> dict:
    """The user's next step after the fault, then the retry, and what each left."""
    message, noticed_s, finished = seen
    print(f"[{name}] {CASES[name]}: the demo said after {noticed_s:.0f}s: {message}", flush=True)
    orphans: int | None = None
    if finished is None:  # the stack is down: the next step the demo named, `make stop` (E: done), `make demo`
        if name != "E":
            demo.stop(s, say)
        orphans = len(demo.stack_processes(s))
        leaked = leaked_clusters(s)
        envelopes, network = leaked_envelopes(s), leaked_network()
        if name == "A":  # the measured race: an orphan of the killed run takes the slot after the clean-up and dies
            board = LeaseBoard(s.paths.lease_board("local"))
            board.try_acquire(owner_id(DAG_ID, run_id, cluster_key(CONFIG, 1)), 1)
        demo.start(s, say)
    else:  # the run failed by itself and the stack runs on: the next step is the retry
        leaked = leaked_clusters(s)
        envelopes, network = leaked_envelopes(s), leaked_network()
    faulted = demo.AirflowClient(s).run(DAG_ID, run_id)["state"]  # what the UI shows for the run that was hit
    after = retry(s, label)
    result = {"case": name, "fault": CASES[name], "user_sees": message, "noticed_s": round(noticed_s, 1),
              "orphans_after_stop": orphans, "clusters_leaked": leaked, "faulted_run": faulted, **after,
              "clusters_leaked_after_retry": leaked_clusters(s), "envelopes_leaked": envelopes,
              "envelopes_leaked_after_retry": leaked_envelopes(s), "network_leaked": network,
              "network_leaked_after_retry": leaked_network()}
    print(f"[{name}] {json.dumps(result)}", flush=True)
    return result


def table(results: list[dict]) -> str:
    lines = ["| fault | what the user sees | noticed after | the hit run ends | clusters leaked | envelopes leaked | "
             "network leaked | orphans after `make stop` | retry (same run label) | duplicate rows / manifests | "
             "confirmed unaccounted for |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['fault']} | {r['user_sees'].replace('|', '/')} | {r['noticed_s']:.0f} s | "
                     f"{r['faulted_run']} | "
                     f"{r['clusters_leaked']} (after retry {r['clusters_leaked_after_retry']}) | "
                     f"{r['envelopes_leaked']} (after retry {r['envelopes_leaked_after_retry']}) | "
                     f"{r['network_leaked']} (after retry {r['network_leaked_after_retry']}) | "
                     f"{'-' if r['orphans_after_stop'] is None else r['orphans_after_stop']} | {r['state']} "
                     f"({r['rows']} phase_summary rows) | {r['duplicate_rows']} / {r['duplicate_manifests']} | "
                     f"lost {r['lost']}; broker counts agree: {r['broker_counts_agree']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="A,B,C,D,E,F")
    parser.add_argument("--keep", action="store_true", help="leave the state dir (logs) behind")
    parser.add_argument("--network", choices=("loopback", "namespaces"), default="loopback",
                        help="the campaign's local network (namespaces: root only)")
    args = parser.parse_args()
    global CAMPAIGN
    if args.network == "namespaces":
        CAMPAIGN += "network: namespaces\n"
    state = Path(tempfile.mkdtemp(prefix="fault-matrix-"))
    s = demo.DemoSettings(state=state, api_port=24430, s3_port=24420, slot_offset=SLOT_OFFSET)
    results = []
    try:
        demo.start(s, say)
        for name in args.cases.split(","):
            results.append(case(s, name.strip()))
    finally:
        demo.stop(s, say)
        print(f"state dir: {state}" + ("" if args.keep else " (removed)"))
        if not args.keep:
            import shutil

            shutil.rmtree(state, ignore_errors=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
