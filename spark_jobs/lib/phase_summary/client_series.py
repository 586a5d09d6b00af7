"""The client_series table (TRANSFORM, sizing.contract.records.CLIENT_SERIES) from the client fold's series blocks."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame

from sizing.contract import records
from spark_jobs.lib import series
from spark_jobs.lib.phase_summary.client_fold import block_seconds
from spark_jobs.lib.phase_summary.keys import RUN_COLS, Transform

TRANSFORM = Transform("client_series", ("client_seconds",))


def client_series(blocks: DataFrame) -> DataFrame:
    """The client_series table (sizing.contract.records.CLIENT_SERIES) from the fold's series blocks, run by run."""
    return blocks.groupBy(*RUN_COLS).applyInPandas(_client_series_of_run, records.table_ddl("client_series"))


def _client_series_of_run(blocks: pd.DataFrame) -> pd.DataFrame:
    return series.client_rows(block_seconds(blocks), blocks, RUN_COLS)
