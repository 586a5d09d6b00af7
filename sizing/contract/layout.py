"""Where everything lives in the object store. Keys only; no I/O.

Partitions are keyed by campaign, config, scenario, run and repeat, never by wall-clock "latest".
Derived tables are partitioned by run as well (issue 24: every run's answer is kept): a per-config table by
campaign, config and run, so that re-running one config of one run overwrites exactly that partition; a
campaign-wide table by campaign and run, recomputed per run.

    raw/campaign=C/config=K/scenario=S/run=R/repeat=N/...     the generator's records: sizing.contract.raw_layout
    tables/<table>/campaign=C/config=K/run=R/part-*.parquet   per-config tables (phase_summary)
    tables/<table>/campaign=C/run=R/part-*.parquet            campaign-wide tables (leaderboards, ..., runs)
    validation/<batch>/campaign=C/config=K/run=R/result.json   Great Expectations results
    reports/campaign=C/run=R/report.html
    logs/campaign=C/config=K/run=R/<scenario>-r<repeat>.log   a load run's console log (from the worker that ran it)
    specs/<campaign>-<spec hash>.yaml                   a run's resolved spec: every worker's tasks read it from here
    leases/<target>/slot-N.json                         cluster-slot leases shared by every worker (aws, existing)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_BUCKET = "rabbit-sizing"  # the one default; everyone else reads it from here (or SIZING_S3_BUCKET)


class RunRef(NamedTuple):
    """Which run: a campaign's run id, the `run=` partition of every table of it. The one type for it: the fixtures,
    the seed and fidelity declarations, the report's key and `sizing export-run` all name a run by this."""

    campaign: str
    run_id: str

    def __str__(self) -> str:
        return f"{self.campaign}/{self.run_id}"


@dataclass(frozen=True)
class RunKey:
    """One load run: which run (its campaign and run id, a RunRef's), and the config, scenario and repeat in it."""

    campaign: str
    config_id: str
    scenario: str
    run_id: str
    repeat: int = 1

    def as_dict(self) -> dict[str, object]:
        return {"campaign": self.campaign, "config_id": self.config_id, "scenario": self.scenario,
                "run_id": self.run_id, "repeat": self.repeat}


TABLES_ROOT = "tables/"
VALIDATION_ROOT = "validation/"
REPORTS_ROOT = "reports/"
LOGS_ROOT = "logs/"


def checked_part(part: str, value: str) -> str:
    """`value` as one partition's value (campaign=`value`), or a ValueError naming `part`."""
    if not value or "/" in value or "=" in value:
        raise ValueError(f"{part} {value!r} cannot name an object-store partition (empty, '/' or '=')")
    return value


def table_root(table: str) -> str:
    """Every campaign's partitions of a derived table."""
    return f"{TABLES_ROOT}{checked_part('table', table)}/"


def table_prefix(table: str, campaign: str, config_id: str | None = None, run_id: str | None = None) -> str:
    """A derived table's partition: the campaign's (every config and run under it), a config's (every run of it),
    a run's of a campaign-wide table, or one config of one run. A per-config table's rows of one run across
    configs have no prefix of their own: list the campaign's and keep `of_run`."""
    prefix = f"{table_root(table)}campaign={checked_part('campaign', campaign)}/"
    prefix += f"config={checked_part('config', config_id)}/" if config_id else ""
    return prefix + (f"run={checked_part('run', run_id)}/" if run_id else "")


def part_key(prefix: str, tag: str) -> str:
    """One Parquet object of a table partition (`prefix`: table_prefix's); `tag` keeps writers apart."""
    return f"{prefix}part-{checked_part('part', tag)}.parquet"


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
    return (f"{VALIDATION_ROOT}{checked_part('batch', batch)}/campaign={checked_part('campaign', campaign)}/"
            f"config={checked_part('config', config_id)}/run={checked_part('run', run_id)}/result.json")


@dataclass(frozen=True)
class ValidationPartition:
    """Where a validation result lies (validation_key's parts; "" for a partition the key lacks)."""
    batch: str
    campaign: str
    config_id: str
    run_id: str


def validation_of(object_key: str) -> ValidationPartition | None:
    """The partition of a validation result (the inverse of validation_key); None for a key that is not a JSON
    object under a batch of validation/."""
    parts = object_key.split("/")
    if len(parts) < 3 or parts[0] != VALIDATION_ROOT.rstrip("/") or not object_key.endswith(".json"):
        return None
    return ValidationPartition(parts[1], *(partition_value(object_key, name) or ""
                                           for name in ("campaign", "config", "run")))


def report_key(campaign: str, run_id: str) -> str:
    return f"{REPORTS_ROOT}campaign={checked_part('campaign', campaign)}/run={checked_part('run', run_id)}/report.html"


def report_run_of(object_key: str) -> RunRef | None:
    """The run of a key under reports/ that names both its campaign and run; None for any other key."""
    campaign, run = partition_value(object_key, "campaign"), partition_value(object_key, "run")
    if not object_key.startswith(REPORTS_ROOT) or campaign is None or run is None:
        return None
    return RunRef(campaign, run)


def run_log_key(campaign: str, config_id: str, run_id: str, scenario: str, repeat: int) -> str:
    """A load run's console log, beside (not inside) its raw partition: a log is no record the analysis reads."""
    return (f"{LOGS_ROOT}campaign={checked_part('campaign', campaign)}/config={checked_part('config', config_id)}/"
            f"run={checked_part('run', run_id)}/{checked_part('scenario', scenario)}-r{int(repeat)}.log")


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def spec_key(file_name: str) -> str:
    """The resolved spec a run's tasks share (content-addressed: `<campaign>-<spec hash>.yaml`)."""
    if not file_name.endswith(".yaml") or "/" in file_name:
        raise ValueError(f"a resolved spec is a <campaign>-<hash>.yaml file name, got {file_name!r}")
    return f"specs/{file_name}"


def lease_prefix(target: str) -> str:
    return f"leases/{checked_part('target', target)}/"


def lease_key(target: str, slot: int) -> str:
    return f"{lease_prefix(target)}slot-{int(slot)}.json"


def lease_slot_of(object_key: str) -> int | None:
    """The slot a lease object holds (the inverse of lease_key, any target); None for any other key."""
    stem = object_key.rsplit("/", 1)[-1]
    number = stem.removeprefix("slot-").removesuffix(".json")
    if not (stem.startswith("slot-") and stem.endswith(".json") and number.isdigit()):
        return None
    return int(number)
