"""The broker_series table (TRANSFORM, sizing.contract.records.BROKER_SERIES): per run, node and whole second, the
node's last broker sample in it (a pure DataFrame transform of broker_samples)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sizing.contract import records
from spark_jobs.lib.phase_summary.keys import RUN_COLS, Transform
from spark_jobs.lib.series import cast_to

TRANSFORM = Transform("broker_series", ("broker_samples",))


def broker_series(samples: DataFrame) -> DataFrame:
    """broker_series (sizing.contract.records.BROKER_SERIES): per run, node and whole second, the node's last sample
    in it."""
    figures = [c for c in records.table_columns("broker_series") if c not in (*RUN_COLS, "second", "node", "samples",
                                                                                "mem_share")]
    last = F.max_by(F.struct(*figures), "ts")
    per_second = (samples.groupBy(*RUN_COLS, "node", F.floor("second").cast("int").alias("second"))
                  .agg(F.count(F.lit(1)).cast("int").alias("samples"), last.alias("last")))
    return (per_second.select("*", *(F.col(f"last.{c}").alias(c) for c in figures)).drop("last")
            .withColumn("mem_share", F.try_divide(F.col("mem_used_bytes").cast("double"),
                                                  F.col("mem_limit_bytes").cast("double")))
            .selectExpr(*cast_to("broker_series")))
