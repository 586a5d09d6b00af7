"""What the sizing_campaign DAG does between the spec and the per-config task groups: resolve the
spec parameter, plan the configs (filters, port-slot offset, parallelism), name every partition.

No Airflow imports: these are plain functions of the spec and a few settings, unit-tested directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from sizing.fields import Problem, SpecError
from sizing.layout import raw_config_prefix, table_prefix
from sizing.plan import ConfigPlan, plan_configs
from sizing.spec import Campaign, load_campaign, parse_campaign

REPO_ROOT = Path(__file__).resolve().parents[2]
# Per-config tables (replaced partition by partition) and campaign-wide tables (recomputed whole).
PER_CONFIG_TABLES = ("phase_summary",)
CAMPAIGN_TABLES = ("leaderboard_top_rate", "leaderboard_cost_at_target", "pareto")
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
        return parse_campaign(data, source="inline campaign")
    path = Path(value)
    return load_campaign(path if path.is_absolute() else root / path)


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

    def as_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "spec_path": self.spec_path, "spec_hash": self.spec_hash,
                "deployment": self.deployment, "run_label": self.run_label, "configs": list(self.configs),
                "scenarios": list(self.scenarios), "max_parallel_configs": self.max_parallel_configs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignRun:
        return cls(campaign=data["campaign"], spec_path=data["spec_path"], spec_hash=data["spec_hash"],
                   deployment=data["deployment"], run_label=data["run_label"],
                   configs=tuple(data.get("configs") or ()), scenarios=tuple(data.get("scenarios") or ()),
                   max_parallel_configs=int(data["max_parallel_configs"]))


def validate_run(params: Mapping[str, Any], spec_dir: Path, root: Path = REPO_ROOT) -> CampaignRun:
    """Check the DAG params against the spec; every problem is reported at once as a SpecError."""
    campaign = load_spec_param(str(params.get("campaign") or ""), root)
    problems: list[Problem] = []
    configs = tuple(params.get("configs") or ())
    known_configs = {s.config_id for s in campaign.clusters}
    for name in configs:
        if name not in known_configs:
            problems.append(Problem("params.configs", f"unknown config {name!r}; campaign {campaign.name} has: "
                                                      f"{', '.join(sorted(known_configs))}"))
    scenarios = tuple(params.get("scenarios") or ())
    known_scenarios = {s.name for s in campaign.scenarios}
    for name in scenarios:
        if name not in known_scenarios:
            problems.append(Problem("params.scenarios", f"unknown scenario {name!r}; campaign {campaign.name} "
                                                        f"has: {', '.join(sorted(known_scenarios))}"))
    label = str(params.get("run_label") or "")
    if not label or not all(ch.isalnum() or ch in "-_" for ch in label):
        problems.append(Problem("params.run_label", f"must be letters, digits, '-' or '_' (it names S3 "
                                                    f"partitions), got {label!r}"))
    max_parallel = params.get("max_parallel_configs")
    if max_parallel is None:
        max_parallel = DEFAULT_MAX_PARALLEL.get(campaign.deployment, 1)
    if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
        problems.append(Problem("params.max_parallel_configs", f"must be an integer >= 1, got {max_parallel!r}"))
    if problems:
        raise SpecError(problems, "sizing_campaign params")
    spec_path = write_resolved_spec(campaign, spec_dir)
    return CampaignRun(campaign.name, str(spec_path), campaign.spec_hash, campaign.deployment, label,
                       configs, scenarios, int(max_parallel))


def plan_config_dicts(run: CampaignRun, offset: int = 0) -> list[dict[str, Any]]:
    """The per-config expansion list: one JSON-able dict per config, with its (shifted) port slot.

    The slot is the config's position in the full campaign (so a backfill of one config reuses its
    ports) plus `offset`.
    """
    campaign = load_campaign(run.spec_path)
    plans: list[ConfigPlan] = plan_configs(campaign, list(run.configs) or None)
    out = []
    for plan in plans:
        shifted = replace(plan, slot=plan.slot + offset)
        item = shifted.as_dict()
        item.update(deployment=run.deployment, run_label=run.run_label, spec_path=run.spec_path,
                    scenarios=[s.name for s in campaign.scenarios if not run.scenarios or s.name in run.scenarios],
                    repeats=campaign.repeats, max_parallel_configs=run.max_parallel_configs)
        out.append(item)
    return out


def scenario_runs(config: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(scenario, repeat) pairs the load generator runs for one config, in order."""
    return [(name, repeat) for name in config["scenarios"] for repeat in range(1, int(config["repeats"]) + 1)]


def raw_run_prefixes(config: Mapping[str, Any]) -> list[str]:
    """The raw partitions one config's load runs write; cleared before a rerun so nothing stale survives."""
    from sizing.layout import RunKey, raw_run_prefix

    return [raw_run_prefix(RunKey(config["campaign"], config["config_id"], scenario, config["run_label"], repeat))
            for scenario, repeat in scenario_runs(config)]


def config_partitions(campaign: str, config_id: str) -> list[str]:
    """Every object-store prefix that belongs to exactly one config (what a backfill replaces)."""
    return [raw_config_prefix(campaign, config_id)] + [table_prefix(t, campaign, config_id) for t in PER_CONFIG_TABLES]


def owner_id(dag_id: str, run_id: str, config_id: str) -> str:
    return f"{dag_id}/{run_id}/{config_id}"


def config_ids(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    return [c["config_id"] for c in configs]
