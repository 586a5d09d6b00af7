"""Where the load generator's raw records live in the object store (keys only; no I/O): what the generator and
its upload write and the analysis reads. The apps (`app`) never read it: they read the analysis' tables
(sizing.contract.layout; an import contract keeps it so, issue 35).

    raw/campaign=C/config=K/scenario=S/run=R/repeat=N/
        manifest.json                           run metadata (versions, spec hash, config, times, status)
        phases/part-0.parquet                   the timeline as run (records.PHASES)
        client_seconds/phase=PP/worker=W.parquet per-second per-worker records, uploaded phase by phase
        broker_samples/phase=PP/part-0.parquet  broker samples (management API + exact counters)
        node_seconds/phase=PP/part-0.parquet    each node's resources per second
        events/phase=PP/part-0.parquet          events of that phase (faults, blocks, ...)
        accounting/part-0.parquet               loss / duplicate / reorder accounting, after the drain
"""

from __future__ import annotations

from sizing.contract.layout import RunKey, checked_part

RAW_ROOT = "raw/"
MANIFEST = "manifest.json"


def raw_campaign_prefix(campaign: str) -> str:
    return f"{RAW_ROOT}campaign={checked_part('campaign', campaign)}/"


def raw_config_prefix(campaign: str, config_id: str) -> str:
    return raw_campaign_prefix(campaign) + f"config={checked_part('config', config_id)}/"


def raw_scenario_run_prefix(campaign: str, config_id: str, scenario: str, run_id: str) -> str:
    """Every repeat of one scenario of one run of a config."""
    return (raw_config_prefix(campaign, config_id)
            + f"scenario={checked_part('scenario', scenario)}/run={checked_part('run', run_id)}/")


def raw_run_prefix(key: RunKey) -> str:
    return raw_scenario_run_prefix(key.campaign, key.config_id, key.scenario, key.run_id) + f"repeat={key.repeat}/"


def run_key_of(object_key: str) -> RunKey | None:
    """The RunKey of a raw object (the inverse of raw_run_prefix); None for a key outside a raw run partition."""
    parts = object_key.split("/")
    names = ("campaign", "config", "scenario", "run", "repeat")
    if len(parts) < 7 or parts[0] != RAW_ROOT.rstrip("/"):
        return None
    if not all(part.startswith(f"{name}=") for part, name in zip(parts[1:6], names, strict=True)):
        return None
    campaign, config, scenario, run, repeat = (p.split("=", 1)[1] for p in parts[1:6])
    if not repeat.isdigit():
        return None
    return RunKey(campaign, config, scenario, run, int(repeat))


def manifest_key(key: RunKey) -> str:
    return raw_run_prefix(key) + MANIFEST


def is_manifest(object_key: str) -> bool:
    """Whether a key is a load run's manifest (manifest_key of the run it lies in)."""
    key = run_key_of(object_key)
    return key is not None and object_key == manifest_key(key)


def record_type_of(object_key: str) -> str | None:
    """The record type of a raw object (`client_seconds`, `events`, ...: raw_part_key's), None for any other key.
    Checks the root and the `repeat=` level only, not every partition as run_key_of does: the jobs ask it of
    every listed object once per record type (100k keys: 0.1 s this way, 1.2 s through run_key_of)."""
    parts = object_key.split("/", 7)
    if len(parts) < 8 or parts[0] != RAW_ROOT[:-1] or not parts[5].startswith("repeat="):
        return None
    return parts[6]


def raw_part_key(key: RunKey, record_type: str, phase: int | None = None, worker: int | None = None) -> str:
    base = raw_run_prefix(key) + f"{record_type}/"
    if phase is not None:
        base += f"phase={phase:02d}/"
    return base + (f"worker={worker}.parquet" if worker is not None else "part-0.parquet")
