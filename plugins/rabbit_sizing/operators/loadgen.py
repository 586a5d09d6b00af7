"""Runs every scenario of one trial (config and repeat) on its fresh cluster with the load generator, which
drives the faults.

Before each run the run's raw partition is emptied (through the object-store adapter: uploads.raw_store), so that
re-running a config with the same run label replaces its raw data instead of mixing old and new files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow.sdk import BaseOperator

from rabbit_sizing.hooks.loadgen import LoadgenRun
from rabbit_sizing.uploads import AWS_CONN_ID
from sizing.contract.layout import RunKey, s3_uri
from sizing.planning.plan import Trial


@dataclass(frozen=True)
class EcsSettings:
    """Where the loadgen container runs on the aws target (from the environment of the Airflow workers)."""

    cluster: str
    task_definition: str
    container_name: str = "loadgen"
    subnets: tuple[str, ...] = ()
    security_groups: tuple[str, ...] = ()
    log_group: str | None = None
    log_stream_prefix: str = "loadgen/loadgen"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EcsSettings:
        env = os.environ if env is None else env

        def csv(name: str) -> tuple[str, ...]:
            return tuple(x.strip() for x in env.get(name, "").split(",") if x.strip())

        missing = [k for k in ("SIZING_ECS_CLUSTER", "SIZING_ECS_TASK_DEFINITION") if not env.get(k)]
        if missing:
            raise ValueError(f"the aws target runs the load generator on ECS; set {', '.join(missing)}")
        return cls(cluster=env["SIZING_ECS_CLUSTER"], task_definition=env["SIZING_ECS_TASK_DEFINITION"],
                   container_name=env.get("SIZING_ECS_CONTAINER", "loadgen"), subnets=csv("SIZING_ECS_SUBNETS"),
                   security_groups=csv("SIZING_ECS_SECURITY_GROUPS"), log_group=env.get("SIZING_ECS_LOG_GROUP"),
                   log_stream_prefix=env.get("SIZING_ECS_LOG_STREAM_PREFIX", "loadgen/loadgen"))


def loadgen_run(trial: Trial, key: RunKey, cluster_json: str, workers: int | None = None,
                spec_path: str | None = None) -> LoadgenRun:
    """`spec_path`: the resolved spec on this worker (adapters.planning.spec_on_this_worker); default the trial's."""
    return LoadgenRun(spec_path=spec_path or trial.spec_path, config_id=key.config_id, scenario=key.scenario,
                      run_id=key.run_id, repeat=key.repeat, cluster_json=cluster_json, workers=workers)


def ecs_run_task_operator(run: LoadgenRun, settings: EcsSettings, env: Mapping[str, str], task_id: str, **kwargs):
    """The Amazon provider's EcsRunTaskOperator that runs one load-generator run as an ECS task."""
    from airflow.providers.amazon.aws.operators.ecs import EcsRunTaskOperator

    from rabbit_sizing.hooks.loadgen import ecs_overrides

    network = None
    if settings.subnets:
        network = {"awsvpcConfiguration": {"subnets": list(settings.subnets),
                                           "securityGroups": list(settings.security_groups),
                                           "assignPublicIp": "DISABLED"}}
    return EcsRunTaskOperator(
        task_id=task_id, cluster=settings.cluster, task_definition=settings.task_definition, launch_type="FARGATE",
        overrides=ecs_overrides(run, settings.container_name, env), network_configuration=network,
        awslogs_group=settings.log_group, awslogs_stream_prefix=settings.log_stream_prefix if settings.log_group
        else None, container_name=settings.container_name, aws_conn_id=AWS_CONN_ID, wait_for_completion=True,
        deferrable=False, propagate_tags="TASK_DEFINITION",
        tags={"rabbit-sizing:campaign": run.spec_path.rsplit("/", 1)[-1], "rabbit-sizing:config": run.config_id,
              "rabbit-sizing:scenario": run.scenario, "rabbit-sizing:repeat": str(run.repeat)}, **kwargs)


SETTLE_S = 180.0  # how long a load run waits for the cluster the run before it left to be whole again


class LoadgenOperator(BaseOperator):
    template_fields: Sequence[str] = ("trial", "cluster")

    def __init__(self, *, trial: Any, cluster: Any, workers: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial = trial
        self.cluster = cluster
        self.workers = workers

    def _clear_raw(self, prefix: str, which: Callable[[list[str]], list[str]] = lambda keys: keys) -> None:
        from rabbit_sizing.uploads import raw_store

        store = raw_store()
        keys = which(store.list(prefix))
        if keys:
            self.log.info("rerun: removing %d stale object(s) under %s", len(keys), s3_uri(store.bucket, prefix))
            store.delete(keys)

    def execute(self, context) -> list[dict]:
        from rabbit_sizing.sensors.cluster import slot_kept

        trial = Trial.from_dict(self.trial)
        with slot_kept(trial, self.dag_id, context["run_id"]):  # a load run is long: its slot's lease is renewed
            return self._run_all(trial, context)

    def _run_all(self, trial: Trial, context) -> list[dict]:
        from adapters.envelope import generator_command
        from adapters.management import wait_healthy
        from adapters.planning import spec_on_this_worker
        from rabbit_sizing.cluster_lifecycle import cluster_for_task, cluster_json_path
        from rabbit_sizing.hooks.loadgen import LoadgenHook, forwarded_env, local_command
        from rabbit_sizing.uploads import publish_run_log, run_log_path
        from sizing.contract.raw_layout import raw_run_prefix
        from sizing.planning.runplan import run_keys

        cluster = cluster_for_task(trial, self.cluster)
        spec_path = spec_on_this_worker(trial.spec_path)
        # The generator runs on this worker for the local target and for an existing cluster; on aws, on ECS.
        local = trial.deployment in ("local", "existing")
        if local:
            path = cluster_json_path(trial)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.chmod(0o600)  # an existing cluster's password is in it
            path.write_text(cluster.to_json())
            cluster_arg = str(path)
        else:
            cluster_arg = cluster.to_json()
        env = forwarded_env()
        if trial.repeat == 1:  # the config's first trial drops repeats an earlier, longer spec left
            from sizing.contract.raw_layout import raw_config_prefix
            from sizing.planning.runplan import stale_repeat_keys

            self._clear_raw(raw_config_prefix(trial.campaign, trial.config_id),
                            lambda keys: stale_repeat_keys(trial, keys))
        done = []
        for index, key in enumerate(run_keys(trial)):
            if index:  # each load run starts on a whole cluster, as the first does after wait_healthy: the run before
                # may have left it settling (under autoheal, a partition's losing side restarts after the heal)
                wait_healthy(cluster, timeout_s=SETTLE_S, logger=self.log)
            run = loadgen_run(trial, key, cluster_arg, self.workers, spec_path)
            self._clear_raw(raw_run_prefix(key))
            self.log.info("load run %s / %s / repeat %d", run.config_id, run.scenario, run.repeat)
            if local:
                command = generator_command(cluster.cluster_dir, local_command(run))  # its own envelope, if any
                self.log.info("$ %s", " ".join(command))
                log_path = run_log_path(trial, run.scenario, run.repeat)
                log_path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with log_path.open("w") as console:
                        def on_line(line: str, console=console) -> None:
                            console.write(line + "\n")
                            self.log.info("loadgen | %s", line)

                        code = LoadgenHook().run_local(command, env, on_line)
                finally:  # kept in the object store at once: `upload` may run on another worker
                    publish_run_log(trial, run.scenario, run.repeat)
                if code != 0:
                    raise RuntimeError(f"load generator exited with code {code} ({run.scenario}, "
                                       f"repeat {run.repeat}); its output is above")
            else:
                ecs = ecs_run_task_operator(run, EcsSettings.from_env(), env,
                                            task_id=f"{self.task_id}__{run.scenario}__{run.repeat}")
                ecs.execute(context)
            done.append(key.as_dict())
        return done
