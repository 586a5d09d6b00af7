"""One `sizing_campaign` run's plan, as policy: the checked DAG params (`CampaignRun`; the params themselves are
declared in sizing.planning.runparams), the trials they expand to,
the run keys of a trial, what an earlier run left stale, which configs are complete (the backfill rule), what a
backfill replaces, and who holds a cluster slot.

Pure: the edge (adapters.planning) reads the spec parameter, writes the resolved spec and calls these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sizing.campaign import Campaign, scenario_names, selected
from sizing.campaign.envelopes import with_host_speed
from sizing.contract.layout import RunKey, table_prefix
from sizing.contract.raw_layout import manifest_key, raw_config_prefix, run_key_of
from sizing.contract.records import PER_CONFIG_TABLES
from sizing.documents.fields import Problem
from sizing.planning.plan import ConfigPlan, Trial, campaign_cost, plan_configs, plan_trials, trial_lifetime_s
from sizing.planning.runparams import RUN_PARAMS, RunParams
from sizing.planning.trialcluster import ClusterRequest, cluster_request

# Locally every broker node and the load generator share the same cores: one cluster at a time. An existing
# cluster is one cluster: its trials take turns (they declare the same queue names).
DEFAULT_MAX_PARALLEL = {"local": 1, "aws": 4, "existing": 1}
# Executors that run every task on the scheduler's host: the only ones the local target (clusters as processes
# of that host, their Terraform state and leases on its disk) can run on.
ONE_HOST_EXECUTORS = ("LocalExecutor",)


@dataclass(frozen=True)
class CampaignRun:
    """One `sizing_campaign` run as the tasks see it (the validated params)."""

    campaign: str
    spec_path: str
    spec_hash: str
    deployment: str
    run_label: str
    configs: tuple[str, ...]  # empty = all
    scenarios: tuple[str, ...]  # empty = all
    max_parallel_configs: int
    baseline_run: str | None = None  # the run this one is compared with (issue 24): the report opens with it
    # The host calibration validate_spec applied (sizing.resources.calibration; 1.0: none): the trials' envelopes use
    # it, so every trial of the run is planned on the one calibration its admission checked.
    host_speed: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "spec_path": self.spec_path, "spec_hash": self.spec_hash,
                "deployment": self.deployment, "run_label": self.run_label, "configs": list(self.configs),
                "scenarios": list(self.scenarios), "max_parallel_configs": self.max_parallel_configs,
                "baseline_run": self.baseline_run, "host_speed": self.host_speed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignRun:
        return cls(campaign=data["campaign"], spec_path=data["spec_path"], spec_hash=data["spec_hash"],
                   deployment=data["deployment"], run_label=data["run_label"],
                   configs=tuple(data.get("configs") or ()), scenarios=tuple(data.get("scenarios") or ()),
                   max_parallel_configs=int(data["max_parallel_configs"]), baseline_run=data.get("baseline_run"),
                   host_speed=float(data.get("host_speed") or 1.0))


def _unknown_names(param: str, kind: str, names: Sequence[str], known: set[str], campaign: Campaign) -> list[Problem]:
    return [Problem(f"params.{param}", f"unknown {kind} {name!r}; campaign {campaign.name} has: "
                                       f"{', '.join(sorted(known))}")
            for name in names if name not in known]


def _max_parallel(params: RunParams, campaign: Campaign) -> Any:
    """The run's own value; else the campaign's budget's `parallelism`, the figure its wall-hours cap and its
    envelope fit were checked at; else the target's default."""
    if params.max_parallel_configs is not None:
        return params.max_parallel_configs
    if campaign.budget is not None:
        return campaign.budget.parallelism
    return DEFAULT_MAX_PARALLEL.get(campaign.deployment, 1)


def run_problems(params: RunParams, campaign: Campaign) -> list[Problem]:
    """Every problem of the run's params, on their own and against the campaign (empty: `campaign_run` may be
    built), in the order the params are declared."""
    problems = params.problems()
    wrong = {p.path for p in problems}
    if "params.configs" not in wrong:
        problems += _unknown_names("configs", "config", params.configs, {s.config_id for s in campaign.clusters},
                                   campaign)
    if "params.scenarios" not in wrong:
        problems += _unknown_names("scenarios", "scenario", params.scenarios, scenario_names(campaign.scenarios),
                                   campaign)
    max_parallel = _max_parallel(params, campaign)
    if "params.max_parallel_configs" not in wrong and campaign.deployment == "existing" and max_parallel > 1:
        problems.append(Problem("params.max_parallel_configs", f"must be 1 on an existing cluster: its trials run "
                                                              f"one at a time on it, got {max_parallel}"))
    order = [f"params.{p.name}" for p in RUN_PARAMS]
    return sorted(problems, key=lambda p: order.index(p.path))


def campaign_run(params: RunParams, campaign: Campaign, spec_path: str) -> CampaignRun:
    """The run of params that `run_problems` passed, its spec resolved at `spec_path`."""
    return CampaignRun(campaign.name, spec_path, campaign.spec_hash, campaign.deployment, params.run_label,
                       params.configs, params.scenarios, int(_max_parallel(params, campaign)), params.baseline_run,
                       campaign.scale_model.host_speed if campaign.scale_model is not None else 1.0)


def executor_names(setting: str) -> list[str]:
    """Class names of Airflow's `[core] executor` setting (`LocalExecutor`, `alias:module.Class`, comma lists)."""
    return [entry.strip().split(":")[-1].split(".")[-1] for entry in setting.split(",") if entry.strip()]


def local_target_refusal(deployment: str, executor_setting: str) -> str | None:
    """Why a campaign cannot run on this Airflow, or None. The local target's clusters are processes on one host,
    their Terraform state and slot leases files there: tasks spread over several workers would start a cluster on
    one and look for it on another. The default (first) executor runs the DAG's tasks."""
    names = executor_names(executor_setting)
    if deployment != "local" or not names or names[0] in ONE_HOST_EXECUTORS:
        return None
    return (f"deployment: local runs its clusters as processes of one host, but this Airflow's executor is "
            f"{names[0]} (tasks on several workers). Run the local target on a LocalExecutor Airflow (make demo), "
            f"or measure a running cluster with deployment: existing, or use deployment: aws")


def plan_run_trials(run: CampaignRun, campaign: Campaign, offset: int = 0) -> list[Trial]:
    """The cluster group's expansion list: one trial per config and repeat (one fresh cluster each),
    repeat-major, with its (shifted) port slot.

    The slot comes from the full campaign (sizing.planning.plan.plan_trials: a backfill of one config reuses its
    ports) plus `offset`. Each trial carries what every task of the group needs, so none re-plans. `campaign` is
    the spec as parsed; the run's host calibration is applied here.
    """
    campaign = with_host_speed(campaign, run.host_speed)
    scenarios = tuple(s.name for s in campaign.scenarios if selected(s, run.scenarios))
    wall_s = campaign_cost(campaign, run.max_parallel_configs, scenarios=list(scenarios)).wall_s
    requests = {plan.config_id: config_request(campaign, plan)
                for plan in plan_configs(campaign, list(run.configs) or None)}
    return [Trial(campaign=run.campaign, config_id=plan.config_id, repeat=plan.repeat, repeats=campaign.repeats,
                  slot=plan.slot + offset, deployment=run.deployment, run_label=run.run_label,
                  spec_path=run.spec_path, scenarios=scenarios, max_parallel_configs=run.max_parallel_configs,
                  cluster=requests[plan.config_id], planned_wall_s=wall_s)
            for plan in plan_trials(campaign, list(run.configs) or None)]


def config_request(campaign: Campaign, plan: ConfigPlan) -> ClusterRequest:
    """What the campaign says of one config's cluster (sizing.planning.trialcluster), as its trials carry it."""
    return cluster_request(campaign, plan.shape, plan.monthly_cost, trial_lifetime_s(campaign))


def run_keys(trial: Trial) -> list[RunKey]:
    """The load runs of one trial, in order: its repeat of every scenario, on its one cluster. The keys name
    their raw partitions (cleared before each run, so a rerun replaces) and manifests."""
    return [RunKey(trial.campaign, trial.config_id, scenario, trial.run_label, trial.repeat)
            for scenario in trial.scenarios]


def stale_repeat_keys(trial: Trial, object_keys: Iterable[str]) -> list[str]:
    """Raw objects of the trial's config, run label and scenarios from repeats beyond the spec's `repeats`:
    what an earlier run left when `repeats` has since gone down. No trial writes them, so removing them
    is safe whatever runs alongside; left there, the analysis would count them as repeats."""
    stale = []
    for object_key in object_keys:
        key = run_key_of(object_key)
        if (key is not None and key.campaign == trial.campaign and key.config_id == trial.config_id
                and key.run_id == trial.run_label and key.scenario in trial.scenarios and key.repeat > trial.repeats):
            stale.append(object_key)
    return stale


def complete_configs(trials: Sequence[Trial], landed: Callable[[str], bool]) -> list[Trial]:
    """One trial per config (its first) whose every trial's every run has its manifest, i.e.
    `landed(manifest_key)` is true: a config missing any repeat is left out of the analysis."""
    by_config: dict[str, list[Trial]] = {}
    for trial in trials:
        by_config.setdefault(trial.config_id, []).append(trial)
    return [group[0] for group in by_config.values()
            if all(landed(manifest_key(key)) for trial in group for key in run_keys(trial))]


def config_partitions(campaign: str, config_id: str) -> list[str]:
    """Every object-store prefix that belongs to exactly one config (what a backfill replaces)."""
    return [raw_config_prefix(campaign, config_id)] + [table_prefix(t, campaign, config_id) for t in PER_CONFIG_TABLES]


def failed_tasks(states: Mapping[str, str | None]) -> list[str]:
    """The failed task instances among `states` ({task_id or task_id_mapindex: state}), sorted."""
    return sorted(name for name, state in states.items() if state in ("failed", "upstream_failed"))


def owner_id(dag_id: str, run_id: str, cluster_key: str) -> str:
    """Who holds a cluster slot: one cluster (config and repeat) of one DAG run."""
    return f"{dag_id}/{run_id}/{cluster_key}"

