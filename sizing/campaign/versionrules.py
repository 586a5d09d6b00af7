"""What a RabbitMQ version refuses or ignores of a workload, checked before anything is provisioned. Pure.

A config runs one version (sizing/resources/versions.py: `rabbitmq_version`, else the target's own: Debian 12's 3.10 on
local and aws). Each rule names the version it applies from and why; a refused value is a spec error naming the
version, a value the broker accepts and then ignores is a warning (`Campaign.warnings`: `sizing validate` prints
them, the report lists them): a run must not look as if it measured a setting the broker never applied.

Checked on the real brokers (tests/test_version_rules_broker.py, 3.10.8 and 4.0.5 side by side):
- classic mirrored queues: 4.0 refuses every ha-* policy key ("are not recognised policy settings"); 3.10 applies
  them. The 4.x equivalent is a quorum queue (its replica count: x-quorum-initial-group-size).
- x-queue-mode (classic): 3.10 honours `lazy` (50 messages: 0 in RAM, 50 in a default queue); 4.0 accepts it and
  keeps the same in RAM either way (1 of 50): ignored. RabbitMQ ignores the mode from 3.12 on (rabbitmq.com/docs/
  lazy-queues), so the warning starts at 3.12.
- x-queue-version 1: 3.10 writes a v1 index (journal.jif, *.idx); 4.0 accepts it and writes v2 files (*.qi):
  classic queue v1 was removed in 4.0.
- x-max-in-memory-length / -bytes (quorum): accepted by both and honoured by neither: 5,000 messages of 1 KiB
  (5 MiB) left the quorum queue's process at ~427 KB on 3.10.8 and 4.0.5, with a limit of 0 and without one.
  Quorum queues keep only message metadata in memory there, so the limit has nothing to limit.
- transient (non-durable, non-exclusive) queues: 4.0 declares them and logs the deprecated feature
  `transient_nonexcl_queues` (permitted by default); 4.3 rejects them unless every node's rabbitmq.conf permits
  the feature again (RabbitMQ 4.3.0 release notes), so from 4.3 they are refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sizing.campaign.model import Workload
from sizing.documents.fields import Problem
from sizing.resources.versions import TARGET_DEFAULT_VERSION, series, version_key  # the one version parser

MIRRORING_REMOVED = (4, 0)
QUEUE_MODE_IGNORED = (3, 12)
QUEUE_V1_REMOVED = (4, 0)
TRANSIENT_DEPRECATED = (4, 0)
TRANSIENT_REMOVED = (4, 3)
IN_MEMORY_LIMITS = ("x-max-in-memory-length", "x-max-in-memory-bytes")
QUORUM_EQUIVALENT = ("use quorum queues, their 4.x equivalent (workload.queues.type: quorum; the replica count is "
                     "x-quorum-initial-group-size)")


@dataclass(frozen=True)
class VersionFindings:
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]


def _on(version: str, configs: Sequence[str], every: bool) -> str:
    if every:
        return f"RabbitMQ {version} (every config)"
    shown = ", ".join(configs[:3]) + (f" and {len(configs) - 3} more" if len(configs) > 3 else "")
    return f"RabbitMQ {version} (config{'s' if len(configs) > 1 else ''} {shown})"


def workload_findings(workload: Workload, path: str, version: str, configs: Sequence[str], every: bool = False
                      ) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of one workload on one version; `path` is the workload's (e.g. `workload`); `every`: the
    configs are all the campaign's."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    v = version_key(series(version))  # the series decides: `3.12.13` is 3.12 against the thresholds below
    on = _on(version, configs, every)
    queues = workload.queues
    q = f"{path}.queues"
    if v >= MIRRORING_REMOVED:
        if queues.type == "mirrored":
            errors.append(Problem(f"{q}.type", f"{on} has no classic mirrored queues (removed in 4.0; it refuses "
                                               f"ha-* policies as 'not recognised policy settings'): "
                                               f"{QUORUM_EQUIVALENT}"))
        elif queues.policy and any(str(k).startswith("ha-") for k in queues.policy):
            errors.append(Problem(f"{q}.policy", f"{on} refuses ha-* policy keys (classic mirroring was removed in "
                                                 f"4.0): {QUORUM_EQUIVALENT}"))
    classic = queues.type in ("classic", "mirrored")
    arguments = queues.arguments or {}
    if classic and "x-queue-mode" in arguments and v >= QUEUE_MODE_IGNORED:
        warnings.append(Problem(f"{q}.arguments.x-queue-mode", f"{on} accepts x-queue-mode and ignores it: since "
                                                               f"3.12 every classic queue keeps its messages on "
                                                               f"disk as a lazy one did"))
    if classic and arguments.get("x-queue-version") == 1 and v >= QUEUE_V1_REMOVED:
        warnings.append(Problem(f"{q}.arguments.x-queue-version", f"{on} accepts x-queue-version 1 and runs the "
                                                                  f"queue as version 2 (version 1 was removed in "
                                                                  f"4.0)"))
    if queues.type == "quorum":
        for name in IN_MEMORY_LIMITS:
            if name in arguments:
                warnings.append(Problem(f"{q}.arguments.{name}", f"{on} accepts {name} and ignores it: its quorum "
                                                                 f"queues keep only message metadata in memory "
                                                                 f"(measured on 3.10.8 and 4.0.5), so a run with "
                                                                 f"it measures the same as one without"))
    if not queues.durable and queues.type == "classic":
        if v >= TRANSIENT_REMOVED:
            errors.append(Problem(f"{q}.durable", f"{on} rejects transient non-exclusive queues (the deprecated "
                                                  f"feature transient_nonexcl_queues is disabled from 4.3): "
                                                  f"declare them durable"))
        elif v >= TRANSIENT_DEPRECATED:
            warnings.append(Problem(f"{q}.durable", f"{on} declares transient non-exclusive queues as a deprecated "
                                                    f"feature (transient_nonexcl_queues, permitted by default; "
                                                    f"removed from 4.3): declare them durable to keep the spec "
                                                    f"valid on later versions"))
    return errors, warnings


def version_findings(workloads: Sequence[tuple[str, Workload]], configs_by_version: Mapping[str, Sequence[str]]
                     ) -> VersionFindings:
    """Every workload (path, workload) on every version the campaign's configs run (version -> config ids)."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for version, configs in configs_by_version.items():
        for path, workload in workloads:
            e, w = workload_findings(workload, path, version, configs, every=len(configs_by_version) == 1)
            errors.extend(p for p in e if p not in errors)
            warnings.extend(p for p in w if p not in warnings)
    return VersionFindings(tuple(errors), tuple(warnings))


def configs_by_version(shapes: Sequence[object], deployment: str) -> dict[str, list[str]]:
    """The version each config runs (its own, else the target's default) -> its config ids; an existing cluster's
    version is not known before a run (it is read from the broker then)."""
    if deployment == "existing":
        return {}
    by_version: dict[str, list[str]] = {}
    for shape in shapes:
        version = getattr(shape, "rabbitmq_version", None) or TARGET_DEFAULT_VERSION
        by_version.setdefault(version, []).append(shape.config_id)
    return by_version
