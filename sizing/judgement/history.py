"""A campaign's run history (issue 24): one `runs` row per run, and what two runs' specs differ in. Pure: manifests
(the JSON each load run writes, loadgen.runner) and specs in, rows and lines out; schema sizing.contract.records RUNS.

A run is a run label of a campaign: every config x scenario x repeat recorded under it. Its row says what ran (the
spec, as hash and as JSON, and the configs), on what (the RabbitMQ and Erlang versions the running brokers reported,
the instance types, the deployment), with which code (the load generator's commit, pika, the analysis' commit and
Spark), when (first start, last end) and how it ended:
- complete: every config with a recorded load run has every scenario x repeat of the spec recorded complete, and
  every config of the spec ran;
- partial: everything recorded completed, but some config, scenario or repeat of the spec was not recorded (a run
  of a subset of the configs, or a trial that never landed);
- failed: some load run's manifest does not say complete (the generator died or failed);
- unknown: no manifest at all (records written without one, e.g. synthetic ones).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sizing.campaign import Campaign
from sizing.criteria.stats import number
from sizing.resources.scalemodel import ScaleFactors, measured_on

COMPLETE, PARTIAL, FAILED, UNKNOWN = "complete", "partial", "failed", "unknown"
RUN_STATUSES = (COMPLETE, PARTIAL, FAILED, UNKNOWN)


def spec_json(campaign: Campaign) -> str:
    """The resolved spec as canonical JSON: what Campaign.spec_hash hashes."""
    return json.dumps(campaign.raw, sort_keys=True, separators=(",", ":"), default=str)


def joined(values: Iterable[Any]) -> str | None:
    """Distinct non-empty values, sorted and comma-joined (one value stays itself); None when there is none."""
    distinct = sorted({str(v) for v in values if v is not None and str(v) != ""})
    return ", ".join(distinct) if distinct else None


def scenario_of(manifest: Mapping[str, Any]) -> str | None:
    """A manifest's scenario name (the load generator writes the scenario as a mapping with its `name`)."""
    scenario = manifest.get("scenario")
    return scenario.get("name") if isinstance(scenario, Mapping) else scenario


def run_status(campaign: Campaign, manifests: Sequence[Mapping[str, Any]]) -> str:
    """complete | partial | failed | unknown (module docstring)."""
    if not manifests:
        return UNKNOWN
    if any(m.get("status") != COMPLETE for m in manifests):
        return FAILED
    recorded = {(m.get("config_id"), scenario_of(m), int(m.get("repeat") or 1)) for m in manifests}
    expected = {(shape.config_id, scenario.name, repeat) for shape in campaign.clusters
                for scenario in campaign.scenarios for repeat in range(1, campaign.repeats + 1)}
    return COMPLETE if expected <= recorded else PARTIAL


def run_factors(campaign: Campaign, manifests: Sequence[Mapping[str, Any]]) -> ScaleFactors | None:
    """The scale model the run's nodes ran on: as its load runs recorded it (host calibration included: the spec alone
    does not know the host), else the spec's."""
    recorded = [f for m in manifests if (f := (m.get("cluster") or {}).get("scale_model"))]
    return ScaleFactors.from_dict(recorded[0]) if recorded else campaign.scale_model


def run_row(campaign: Campaign, run_id: str, manifests: Sequence[Mapping[str, Any]], *, spark_version: str,
            analysis_commit: str | None, analysed_at: float, baseline_run: str | None = None) -> dict[str, Any]:
    """The `runs` row of one run from its load runs' manifests (sizing.contract.records RUNS)."""
    versions = [m.get("versions") or {} for m in manifests]
    configs = sorted({str(m["config_id"]) for m in manifests if m.get("config_id")})
    shapes = {shape.config_id: shape for shape in campaign.clusters}
    instance_types = [shapes[c].instance_type if c in shapes else (m.get("config") or {}).get("instance_type")
                      for c in configs for m in manifests if m.get("config_id") == c]
    starts = [x for m in manifests if (x := number(m.get("started_at"))) is not None]
    ends = [x for m in manifests if (x := number(m.get("ended_at"))) is not None]
    factors = run_factors(campaign, manifests)
    return {
        "campaign": campaign.name, "run_id": run_id, "status": run_status(campaign, manifests),
        "spec_hash": campaign.spec_hash, "manifest_spec_hashes": joined(m.get("spec_hash") for m in manifests),
        "spec": spec_json(campaign), "code_commit": joined(m.get("code_commit") for m in manifests),
        "analysis_commit": analysis_commit,
        "rabbitmq_version": joined(v.get("rabbitmq") for v in versions),
        "erlang_version": joined(v.get("erlang") for v in versions),
        "pika_version": joined(v.get("pika") for v in versions), "spark_version": spark_version,
        "deployment": campaign.deployment, "configs": ", ".join(configs),
        "instance_types": joined(instance_types) or "",
        "requested_rabbitmq_versions": joined(s.rabbitmq_version for s in campaign.clusters),
        "target_rate": float(campaign.target.rate), "slo_p99_ms": float(campaign.target.p99_latency_ms),
        "repeats": int(campaign.repeats), "load_runs": len(manifests),
        "load_runs_complete": sum(1 for m in manifests if m.get("status") == COMPLETE),
        "started_at": min(starts) if starts else None, "ended_at": max(ends) if ends else None,
        "analysed_at": float(analysed_at), "baseline_run": baseline_run,
        "measured_on": measured_on(factors, campaign.deployment),
        "scale_model": json.dumps(factors.to_dict(), sort_keys=True) if factors else None,
        "envelope_enforced": joined((m.get("cluster") or {}).get("envelope") for m in manifests),
    }


def spec_differences(base: Any, head: Any, path: str = "") -> list[str]:
    """What changed from one resolved spec to another, one line per leaf: `workload.consumers.processing_ms: 5 ->
    5.5`, `clusters.list[1]: (absent) -> {...}`. Mappings compare key by key, lists item by item."""
    if isinstance(base, Mapping) and isinstance(head, Mapping):
        out: list[str] = []
        for key in sorted(set(base) | set(head), key=str):
            where = f"{path}.{key}" if path else str(key)
            out += spec_differences(base.get(key, _ABSENT), head.get(key, _ABSENT), where)
        return out
    if isinstance(base, list) and isinstance(head, list):
        out = []
        for i in range(max(len(base), len(head))):
            out += spec_differences(base[i] if i < len(base) else _ABSENT, head[i] if i < len(head) else _ABSENT,
                                    f"{path}[{i}]")
        return out
    if base == head:
        return []
    return [f"{path or '(spec)'}: {_show(base)} -> {_show(head)}"]


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    return json.dumps(value, sort_keys=True, default=str)
