"""Terraform at the edge of the core: build terraform commands (pure), run them (subprocess), read `cluster`.

Every cluster (campaign, config and repeat: ConfigPlan.cluster_key) gets its own workspace under
`.state/terraform/<campaign>/<cluster_key>/`:

    .terraform/             TF_DATA_DIR: backend settings and module manifest of this cluster only
    terraform.tfstate       the state (local backend, path given at `init -backend-config=path=...`)
    vars.tfvars.json        the variables of the last apply (destroy reuses them, even from another process)
    work/                   local stack only: the cluster's cookie home, node data and logs

The stack directory itself (terraform/stacks/<target>) is shared and never written to, so clusters can be
applied side by side. The local backend path + TF_DATA_DIR replace the legacy `-state` flag: every command
(apply, output, destroy) then finds the right state with no extra flag to forget.

No Airflow here: plugins/rabbit_sizing/hooks/terraform.py wraps this module for the DAGs.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.envelope import cluster_cgroup
from adapters.management import wait_healthy
from adapters.rootfs import ensure_root
from adapters.statepaths import state_paths
from sizing.campaign.model import NAMESPACES
from sizing.planning.plan import ConfigPlan, expiry_tag
from sizing.planning.trialcluster import ClusterRequest
from sizing.resources.cluster import ClusterInfo
from sizing.resources.disks import AWS_DEVICE_NAMES, AWS_MOUNT_POINTS, DEFAULT_FILESYSTEM
from sizing.resources.localports import LOCAL_MAX_NODES, LOCAL_PORT_BLOCK
from sizing.resources.scalemodel import ClusterEnvelopes
from sizing.resources.versions import apt_version, erlang_series, local_runtime

REPO_ROOT = Path(__file__).resolve().parents[1]
TERRAFORM_ROOT = REPO_ROOT / "terraform"
STACKS = ("local", "aws")

log = logging.getLogger(__name__)


class TerraformError(RuntimeError):
    """A terraform command failed; the message names the command and ends with its last output lines."""


# ------------------------------------------------------------------------------------- pure: workspaces


@dataclass(frozen=True)
class Workspace:
    """Where one cluster's Terraform state lives, and which stack it applies."""

    stack_dir: Path
    state_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.state_dir / ".terraform"

    @property
    def state_path(self) -> Path:
        return self.state_dir / "terraform.tfstate"

    @property
    def var_file(self) -> Path:
        return self.state_dir / "vars.tfvars.json"

    @property
    def work_dir(self) -> Path:
        return self.state_dir / "work"


def _path_part(kind: str, value: str) -> str:
    if not value or "/" in value or value in (".", ".."):
        raise ValueError(f"{kind} {value!r} cannot name a state directory")
    return value


def workspace(target: str, campaign: str, cluster_key: str, state_root: Path | str | None = None,
              terraform_root: Path | str = TERRAFORM_ROOT) -> Workspace:
    """The cluster's Terraform workspace under `state_root` (default: the state directory's terraform/, which
    follows SIZING_STATE_DIR: adapters.statepaths)."""
    state_root = state_root if state_root is not None else state_paths().terraform
    if target not in STACKS:
        raise ValueError(f"unknown Terraform target {target!r}; stacks: {', '.join(STACKS)}")
    # A campaign has one deployment target, so (campaign, cluster key) alone keys the state.
    state_dir = Path(state_root).resolve() / _path_part("campaign", campaign) / _path_part("cluster", cluster_key)
    return Workspace(stack_dir=Path(terraform_root).resolve() / "stacks" / target, state_dir=state_dir)


# --------------------------------------------------------------------------------------- pure: commands


@dataclass(frozen=True)
class TerraformCommand:
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the caller's environment

    def __str__(self) -> str:
        return " ".join(self.argv)


def command_env(ws: Workspace) -> dict[str, str]:
    return {
        "TF_DATA_DIR": str(ws.data_dir),  # per-pair backend settings: parallel configs never share them
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",  # no version check over the network
    }


def _base(ws: Workspace, terraform: str, subcommand: str) -> list[str]:
    return [terraform, f"-chdir={ws.stack_dir}", subcommand]


def init_command(ws: Workspace, terraform: str = "terraform",
                 backend_config: Mapping[str, str] | None = None) -> TerraformCommand:
    """`backend_config` defaults to the local backend's state path inside the workspace."""
    settings = dict(backend_config) if backend_config is not None else {"path": str(ws.state_path)}
    argv = [*_base(ws, terraform, "init"), "-input=false", "-no-color", "-reconfigure"]
    argv += [f"-backend-config={key}={value}" for key, value in settings.items()]
    return TerraformCommand(tuple(argv), command_env(ws))


def _var_args(var_file: Path | None, variables: Mapping[str, Any] | None) -> list[str]:
    args = [f"-var-file={var_file}"] if var_file else []
    for key, value in (variables or {}).items():
        text = value if isinstance(value, str) else json.dumps(value)
        args.append(f"-var={key}={text}")
    return args


def apply_command(ws: Workspace, terraform: str = "terraform", var_file: Path | None = None,
                  variables: Mapping[str, Any] | None = None) -> TerraformCommand:
    argv = [*_base(ws, terraform, "apply"), "-input=false", "-no-color", "-auto-approve",
            *_var_args(var_file, variables)]
    return TerraformCommand(tuple(argv), command_env(ws))


def output_command(ws: Workspace, terraform: str = "terraform") -> TerraformCommand:
    return TerraformCommand((*_base(ws, terraform, "output"), "-json", "-no-color"), command_env(ws))


def destroy_command(ws: Workspace, terraform: str = "terraform", var_file: Path | None = None,
                    variables: Mapping[str, Any] | None = None) -> TerraformCommand:
    argv = [*_base(ws, terraform, "destroy"), "-input=false", "-no-color", "-auto-approve",
            *_var_args(var_file, variables)]
    return TerraformCommand(tuple(argv), command_env(ws))


# -------------------------------------------------------------------------------------- pure: variables


def tf_string(value: Any) -> str:
    """rabbitmq.conf spelling of a scalar (YAML true -> "true", not Python's "True")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def local_stack_variables(plan: ConfigPlan, broker_config: Mapping[str, Any], work_dir: Path | str,
                          username: str = "guest", password: str = "guest",
                          envelopes: ClusterEnvelopes | None = None,
                          rootfs: Path | str | None = None, network_slot: int = 0,
                          network_mbit: float | None = None) -> dict[str, Any]:
    """Variables of terraform/stacks/local for one cluster (config and repeat). With `envelopes` (the scale model),
    its nodes and load generator run in them, under a cgroup named for the workspace's state root and the port block
    (adapters.envelope.cluster_cgroup; work_dir is <state root>/<campaign>/<cluster>/work).

    Builds nothing: a config on the chroot runtime (4.0) needs `rootfs`, the root its bring-up prepared first
    (prepare_local_root), so building variables never waits on a debootstrap.

    `network_slot` (1-254) puts each node in a network namespace of its own (adapters/netns.py), its link limited to
    `network_mbit`; 0: every node on the loopback."""
    if plan.shape.nodes > LOCAL_MAX_NODES:
        raise ValueError(f"config {plan.config_id} has {plan.shape.nodes} nodes; a local cluster holds at most "
                         f"{LOCAL_MAX_NODES} (its {LOCAL_PORT_BLOCK}-port block: sizing.resources.localports)")
    if plan.local_port_base + LOCAL_PORT_BLOCK > 65536:
        raise ValueError(f"cluster {plan.cluster_key} would need ports from {plan.local_port_base} (slot {plan.slot}), "
                         f"past 65535: fewer configs x repeats, or a smaller SIZING_SLOT_OFFSET")
    runtime = local_runtime(plan.shape.rabbitmq_version)
    if runtime == "chroot" and not rootfs:
        raise ValueError(f"config {plan.config_id} runs RabbitMQ {plan.shape.rabbitmq_version} in the chroot runtime: "
                         f"prepare its root first (adapters.terraform.prepare_local_root) and pass it as rootfs")
    return {
        "campaign": plan.campaign,
        "config_id": plan.config_id,
        "repeat": plan.repeat,
        "node_count": plan.shape.nodes,
        "port_base": plan.local_port_base,
        "work_dir": str(Path(work_dir).resolve()),
        "broker_config": {key: tf_string(value) for key, value in broker_config.items()},
        "username": username,
        "password": password,
        "volume_roles": [v.role for v in plan.shape.volumes],  # a directory each (sizing/resources/disks.py)
        "envelope": "" if envelopes is None else json.dumps(replace(
            envelopes, cgroup=cluster_cgroup(Path(work_dir).resolve().parents[2], plan.local_port_base)).to_dict(),
            sort_keys=True),
        "python": sys.executable,
        "runtime": runtime,
        "rootfs": str(rootfs) if runtime == "chroot" else "",
        "network_slot": network_slot,
        "network_mbit": network_mbit,
    }


def network_slot(port_slot: int) -> int:
    """The network slot (1-254, adapters/netns.py) of the cluster in port slot `port_slot`: port slots 254 apart share
    one, and the second to build it is refused (its namespaces exist) rather than joined."""
    return port_slot % 254 + 1


def trial_stack_variables(plan: ConfigPlan, request: ClusterRequest, work_dir: Path | str,
                          rootfs: Path | str | None = None) -> dict[str, Any]:
    """local_stack_variables of a campaign's trial: its request's broker config, envelopes and network (each node's
    link limited to its envelope's, where the scale model gives it one)."""
    slot = network_slot(plan.slot) if request.network == NAMESPACES else 0
    mbit = request.envelopes.node.network_mbit if slot and request.envelopes is not None else None
    return local_stack_variables(plan, request.broker_config, work_dir, envelopes=request.envelopes, rootfs=rootfs,
                                 network_slot=slot, network_mbit=mbit)


def aws_stack_variables(plan: ConfigPlan, request: ClusterRequest, region: str = "us-east-1",
                        username: str = "sizing", password: str = "",
                        applied_at: datetime | None = None) -> dict[str, Any]:
    """Variables of terraform/stacks/aws for one cluster (config and repeat): one EBS volume per role of the
    disk layout (sizing/resources/disks.py: device name, mount point), size/IOPS/throughput defaulting to the catalog's;
    the ExpiresAt tag counts from `applied_at` (now by default)."""
    volumes = []
    for item in plan.shape.volumes:
        volume, default = item.volume, request.volume_defaults.get(item.volume.type)
        volumes.append({
            "role": item.role,
            "type": volume.type,
            "size_gb": volume.size_gb or (default.size_gb if default else None),
            "iops": volume.iops or (default.iops if default else None),
            "throughput_mbps": volume.throughput_mbps or (default.throughput_mbps if default else None),
            "device_name": AWS_DEVICE_NAMES[item.role],
            "mount_point": AWS_MOUNT_POINTS[item.role],
        })
    return {
        "campaign": plan.campaign,
        "config_id": plan.config_id,
        "repeat": plan.repeat,
        "node_count": plan.shape.nodes,
        "instance_type": plan.shape.instance_type,
        "volumes": volumes,
        "filesystem": plan.shape.filesystem or DEFAULT_FILESYSTEM,
        "broker_config": {key: tf_string(value) for key, value in request.broker_config.items()},
        # the RabbitMQ version the config asks for (issue 24): cloud-init installs it with its Erlang series
        "rabbitmq_package": apt_version(version) if (version := plan.shape.rabbitmq_version) else None,
        "erlang_series": erlang_series(version) if version else None,
        "username": username,
        "password": password,
        "aws_region": region,
        "expires_at": expiry_tag(applied_at or datetime.now(UTC), request.lifetime_s),
    }


# ------------------------------------------------------------------------------------------------- I/O


def prepare_local_root(plan: ConfigPlan) -> Path | None:
    """The bring-up's first step for a local cluster: the root its nodes run in, built on first use (about 40 s)
    only for a config on the chroot runtime (4.0; make demo never builds it). None: the host runtime, nothing run."""
    if local_runtime(plan.shape.rabbitmq_version) != "chroot":
        return None
    return ensure_root()


def run(command: TerraformCommand, logger: logging.Logger | None = None, capture_stdout: bool = False,
        tail_lines: int = 40) -> str:
    """Run a terraform command, streaming its output lines to `logger` (progress in task logs).

    With capture_stdout, stdout is returned (e.g. `output -json`) and only stderr is streamed.
    Raises TerraformError with the command and its last output lines on a non-zero exit.
    """
    logger = logger or log
    env = {**os.environ, **command.env}
    logger.info("$ %s", command)
    tail: deque[str] = deque(maxlen=tail_lines)
    errors: list[str] = []  # `error:` lines anywhere in the output: the reason may scroll out of the tail

    def keep(line: str) -> None:
        tail.append(line)
        if "error: " in line.lower():
            errors.append(line)
        logger.info("%s", line)

    with subprocess.Popen(
        command.argv, env=env, text=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE if capture_stdout else subprocess.STDOUT,
    ) as proc:
        if capture_stdout:
            stdout, stderr = proc.communicate()
            for line in stderr.splitlines():
                keep(line)
        else:
            stdout = ""
            assert proc.stdout is not None
            for line in proc.stdout:
                keep(line.rstrip("\n"))
        code = proc.wait()
    if code != 0:
        last = "\n".join(tail) or "(no output)"
        raise TerraformError(f"terraform {command.argv[2]} failed (exit {code}): {failure_reason(errors)}\n"
                             f"{command}\n{last}")
    return stdout


def failure_reason(lines: Iterable[str]) -> str:
    """The one line that says why: the first `error: ...` line our stack scripts print (a port in use, a node that
    would not start; Terraform prefixes it with the resource's `(local-exec): `), else Terraform's own first
    `Error: ...`, else a pointer to the output below."""
    stripped = [line.split("(local-exec): ", 1)[-1].strip().lstrip("│").strip() for line in lines]
    for prefix in ("error: ", "Error: "):
        found = next((line for line in stripped if line.startswith(prefix)), None)
        if found:
            return found
    return "see its output below"


Runner = Callable[..., str]


class TerraformStack:
    """One stack applied for one cluster (campaign, config and repeat), with its own state."""

    def __init__(self, ws: Workspace, terraform: str = "terraform", logger: logging.Logger | None = None,
                 runner: Runner = run, backend_config: Mapping[str, str] | None = None):
        self.workspace = ws
        self.terraform = terraform
        self.logger = logger or log
        self._run = runner
        self.backend_config = backend_config

    def init(self) -> None:
        self.workspace.state_dir.mkdir(parents=True, exist_ok=True)
        self._run(init_command(self.workspace, self.terraform, self.backend_config), self.logger)

    def apply_variables(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """init + apply with `variables` (kept in the workspace's var file) -> `terraform output -json`."""
        self.init()
        ws = self.workspace
        ws.var_file.write_text(json.dumps(variables, indent=2, sort_keys=True))
        ws.var_file.chmod(0o600)  # holds the broker password
        self._run(apply_command(ws, self.terraform, ws.var_file), self.logger)
        return self.outputs()

    def outputs(self) -> dict[str, Any]:
        return json.loads(self._run(output_command(self.workspace, self.terraform), self.logger, capture_stdout=True))

    def cluster(self) -> ClusterInfo:
        return ClusterInfo.from_terraform_outputs(self.outputs())

    def destroy(self, variables: Mapping[str, Any] | None = None) -> None:
        """Destroy with the variables of the last apply here; a no-op when nothing was ever applied here.

        With `variables` (a remote backend: the aws stack's state lives in S3), the destroy needs nothing this
        directory's apply left: it writes the variables regenerated from the trial, initialises its own working
        directory against the backend, and destroys whatever the remote state holds (nothing: a no-op). So a
        teardown on another worker than its apply still finds the cluster.
        """
        ws = self.workspace
        if variables is not None:
            ws.state_dir.mkdir(parents=True, exist_ok=True)
            ws.var_file.write_text(json.dumps(variables, indent=2, sort_keys=True))
            ws.var_file.chmod(0o600)
        elif not ws.var_file.exists():
            self.logger.info("nothing to destroy in %s (never applied)", ws.state_dir)
            return
        self.init()
        self._run(destroy_command(ws, self.terraform, ws.var_file), self.logger)


class LocalClusterStack(TerraformStack):
    """terraform/stacks/local for one cluster of a campaign: `apply(plan, request)` -> ClusterInfo."""

    def __init__(self, campaign: str, cluster_key: str, state_root: Path | str | None = None,
                 terraform_root: Path | str = TERRAFORM_ROOT, **kwargs: Any):
        super().__init__(workspace("local", campaign, cluster_key, state_root, terraform_root), **kwargs)

    def variables(self, plan: ConfigPlan, request: ClusterRequest,
                  rootfs: Path | str | None = None) -> dict[str, Any]:
        return trial_stack_variables(plan, request, self.workspace.work_dir, rootfs)

    def apply(self, plan: ConfigPlan, request: ClusterRequest) -> ClusterInfo:
        if (plan.campaign, plan.cluster_key) != (self.workspace.state_dir.parent.name, self.workspace.state_dir.name):
            raise ValueError(f"plan {plan.campaign}/{plan.cluster_key} does not belong to workspace "
                             f"{self.workspace.state_dir}")
        rootfs = prepare_local_root(plan)  # the root first, then the variables that name it
        return ClusterInfo.from_terraform_outputs(self.apply_variables(self.variables(plan, request, rootfs)))

    def up(self, variables: Mapping[str, Any], healthy_within_s: float = 60.0) -> ClusterInfo:
        """Apply and wait until every node runs; a cluster that never gets healthy is destroyed again."""
        try:
            cluster = ClusterInfo.from_terraform_outputs(self.apply_variables(variables))
            wait_healthy(cluster, timeout_s=healthy_within_s, logger=self.logger)
        except BaseException:
            self.destroy()
            raise
        return cluster
