"""TerraformHook: apply / output / destroy one cluster's Terraform stack from a task.

The hook only wires Airflow (logging, optional connection) to adapters.terraform, which builds the commands
(pure functions) and runs them; state and working data live per cluster (campaign, config and repeat:
ConfigPlan.cluster_key) under `state_root`.

Optional connection `terraform_default` (any conn type), extras:
    {"state_root": "/data/rabbit-sizing/.state/terraform", "terraform_bin": "terraform",
     "backend_config": {"bucket": "...", "region": "..."}, "backend_key_prefix": "rabbit-sizing/terraform"}
The backend settings matter for the aws stack only (S3 state); the local stack keeps a local state file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:  # Airflow 3: hooks live in the task SDK
    from airflow.sdk import BaseHook
except ImportError:  # pragma: no cover - Airflow 2 fallback
    from airflow.hooks.base import BaseHook

from adapters.statepaths import state_paths
from adapters.terraform import (
    TERRAFORM_ROOT,
    TerraformCommand,
    TerraformStack,
    apply_command,
    aws_stack_variables,
    destroy_command,
    init_command,
    output_command,
    prepare_local_root,
    run,
    trial_stack_variables,
    workspace,
)
from sizing.planning.plan import ConfigPlan
from sizing.planning.trialcluster import ClusterRequest
from sizing.resources.cluster import ClusterInfo


def aws_backend_config(settings: Mapping[str, str], key_prefix: str, campaign: str,
                       cluster_key: str) -> dict[str, str]:
    """S3 backend settings for one cluster: its own state object under key_prefix."""
    return {**settings, "key": f"{key_prefix.rstrip('/')}/{campaign}/{cluster_key}/terraform.tfstate"}


class TerraformHook(BaseHook):
    conn_name_attr = "terraform_conn_id"
    default_conn_name = "terraform_default"
    conn_type = "generic"
    hook_name = "Terraform (rabbit-sizing)"

    def __init__(self, target: str = "local", terraform_conn_id: str | None = None,
                 state_root: str | Path | None = None, terraform_bin: str | None = None,
                 terraform_root: str | Path = TERRAFORM_ROOT, aws_region: str = "us-east-1", **kwargs: Any):
        super().__init__(**kwargs)
        extras: dict[str, Any] = {}
        if terraform_conn_id:
            extras = dict(self.get_connection(terraform_conn_id).extra_dejson)
        self.target = target
        self.state_root = Path(state_root or extras.get("state_root") or state_paths().terraform)
        self.terraform_bin = terraform_bin or extras.get("terraform_bin") or "terraform"
        self.terraform_root = Path(terraform_root)
        self.aws_region = aws_region
        self.backend_settings: dict[str, str] = dict(extras.get("backend_config") or {})
        self.backend_key_prefix: str = extras.get("backend_key_prefix", "rabbit-sizing/terraform")
        self.runner = run  # what runs a TerraformCommand (tests record the commands instead)

    def get_conn(self) -> TerraformHook:
        return self

    # -------------------------------------------------------------------------------- pure parts

    def _backend(self, campaign: str, cluster_key: str) -> dict[str, str] | None:
        if self.target == "local":
            return None  # local backend, state file inside the workspace
        return aws_backend_config(self.backend_settings, self.backend_key_prefix, campaign, cluster_key)

    def variables(self, plan: ConfigPlan, request: ClusterRequest,
                  rootfs: Path | str | None = None) -> dict[str, Any]:
        """`rootfs`: a local 4.0 config's prepared root (apply prepares it; building variables builds nothing)."""
        if self.target == "local":
            ws = workspace("local", plan.campaign, plan.cluster_key, self.state_root, self.terraform_root)
            return trial_stack_variables(plan, request, ws.work_dir, rootfs)
        return aws_stack_variables(plan, request, region=self.aws_region)

    def commands(self, campaign: str, cluster_key: str) -> dict[str, TerraformCommand]:
        """Every command this hook runs for one cluster (what the unit tests check)."""
        ws = workspace(self.target, campaign, cluster_key, self.state_root, self.terraform_root)
        return {
            "init": init_command(ws, self.terraform_bin, self._backend(campaign, cluster_key)),
            "apply": apply_command(ws, self.terraform_bin, ws.var_file),
            "output": output_command(ws, self.terraform_bin),
            "destroy": destroy_command(ws, self.terraform_bin, ws.var_file),
        }

    # ------------------------------------------------------------------------------------- I/O

    def stack(self, campaign: str, cluster_key: str) -> TerraformStack:
        ws = workspace(self.target, campaign, cluster_key, self.state_root, self.terraform_root)
        return TerraformStack(ws, terraform=self.terraform_bin, logger=self.log, runner=self.runner,
                              backend_config=self._backend(campaign, cluster_key))

    def apply(self, plan: ConfigPlan, request: ClusterRequest) -> ClusterInfo:
        """Prepare a local 4.0 config's root, then init + apply the cluster's stack; returns the `cluster` output."""
        rootfs = prepare_local_root(plan) if self.target == "local" else None
        outputs = self.stack(plan.campaign, plan.cluster_key).apply_variables(self.variables(plan, request, rootfs))
        return ClusterInfo.from_terraform_outputs(outputs)

    def output(self, campaign: str, cluster_key: str) -> ClusterInfo:
        return self.stack(campaign, cluster_key).cluster()

    def destroy(self, campaign: str, cluster_key: str, plan: ConfigPlan | None = None,
                request: ClusterRequest | None = None) -> None:
        """Destroy one cluster. Local: with the variables of the last apply (a no-op for a cluster never applied;
        the local target is one host). aws: the state is in S3 and this may run on another worker than the apply,
        so the variables are regenerated from the trial's plan and cluster request (sizing.planning.trialcluster) and
        the working directory initialised here (`plan` and `request` are then required)."""
        stack = self.stack(campaign, cluster_key)
        if self.target == "local":
            stack.destroy()
            return
        if plan is None or request is None:
            raise ValueError(f"destroying an {self.target} cluster needs its plan and cluster request (variables "
                             f"are regenerated, never read from a worker's disk)")
        stack.destroy(self.variables(plan, request))
