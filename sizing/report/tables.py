"""The one place the report reads data (edge module): Spark tables, raw time series, GX results.

Everything the report knows about the analysis tables' column names is in this module. When the
Spark jobs rename a column, change the constants / RENAMES here and nothing else.

Layout (sizing.layout):
    tables/phase_summary/campaign=C/config=K/part-*.parquet   one row per config x scenario x run x repeat x phase
    tables/leaderboards/campaign=C/part-*.parquet             one row per board x rank
    tables/pareto/campaign=C/part-*.parquet                   optional
    raw/campaign=C/config=K/scenario=S/run=R/repeat=N/{client_seconds,events,broker_samples}/phase=PP/*.parquet
    validation/<batch>/campaign=C/config=K/run=R/result.json
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import pandas as pd

from sizing import layout
from sizing.storage import S3Settings

# ----------------------------------------------------------------------------------------- contract

PHASE_SUMMARY = "phase_summary"
LEADERBOARDS = "leaderboards"
PARETO = "pareto"

RUN_KEYS = ["campaign", "config_id", "scenario", "run_id", "repeat"]

# Columns of phase_summary the report relies on (must be present).
PHASE_SUMMARY_REQUIRED = [
    *RUN_KEYS, "phase", "phase_name", "target_rate",
    "achieved_rate",  # confirmed publish rate over the steady (post-warm-up) window, msg/s
    "e2e_p50_ms", "e2e_p75_ms", "e2e_p95_ms", "e2e_p99_ms", "e2e_p999_ms",
]
# Used when present; the report says "n/a" otherwise.
PHASE_SUMMARY_OPTIONAL = {
    "consume_rate": float("nan"),  # deliveries per second over the steady window
    "e2e_max_ms": float("nan"),
    "matched": None,  # achieved the target rate (the analysis decides the tolerance)
    "slo_met": None,  # p99 within the campaign SLO
    "backlog_max": float("nan"),  # largest queue backlog seen in the phase, messages
    "lost": 0, "duplicates": 0, "reordered": 0,
    "recovery_s": float("nan"),  # time from the fault healing to the rate being matched again
    "valid": True,  # False when the load generator itself was the bottleneck (or data was missing)
    "invalid_reason": None,
}

# leaderboards: one row per (board, rank). Board names as the Spark job writes them.
LEADERBOARD_REQUIRED = ["board", "rank", "config_id", "rate", "monthly_cost"]
LEADERBOARD_OPTIONAL = {"cost_per_1000": float("nan"), "scenario": None}
BOARD_TOP_MATCHED = "top_matched_throughput"  # highest intensity whose target was matched
BOARD_TOP = "top_throughput"  # highest achieved rate
BOARD_COST_AT_TOP = "cost_at_top"  # cost per 1000 msg/s per month at the top throughput
BOARD_COST_AT_TARGET = "cost_at_target"  # ... at the campaign target (configs that met target and SLO)
BOARDS = (BOARD_TOP_MATCHED, BOARD_TOP, BOARD_COST_AT_TOP, BOARD_COST_AT_TARGET)

# Renames from names the Spark jobs might use to the names above (applied before the checks).
RENAMES = {
    "phase_summary": {"config": "config_id", "p50_ms": "e2e_p50_ms", "p75_ms": "e2e_p75_ms",
                      "p95_ms": "e2e_p95_ms", "p99_ms": "e2e_p99_ms", "p999_ms": "e2e_p999_ms"},
    "leaderboards": {"config": "config_id", "cost_per_1000_msgs": "cost_per_1000"},
}

CLIENT_SECONDS_COLUMNS = ["repeat", "worker", "second", "phase", "target_rate", "published", "confirmed", "consumed"]
EVENTS_COLUMNS = ["repeat", "second", "phase", "kind", "fault_id", "fault_kind", "node"]
BROKER_COLUMNS = ["repeat", "second", "phase", "node", "running", "mem_used_bytes", "mem_limit_bytes", "mem_alarm",
                  "disk_alarm", "queue_messages"]


class SchemaError(ValueError):
    pass


def conform(df: pd.DataFrame, table: str, required: list[str], optional: dict[str, object]) -> pd.DataFrame:
    """Rename known aliases, fail on missing required columns, add missing optional ones with defaults."""
    df = df.rename(columns={k: v for k, v in RENAMES.get(table, {}).items() if k in df.columns})
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise SchemaError(f"table {table} lacks column(s) {', '.join(missing)} (has: {', '.join(df.columns)})")
    for name, default in optional.items():
        if name not in df.columns:
            df[name] = default
    return df


# --------------------------------------------------------------------------------------------- data


@dataclass
class ValidationResult:
    batch: str
    config_id: str
    run_id: str
    success: bool
    evaluated: int | None
    successful: int | None
    failed: list[str] = field(default_factory=list)
    key: str = ""


@dataclass
class ReportData:
    campaign: str
    phase_summary: pd.DataFrame
    leaderboards: pd.DataFrame
    pareto: pd.DataFrame | None
    # per (config_id, scenario, run_id): raw frames of every repeat, for the time-series charts
    client_seconds: dict[tuple[str, str, str], pd.DataFrame]
    events: dict[tuple[str, str, str], pd.DataFrame]
    broker_samples: dict[tuple[str, str, str], pd.DataFrame]
    validations: list[ValidationResult]


# ------------------------------------------------------------------------------------------ reading


class TableReader:
    """Reads the campaign's tables and raw series from one bucket through boto3 + pyarrow."""

    def __init__(self, settings: S3Settings) -> None:
        self.settings = settings
        self.client = settings.client()

    def keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.settings.bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return sorted(keys)

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.settings.bucket, Key=key)["Body"].read()

    def put(self, key: str, data: bytes, content_type: str) -> None:
        self.client.put_object(Bucket=self.settings.bucket, Key=key, Body=data, ContentType=content_type)

    def parquet(self, prefix: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        frames = []
        for key in self.keys(prefix):
            if not key.endswith(".parquet"):
                continue
            table = pq.read_table(io.BytesIO(self.get(key)))
            if columns is not None:
                table = table.select([c for c in columns if c in table.column_names])
            frames.append(table)
        if not frames:
            return None
        return pa.concat_tables(frames, promote_options="default").to_pandas()

    def read_table(self, table: str, campaign: str, config_id: str | None = None) -> pd.DataFrame | None:
        return self.parquet(layout.table_prefix(table, campaign, config_id))

    def raw(self, campaign: str, config_id: str, scenario: str, run_id: str, record_type: str,
            columns: list[str]) -> pd.DataFrame | None:
        prefix = layout.raw_config_prefix(campaign, config_id) + f"scenario={scenario}/run={run_id}/"
        frames = []
        for key in self.keys(prefix):
            if f"/{record_type}/" in key and key.endswith(".parquet"):
                import pyarrow.parquet as pq

                table = pq.read_table(io.BytesIO(self.get(key)))
                frames.append(table.select([c for c in columns if c in table.column_names]).to_pandas())
        return pd.concat(frames, ignore_index=True) if frames else None

    def validations(self, campaign: str) -> list[ValidationResult]:
        results = []
        for key in self.keys("validation/"):
            parts = dict(p.split("=", 1) for p in key.split("/") if "=" in p)
            if parts.get("campaign") != campaign or not key.endswith(".json"):
                continue
            batch = key.split("/")[1]
            results.append(parse_validation(json.loads(self.get(key)), batch, parts.get("config", ""),
                                            parts.get("run", ""), key))
        return results


def parse_validation(doc: dict, batch: str, config_id: str, run_id: str, key: str = "") -> ValidationResult:
    """A GX 1.x ExpectationSuiteValidationResult (to_json_dict), tolerant of trimmed documents."""
    stats = doc.get("statistics") or {}
    failed = []
    for result in doc.get("results") or []:
        if not result.get("success", True):
            config = result.get("expectation_config") or {}
            kwargs = config.get("kwargs") or {}
            what = config.get("type") or config.get("expectation_type") or "expectation"
            column = kwargs.get("column")
            failed.append(f"{what}({column})" if column else what)
    return ValidationResult(batch, config_id, run_id, bool(doc.get("success", False)),
                            stats.get("evaluated_expectations"), stats.get("successful_expectations"), failed, key)


def load_report_data(settings: S3Settings, campaign: str, config_ids: list[str],
                     time_series_scenarios: list[str]) -> ReportData:
    """Everything the report shows, for the configs of the campaign (missing configs simply have no rows)."""
    reader = TableReader(settings)
    frames = [f for c in config_ids if (f := reader.read_table(PHASE_SUMMARY, campaign, c)) is not None]
    if not frames:
        raise FileNotFoundError(f"no {PHASE_SUMMARY} rows under s3://{settings.bucket}/"
                                f"{layout.table_prefix(PHASE_SUMMARY, campaign)} for configs {', '.join(config_ids)}")
    summary = conform(pd.concat(frames, ignore_index=True), PHASE_SUMMARY, PHASE_SUMMARY_REQUIRED,
                      PHASE_SUMMARY_OPTIONAL)
    boards = reader.read_table(LEADERBOARDS, campaign)
    boards = conform(boards if boards is not None else pd.DataFrame(columns=LEADERBOARD_REQUIRED), LEADERBOARDS,
                     LEADERBOARD_REQUIRED, LEADERBOARD_OPTIONAL)
    pareto = reader.read_table(PARETO, campaign)
    client, events, broker = {}, {}, {}
    runs = summary[["config_id", "scenario", "run_id"]].drop_duplicates().itertuples(index=False)
    for config_id, scenario, run_id in runs:
        key = (config_id, scenario, run_id)
        if scenario in time_series_scenarios:
            client[key] = reader.raw(campaign, config_id, scenario, run_id, "client_seconds", CLIENT_SECONDS_COLUMNS)
            events[key] = reader.raw(campaign, config_id, scenario, run_id, "events", EVENTS_COLUMNS)
        broker[key] = reader.raw(campaign, config_id, scenario, run_id, "broker_samples", BROKER_COLUMNS)
    return ReportData(campaign, summary, boards, pareto, client, events, broker, reader.validations(campaign))
