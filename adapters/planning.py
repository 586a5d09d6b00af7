"""The edge of a sizing_campaign run's plan: read the spec parameter (a path or inline YAML), write the resolved
spec, put it in the object store and fetch it on another worker, and the slot offset from the environment. The
policy (params checks, trials, run keys, stale keys, completeness) is the core's: sizing/runplan.py.

No Airflow imports: plain functions of the spec and a few settings, unit-tested directly.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from adapters.objectstore import ObjectStore, StoreSpec
from adapters.statepaths import state_paths
from sizing.fields import Problem, SpecError
from sizing.layout import spec_key
from sizing.plan import check_budget
from sizing.runparams import RunParams
from sizing.runplan import CampaignRun, campaign_run, run_problems
from sizing.scalemodel import with_host_speed
from sizing.spec import Campaign, load_campaign, parse_campaign
from sizing.spec.load import resolve_extends
from sizing.yamlload import load_yaml

REPO_ROOT = Path(__file__).resolve().parents[1]


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


# What the caller knows of this host's calibration (adapters.calibration): `current` (measures when the host has
# none: the DAG's validate_spec, the demo), `stored` (never measures: the CLI's validate and trigger), or None (no
# calibration: pure callers and tests of the parsing itself).
HostCalibration = Callable[[], Any] | None


def load_spec_param(value: str, root: Path = REPO_ROOT, host: HostCalibration = None) -> Campaign:
    """The `campaign` DAG parameter: a path (relative to the repo root, or absolute) or inline YAML.

    Raises SpecError (with every problem and its field path) for a missing file or an invalid spec.
    """
    if not value or not value.strip():
        raise SpecError([Problem("", "the campaign parameter is empty: give a spec path or inline YAML")], "campaign")
    if is_inline_spec(value):
        # `extends` resolves against the shipped campaigns, as a file in campaigns/ would.
        data = resolve_extends(load_yaml(value, "inline campaign"), root / "campaigns", "inline campaign")
        return check_installed(check_budget(parse_campaign(data, source="inline campaign")), "inline campaign", host)
    path = Path(value)
    return check_installed(check_budget(load_campaign(path if path.is_absolute() else root / path)), value, host)


def calibrated(campaign: Campaign, host: HostCalibration) -> Campaign:
    """The campaign with this host's calibration in its scale model (sizing.calibration): its envelopes in reference
    cores. Unchanged without a scale model, off the local target, or when the host has no calibration to give."""
    if host is None or campaign.deployment != "local" or campaign.scale_model is None:
        return campaign
    calibration = host()
    return campaign if calibration is None else with_host_speed(campaign, round(calibration.speed, 4))


def check_installed(campaign: Campaign, source: str = "campaign", host: HostCalibration = None) -> Campaign:
    """Refuse (SpecError) what this machine cannot run as asked: on the local target, a RabbitMQ version neither the
    installed package nor the 4.0 root runs (the root is not built here: validation stays fast), or scale-model
    envelopes that do not fit the machine (with the sum they need). Returns the campaign calibrated for this host
    (`host`: see HostCalibration), which the fit is checked on."""
    from adapters.installed import installed_rabbitmq_version, local_version_problems
    from adapters.rootfs import built_root, missing_privileges, root_rabbitmq_version

    campaign = calibrated(campaign, host)
    root = built_root()
    problems = local_version_problems(campaign, installed_rabbitmq_version(),
                                      chroot_version=root_rabbitmq_version(root) if root else None,
                                      chroot_missing=missing_privileges())
    problems += envelope_fit_problems(campaign)
    if problems:
        raise SpecError(problems, source)
    return campaign


def envelope_fit_problems(campaign: Campaign, parallelism: int | None = None, field: str = "scale_model",
                          configs: tuple[str, ...] = ()) -> list[Problem]:
    """Why the campaign's envelopes (of `configs` only, if given), `parallelism` configs up at once (default: its
    budget's), do not fit this machine (empty: they fit, or no scale model)."""
    from adapters.envelope import machine
    from sizing.scalemodel import campaign_demand, fit_problems

    demand = campaign_demand(campaign, parallelism, configs)
    return [] if demand is None else [Problem(field, reason) for reason in fit_problems(demand, machine())]


def write_resolved_spec(campaign: Campaign, directory: Path) -> Path:
    """Write the resolved spec (after `extends`) where the load generator reads it; content-addressed."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{campaign.name}-{campaign.spec_hash}.yaml"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(dict(campaign.raw), sort_keys=False))
        tmp.replace(path)
    return path


def publish_spec(spec_path: str | Path, store: ObjectStore | None = None) -> str:
    """Put a resolved spec where every worker finds it (`sizing.layout.spec_key`); returns the key. With several
    Airflow workers the task after validate_spec may run on a host that never saw the file."""
    path = Path(spec_path)
    key = spec_key(path.name)
    (store or StoreSpec.from_env().open()).put(key, path.read_bytes(), "application/yaml")
    return key


def spec_on_this_worker(spec_path: str, store: ObjectStore | None = None, env: Mapping[str, str] | None = None) -> str:
    """The resolved spec `spec_path` names, as a file in *this* worker's state dir: read from there when an earlier
    task on this worker put it there, otherwise fetched from the object store (publish_spec). Only the file name of
    `spec_path` counts (content-addressed): a path on another worker's disk is never read."""
    name = Path(spec_path).name
    local = state_paths(env).specs / name
    if not local.exists():
        data = (store or StoreSpec.from_env(None if env is None else dict(env)).open()).get(spec_key(name))
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(f"{name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(local)
    return str(local)


def checked_params(params: RunParams | Mapping[str, Any], root: Path = REPO_ROOT,
                   host: HostCalibration = None) -> tuple[RunParams, Campaign]:
    """The run's params and the campaign they name, checked against each other (sizing.runplan.run_problems):
    every problem at once, a SpecError. The DAG's validate_spec and the CLI's trigger ask the same."""
    typed = params if isinstance(params, RunParams) else RunParams.from_dict(params)
    own = typed.problems()
    if any(problem.path == "params.campaign" for problem in own):  # no spec to check the rest against
        raise SpecError(own, "sizing_campaign params")
    campaign = load_spec_param(typed.campaign, root, host)
    problems = run_problems(typed, campaign)
    if not problems:  # the run's max_parallel_configs may put more envelopes up at once than the budget's
        run = campaign_run(typed, campaign, "")  # only the configs this run selects are ever up at once
        problems = envelope_fit_problems(campaign, run.max_parallel_configs, "params.max_parallel_configs",
                                         run.configs)
    if problems:
        raise SpecError(problems, "sizing_campaign params")
    return typed, campaign


def validate_run(params: RunParams | Mapping[str, Any], spec_dir: Path, root: Path = REPO_ROOT,
                 warn: Callable[[str], object] | None = None, host: HostCalibration = None) -> CampaignRun:
    """Check the DAG params against the spec (`checked_params`), then write the resolved spec where the run's
    tasks read it. `warn` gets each warning of the spec (accepted, and ignored by the version it runs on); `host`:
    this host's calibration (the DAG passes adapters.calibration.current), which the trials' envelopes carry."""
    typed, campaign = checked_params(params, root, host)
    for warning in campaign.warnings if warn else ():
        warn(warning)
    return campaign_run(typed, campaign, str(write_resolved_spec(campaign, spec_dir)))
