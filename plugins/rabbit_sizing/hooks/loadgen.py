"""Launching the load generator: the command is built in one place and run in another.

Local target: `python -m loadgen run ...` as a subprocess whose output is streamed line by line into
the task log. AWS target: the same command as the container command of an ECS task (the operator
hands it to the Amazon provider's EcsRunTaskOperator).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow.sdk import BaseHook

from adapters.planning import REPO_ROOT
from adapters.procs import stop_process_group

# The env the load generator needs: where raw results go. Credentials come from the usual AWS_* chain.
FORWARDED_ENV = ("SIZING_S3_ENDPOINT", "SIZING_S3_BUCKET", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


@dataclass(frozen=True)
class LoadgenRun:
    spec_path: str
    config_id: str
    scenario: str
    run_id: str
    repeat: int
    cluster_json: str  # a file path (local) or the JSON itself (containers)
    workers: int | None = None


def loadgen_args(run: LoadgenRun) -> list[str]:
    """The CLI arguments after `python -m loadgen` (documented interface of the loadgen package)."""
    args = ["run", "--campaign", run.spec_path, "--config", run.config_id, "--scenario", run.scenario,
            "--run-id", run.run_id, "--repeat", str(run.repeat), "--cluster-json", run.cluster_json]
    if run.workers:
        args += ["--workers", str(run.workers)]
    return args


def local_command(run: LoadgenRun, python: str = sys.executable) -> list[str]:
    return [python, "-m", "loadgen", *loadgen_args(run)]


def forwarded_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if env is None else env
    return {k: env[k] for k in FORWARDED_ENV if env.get(k)}


def ecs_overrides(run: LoadgenRun, container_name: str, env: Mapping[str, str],
                  cpu: int | None = None, memory_mb: int | None = None) -> dict:
    """`overrides` for ECS RunTask: the loadgen container's command and environment.

    Secrets (AWS keys) are not forwarded: the task role provides credentials on ECS.
    """
    environment = [{"name": k, "value": v} for k, v in sorted(env.items()) if not k.startswith("AWS_") or
                   k == "AWS_DEFAULT_REGION"]
    container: dict = {"name": container_name, "command": ["python", "-m", "loadgen", *loadgen_args(run)],
                       "environment": environment}
    if cpu:
        container["cpu"] = cpu
    if memory_mb:
        container["memory"] = memory_mb
    return {"containerOverrides": [container]}


class LoadgenHook(BaseHook):
    """Runs the load generator locally, streaming its output to a callback (the task log)."""

    def __init__(self, cwd: Path = REPO_ROOT, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cwd = cwd

    def run_local(self, command: Sequence[str], env: Mapping[str, str], on_line: Callable[[str], None],
                  timeout_s: float | None = None) -> int:
        """Run to completion; every output line goes to `on_line`. Returns the exit code.

        The child gets its own process group so that a killed task (timeout, mark failed) takes the
        load generator's worker processes down with it.
        """
        proc = subprocess.Popen(list(command), cwd=self.cwd, env={**os.environ, **env}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                on_line(line.rstrip("\n"))
            return proc.wait(timeout=timeout_s)
        except BaseException:
            stop_process_group(proc.pid, grace_s=10)
            raise
