"""The run_events table (TRANSFORM, sizing.contract.records.RUN_EVENTS): the run's raw events as a table, each column
cast to the table's type (a pure DataFrame transform of events)."""

from __future__ import annotations

from pyspark.sql import DataFrame

from spark_jobs.lib.phase_summary.keys import Transform
from spark_jobs.lib.series import cast_to

TRANSFORM = Transform("run_events", ("events",))


def run_events(events: DataFrame) -> DataFrame:
    """run_events: exactly the table's columns and types, in order, of the raw events."""
    return events.selectExpr(*cast_to("run_events"))
