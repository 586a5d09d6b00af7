"""What the sizing_campaign DAG does between the spec and the per-cluster task groups: resolve the
spec parameter, plan the trials (one fresh cluster per config and repeat: filters, port-slot offset,
parallelism), name every partition.

No Airflow imports: these are plain functions of the spec and a few settings, unit-tested directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sizing.fields import Problem, SpecError
from sizing.layout import RunKey, manifest_key, raw_config_prefix, run_key_of, table_prefix
from sizing.plan import Trial, check_budget, plan_trials
from sizing.records import PER_CONFIG_TABLES
from sizing.spec import Campaign, load_campaign, parse_campaign, scenario_names, selected

REPO_ROOT = Path(__file__).resolve().parents[1]
# Locally every broker node and the load generator share the same cores: one cluster at a time.
DEFAULT_MAX_PARALLEL = {"local": 1, "aws": 4}


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where local run state lives (resolved specs, cluster JSON, leases): SIZING_STATE_DIR or <repo>/.state."""
    env = os.environ if env is None else env
    return Path(env.get("SIZING_STATE_DIR") or REPO_ROOT / ".state")


def slot_offset(env: Mapping[str, str] | None = None) -> int:
    """SIZING_SLOT_OFFSET shifts every config's local port block (so parallel users of one machine don't collide)."""
    env = os.environ if env is None else env
    raw = env.get("SIZING_SLOT_OFFSET", "0") or "0"
    try:
        value = int(raw)
    except ValueError as err:
        raise ValueError(f"SIZING_SLOT_OFFSET must be an integer, got {raw!r}") from err
    if value < 0:
        raise ValueError(f"SIZING_SLOT_OFFSET must be >= 0, got {value}")
    return value


def is_inline_spec(value: str) -> bool:
    """A spec parameter is inline YAML when it spans lines or is a YAML mapping; otherwise it is a path."""
    text = value.strip()
    return "\n" in text or text.startswith("{")


def load_spec_param(value: str, root: Path = REPO_ROOT) -> Campaign:
    """The `campaign` DAG parameter: a path (relative to the repo root, or absolute) or inline YAML.

    Raises SpecError (with every problem and its field path) for a missing file or an invalid spec.
    """
    if not value or not value.strip():
        raise SpecError([Problem("", "the campaign parameter is empty: give a spec path or inline YAML")], "campaign")
    if is_inline_spec(value):
        try:
            data = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise SpecError([Problem("", f"is not valid YAML: {err}")], "inline campaign") from err
        if isinstance(data, Mapping) and "extends" in data:
            # Resolve `extends` against the shipped campaigns, as a file in campaigns/ would.
            from sizing.spec import deep_merge, read_campaign_yaml

            parent = read_campaign_yaml(root / "campaigns" / str(data["extends"]))
            data = deep_merge(parent, {k: v for k, v in data.items() if k != "extends"})
        return check_installed(check_budget(parse_campaign(data, source="inline campaign")), "inline campaign")
    path = Path(value)
    return check_installed(check_budget(load_campaign(path if path.is_absolute() else root / path)), value)


def check_installed(campaign: Campaign, source: str = "campaign") -> Campaign:
    """Refuse (SpecError) what this machine cannot run as asked: on the local target, a RabbitMQ version other than
    the installed one."""
    from adapters.installed import installed_rabbitmq_version, local_version_problems

    problems = local_version_problems(campaign, installed_rabbitmq_version())
    if problems:
        raise SpecError(problems, source)
    return campaign


def write_resolved_spec(campaign: Campaign, directory: Path) -> Path:
    """Write the resolved spec (after `extends`) where the load generator reads it; content-addressed."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{campaign.name}-{campaign.spec_hash}.yaml"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(dict(campaign.raw), sort_keys=False))
        tmp.replace(path)
    return path


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

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "spec_path": self.spec_path, "spec_hash": self.spec_hash,
                "deployment": self.deployment, "run_label": self.run_label, "configs": list(self.configs),
                "scenarios": list(self.scenarios), "max_parallel_configs": self.max_parallel_configs,
                "baseline_run": self.baseline_run}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignRun:
        return cls(campaign=data["campaign"], spec_path=data["spec_path"], spec_hash=data["spec_hash"],
                   deployment=data["deployment"], run_label=data["run_label"],
                   configs=tuple(data.get("configs") or ()), scenarios=tuple(data.get("scenarios") or ()),
                   max_parallel_configs=int(data["max_parallel_configs"]), baseline_run=data.get("baseline_run"))


def _unknown_names(param: str, kind: str, names: Sequence[str], known: set[str], campaign: Campaign) -> list[Problem]:
    return [Problem(f"params.{param}", f"unknown {kind} {name!r}; campaign {campaign.name} has: "
                                       f"{', '.join(sorted(known))}")
            for name in names if name not in known]


def validate_run(params: Mapping[str, Any], spec_dir: Path, root: Path = REPO_ROOT) -> CampaignRun:
    """Check the DAG params against the spec; every problem is reported at once as a SpecError."""
    campaign = load_spec_param(str(params.get("campaign") or ""), root)
    configs = tuple(params.get("configs") or ())
    scenarios = tuple(params.get("scenarios") or ())
    problems = [*_unknown_names("configs", "config", configs, {s.config_id for s in campaign.clusters}, campaign),
                *_unknown_names("scenarios", "scenario", scenarios, scenario_names(campaign.scenarios), campaign)]
    label = str(params.get("run_label") or "")
    if not label or not all(ch.isalnum() or ch in "-_" for ch in label):
        problems.append(Problem("params.run_label", f"must be letters, digits, '-' or '_' (it names S3 "
                                                    f"partitions), got {label!r}"))
    max_parallel = params.get("max_parallel_configs")
    if max_parallel is None:
        max_parallel = DEFAULT_MAX_PARALLEL.get(campaign.deployment, 1)
    if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
        problems.append(Problem("params.max_parallel_configs", f"must be an integer >= 1, got {max_parallel!r}"))
    baseline = params.get("baseline_run") or None
    if baseline is not None and (not isinstance(baseline, str)
                                 or not all(ch.isalnum() or ch in "-_" for ch in baseline)):
        problems.append(Problem("params.baseline_run", f"must be a run label (letters, digits, '-' or '_'), got "
                                                       f"{baseline!r}"))
    elif baseline is not None and baseline == label:
        problems.append(Problem("params.baseline_run", f"is the run label itself ({label!r}): a run is compared "
                                                       "with another run"))
    if problems:
        raise SpecError(problems, "sizing_campaign params")
    spec_path = write_resolved_spec(campaign, spec_dir)
    return CampaignRun(campaign.name, str(spec_path), campaign.spec_hash, campaign.deployment, label,
                       configs, scenarios, int(max_parallel), baseline)


def plan_run_trials(run: CampaignRun, offset: int = 0) -> list[Trial]:
    """The cluster group's expansion list: one trial per config and repeat (one fresh cluster each),
    repeat-major, with its (shifted) port slot.

    The slot comes from the full campaign (sizing.plan.plan_trials: a backfill of one config reuses its
    ports) plus `offset`. Each trial carries what every task of the group needs, so none re-plans.
    """
    campaign = load_campaign(run.spec_path)
    scenarios = tuple(s.name for s in campaign.scenarios if selected(s, run.scenarios))
    return [Trial(campaign=run.campaign, config_id=plan.config_id, repeat=plan.repeat, repeats=campaign.repeats,
                  slot=plan.slot + offset, deployment=run.deployment, run_label=run.run_label,
                  spec_path=run.spec_path, scenarios=scenarios, max_parallel_configs=run.max_parallel_configs)
            for plan in plan_trials(campaign, list(run.configs) or None)]


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

