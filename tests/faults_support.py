"""A real local cluster for the fault tests: the Terraform local stack applied into a temporary state.

Stand-in until the shared cluster fixture (tests/fixtures/cluster.py, infra) lands in main; it drives the
same stack (terraform/stacks/local) the same way, on the faults helper's port slots (20-23).
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from sizing.cluster import ClusterInfo

STACK = Path(__file__).resolve().parents[1] / "terraform" / "stacks" / "local"


def _tf(*args: str, state: Path) -> str:
    cmd = ["terraform", f"-chdir={STACK}", *args]
    if args[0] in ("apply", "destroy", "output"):
        cmd.insert(3, f"-state={state}")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"terraform {args[0]} failed: {proc.stderr[-2000:]}{proc.stdout[-2000:]}")
    return proc.stdout


@contextlib.contextmanager
def terraform_cluster(tmp: Path, port_base: int, nodes: int = 3, name: str = "faults") -> Iterator[ClusterInfo]:
    state = tmp / "terraform.tfstate"
    tf_vars = ["-var", f"campaign={name}", "-var", f"config_id=n{nodes}", "-var", f"node_count={nodes}",
               "-var", f"port_base={port_base}", "-var", f"work_dir={tmp / 'work'}"]
    _tf("init", "-input=false", "-no-color", state=state)
    try:
        _tf("apply", "-auto-approve", "-input=false", "-no-color", *tf_vars, state=state)
        yield ClusterInfo.from_terraform_outputs(json.loads(_tf("output", "-json", state=state)))
    finally:
        _tf("destroy", "-auto-approve", "-input=false", "-no-color", *tf_vars, state=state)


def mgmt(cluster: ClusterInfo, path: str, method: str = "GET", body: object = None, node: int = 1) -> object:
    url = cluster.node(node).management_url + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": "Basic " + base64.b64encode(f"{cluster.username}:{cluster.password}".encode()).decode(),
        "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read()
        return json.loads(text) if text else None


def declare_quorum_queue(cluster: ClusterInfo, name: str, leader_node: int = 1) -> None:
    vhost = quote(cluster.vhost, safe="")
    mgmt(cluster, f"/api/queues/{vhost}/{quote(name, safe='')}", "PUT",
         {"durable": True, "arguments": {"x-queue-type": "quorum", "x-quorum-initial-group-size": len(cluster.nodes)}},
         node=leader_node)


def delete_queue(cluster: ClusterInfo, name: str) -> None:
    with contextlib.suppress(Exception):
        mgmt(cluster, f"/api/queues/{quote(cluster.vhost, safe='')}/{quote(name, safe='')}", "DELETE")
