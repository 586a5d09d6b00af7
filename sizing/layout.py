"""Where everything lives in the object store. Keys only; no I/O.

Partitions are keyed by campaign, config, scenario, run and repeat, never by wall-clock "latest".
Derived tables are partitioned by run as well (issue 24: every run's answer is kept): a per-config table by
campaign, config and run, so that re-running one config of one run overwrites exactly that partition; a
campaign-wide table by campaign and run, recomputed per run.

    raw/campaign=C/config=K/scenario=S/run=R/repeat=N/
        manifest.json                           run metadata (versions, spec hash, config, times, status)
        phases/part-0.parquet                   the timeline as run (records.PHASES)
        client_seconds/phase=PP/worker=W.parquet per-second per-worker records, uploaded phase by phase
        broker_samples/phase=PP/part-0.parquet  broker samples (management API + exact counters)
        events/phase=PP/part-0.parquet          events of that phase (faults, blocks, ...)
        accounting/part-0.parquet               loss / duplicate / reorder accounting, after the drain
    tables/<table>/campaign=C/config=K/run=R/part-*.parquet   per-config tables (phase_summary)
    tables/<table>/campaign=C/run=R/part-*.parquet            campaign-wide tables (leaderboards, ..., runs)
    validation/<batch>/campaign=C/config=K/run=R/result.json   Great Expectations results
    reports/campaign=C/run=R/report.html
    specs/<campaign>-<spec hash>.yaml                   a run's resolved spec: every worker's tasks read it from here
    leases/<target>/slot-N.json                         cluster-slot leases shared by every worker (aws, existing)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_BUCKET = "rabbit-sizing"


@dataclass(frozen=True)
class RunKey:
    campaign: str
    config_id: str
    scenario: str
    run_id: str
    repeat: int = 1

    def as_dict(self) -> dict[str, object]:
        return {"campaign": self.campaign, "config_id": self.config_id, "scenario": self.scenario,
                "run_id": self.run_id, "repeat": self.repeat}


TABLES_ROOT = "tables/"


def _check(part: str, value: str) -> str:
    if not value or "/" in value or "=" in value:
        raise ValueError(f"{part} {value!r} cannot name an object-store partition (empty, '/' or '=')")
    return value


def raw_campaign_prefix(campaign: str) -> str:
    return f"raw/campaign={_check('campaign', campaign)}/"


def raw_config_prefix(campaign: str, config_id: str) -> str:
    return raw_campaign_prefix(campaign) + f"config={_check('config', config_id)}/"


def raw_scenario_run_prefix(campaign: str, config_id: str, scenario: str, run_id: str) -> str:
    """Every repeat of one scenario of one run of a config."""
    return (raw_config_prefix(campaign, config_id)
            + f"scenario={_check('scenario', scenario)}/run={_check('run', run_id)}/")


def raw_run_prefix(key: RunKey) -> str:
    return raw_scenario_run_prefix(key.campaign, key.config_id, key.scenario, key.run_id) + f"repeat={key.repeat}/"


def run_key_of(object_key: str) -> RunKey | None:
    """The RunKey of a raw object (the inverse of raw_run_prefix); None for a key outside a raw run partition."""
    parts = object_key.split("/")
    names = ("campaign", "config", "scenario", "run", "repeat")
    if len(parts) < 7 or parts[0] != "raw":
        return None
    if not all(part.startswith(f"{name}=") for part, name in zip(parts[1:6], names, strict=True)):
        return None
    campaign, config, scenario, run, repeat = (p.split("=", 1)[1] for p in parts[1:6])
    if not repeat.isdigit():
        return None
    return RunKey(campaign, config, scenario, run, int(repeat))


def manifest_key(key: RunKey) -> str:
    return raw_run_prefix(key) + "manifest.json"


def raw_part_key(key: RunKey, record_type: str, phase: int | None = None, worker: int | None = None) -> str:
    base = raw_run_prefix(key) + f"{record_type}/"
    if phase is not None:
        base += f"phase={phase:02d}/"
    return base + (f"worker={worker}.parquet" if worker is not None else "part-0.parquet")


def table_prefix(table: str, campaign: str, config_id: str | None = None, run_id: str | None = None) -> str:
    """A derived table's partition: the campaign's (every config and run under it), a config's (every run of it),
    a run's of a campaign-wide table, or one config of one run. A per-config table's rows of one run across
    configs have no prefix of their own: list the campaign's and keep `of_run`."""
    prefix = f"{TABLES_ROOT}{_check('table', table)}/campaign={_check('campaign', campaign)}/"
    prefix += f"config={_check('config', config_id)}/" if config_id else ""
    return prefix + (f"run={_check('run', run_id)}/" if run_id else "")


def partition_value(key: str, name: str) -> str | None:
    """The value of the `name=` partition a key lies in (`run`, `config`, `campaign`), or None."""
    for part in key.split("/")[:-1]:
        if part.startswith(f"{name}="):
            return part.split("=", 1)[1]
    return None


def of_run(keys: Iterable[str], run_id: str) -> list[str]:
    """The keys that lie in run `run_id`'s partition."""
    return [key for key in keys if partition_value(key, "run") == run_id]


def validation_key(batch: str, campaign: str, config_id: str, run_id: str) -> str:
    return (f"validation/{_check('batch', batch)}/campaign={_check('campaign', campaign)}/"
            f"config={_check('config', config_id)}/run={_check('run', run_id)}/result.json")


def report_key(campaign: str, run_id: str) -> str:
    return f"reports/campaign={_check('campaign', campaign)}/run={_check('run', run_id)}/report.html"


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def spec_key(file_name: str) -> str:
    """The resolved spec a run's tasks share (content-addressed: `<campaign>-<spec hash>.yaml`)."""
    if not file_name.endswith(".yaml") or "/" in file_name:
        raise ValueError(f"a resolved spec is a <campaign>-<hash>.yaml file name, got {file_name!r}")
    return f"specs/{file_name}"


def lease_prefix(target: str) -> str:
    return f"leases/{_check('target', target)}/"


def lease_key(target: str, slot: int) -> str:
    return f"{lease_prefix(target)}slot-{int(slot)}.json"
