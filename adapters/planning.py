"""The edge of a sizing_campaign run's plan: read the spec parameter (a path or inline YAML), write the resolved
spec, put it in the object store and fetch it on another worker, the slot offset from the environment, and what
admission needs to know of this machine (`machine_facts`). The policy is the core's: admission in
sizing/planning/admission.py, the run (params checks, trials, run keys, stale keys, completeness) in
sizing/planning/runplan.py.

No Airflow imports: plain functions of the spec and a few settings, unit-tested directly.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from adapters.objectstore import ObjectStore, StoreSpec
from adapters.statepaths import state_paths
from sizing.campaign import Campaign, load_campaign, parse_campaign
from sizing.campaign.load import resolve_extends
from sizing.campaign.model import NAMESPACES
from sizing.contract.layout import spec_key
from sizing.documents.fields import Problem, SpecError
from sizing.documents.yamlload import load_yaml
from sizing.planning.admission import Admission, MachineFacts, admit, calibrates, envelope_problems, needs_versions
from sizing.planning.runparams import RunParams
from sizing.planning.runplan import CampaignRun, campaign_run

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


# Where admission gets this host's calibration (sizing.resources.calibration.HostCalibration): a callable giving it or
# None. The DAG's validate_spec and the demo pass adapters.calibration.current (it measures a host that has none), the
# CLI's validate passes adapters.calibration.stored (it never measures), pure callers None (uncalibrated).
CalibrationSource = Callable[[], Any] | None


def load_spec_param(value: str, root: Path = REPO_ROOT) -> Campaign:
    """The `campaign` DAG parameter: a path (relative to the repo root, or absolute) or inline YAML, parsed (its
    admission on this machine: `admitted`).

    Raises SpecError (with every problem and its field path) for a missing file or an invalid spec.
    """
    if not value or not value.strip():
        raise SpecError([Problem("", "the campaign parameter is empty: give a spec path or inline YAML")], "campaign")
    if is_inline_spec(value):
        # `extends` resolves against the shipped campaigns, as a file in campaigns/ would.
        data = resolve_extends(load_yaml(value, "inline campaign"), root / "campaigns", "inline campaign")
        return parse_campaign(data, source="inline campaign")
    path = Path(value)
    return load_campaign(path if path.is_absolute() else root / path)


def spec_source(value: str) -> str:
    """How a refusal names the spec parameter `value`."""
    return "inline campaign" if is_inline_spec(value) else value


def host_speed(campaign: Campaign, host: CalibrationSource) -> float | None:
    """This host's calibration speed, asked of `host` only when the campaign's envelopes use it (None: none)."""
    if host is None or not calibrates(campaign):
        return None
    calibration = host()
    return None if calibration is None else calibration.speed


def machine_facts(campaign: Campaign, host: CalibrationSource = None) -> MachineFacts:
    """What admission needs to know of this machine (sizing.planning.admission.MachineFacts), read only where the
    campaign needs it: the one place admission touches the machine. The 4.0 root is never built here: validation stays
    fast."""
    from adapters import envelope
    from adapters.installed import installed_rabbitmq_version
    from adapters.rootfs import built_root, missing_privileges, root_rabbitmq_version

    facts = MachineFacts(host_speed=host_speed(campaign, host))
    if needs_versions(campaign):
        root = built_root()
        facts = replace(facts, installed=installed_rabbitmq_version(), chroot_missing=missing_privileges(),
                        chroot_version=root_rabbitmq_version(root) if root else None)
    if calibrates(campaign):
        facts = replace(facts, machine=envelope.machine(), support=envelope.detect_support().summary())
    if campaign.deployment == "local" and campaign.network == NAMESPACES:
        from adapters import netns

        facts = replace(facts, network_missing=netns.available())
    return facts


def admitted(campaign: Campaign, source: str = "campaign", params: RunParams | None = None,
             host: CalibrationSource = None) -> Admission:
    """The campaign's (and the run's) admission on this machine (sizing.planning.admission.admit); a SpecError naming
    every problem when it is refused. `host`: see CalibrationSource."""
    admission = admit(campaign, machine_facts(campaign, host), params)
    refusal = admission.refusal(source)
    if refusal is not None:
        raise refusal
    return admission


def envelope_fit_problems(campaign: Campaign, parallelism: int | None = None) -> list[Problem]:
    """Why the campaign's envelopes, `parallelism` configs up at once (default: its budget's), do not fit this
    machine (empty: they fit, or no scale model)."""
    from adapters.envelope import machine

    return envelope_problems(campaign, machine() if calibrates(campaign) else None, parallelism)


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
    """Put a resolved spec where every worker finds it (`sizing.contract.layout.spec_key`); returns the key. With
    several Airflow workers the task after validate_spec may run on a host that never saw the file."""
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
                   host: CalibrationSource = None) -> tuple[RunParams, Admission]:
    """The run's params and the admission of the campaign they name, checked against each other and this machine
    (`admitted`): every problem at once, a SpecError. The DAG's validate_spec, the CLI's trigger and the demo ask
    the same."""
    typed = params if isinstance(params, RunParams) else RunParams.from_dict(params)
    own = typed.problems()
    if any(problem.path == "params.campaign" for problem in own):  # no spec to check the rest against
        raise SpecError(own, "sizing_campaign params")
    campaign = load_spec_param(typed.campaign, root)
    return typed, admitted(campaign, spec_source(typed.campaign), typed, host)


def validate_run(params: RunParams | Mapping[str, Any], spec_dir: Path, root: Path = REPO_ROOT,
                 say: Callable[[str], object] | None = None, host: CalibrationSource = None) -> CampaignRun:
    """Check the DAG params against the spec (`checked_params`), then write the resolved spec where the run's
    tasks read it. `say` gets each line the admission tells (its warnings and notes, in the CLI's words, then what
    the scale model holds here); `host`: this host's calibration (the DAG passes adapters.calibration.current), which
    the trials' envelopes carry."""
    typed, admission = checked_params(params, root, host)
    for line in [*admission.remarks(), *admission.scale] if say else ():
        say(line)
    campaign = admission.campaign
    return campaign_run(typed, campaign, str(write_resolved_spec(campaign, spec_dir)))
