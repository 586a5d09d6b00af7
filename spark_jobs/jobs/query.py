"""`sizing query`: Spark SQL over a campaign's tables and raw records in the object store.

    python -m spark_jobs.jobs.query --campaign local-quick "SELECT config_id, cost_per_1k_at_top FROM leaderboards"

    python -m spark_jobs.jobs.query --campaign local-quick --run-id r2 "SELECT config_id, rank_at_top FROM leaderboards"

Views: phase_summary, client_series, broker_series, node_series, capacity_repeats, leaderboards, pareto, adverse,
capacity, findings, runs (derived tables, sizing.contract.records.TABLES) and client_seconds, accounting, events,
broker_samples, phases (raw records of every config and run of the campaign). Every run's rows are kept (each
table has a `run_id` column); `--run-id R` registers every view with run R's rows only. Only the views a query names
are registered, so a query on the leaderboards never lists the raw objects.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from adapters.objectstore import StoreSpec
from sizing.contract import records
from spark_jobs.lib.session import get_session
from spark_jobs.lib.tableio import read_campaign_raw, read_table


def views_named(sql: str) -> list[str]:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql.lower()))
    return [v for v in (*records.TABLES, *records.RECORD_TYPES) if v in words]


def register_views(spark: SparkSession, spec: StoreSpec, campaign: str, names: Sequence[str],
                   run_id: str | None = None) -> None:
    for name in names:
        if name in records.TABLES:
            df = read_table(spark, spec, name, campaign, run_id=run_id)
        else:
            df = read_campaign_raw(spark, spec, campaign, name)
            df = df.filter(F.col("run_id") == run_id) if run_id else df
        df.createOrReplaceTempView(name)


def render(df: DataFrame, limit: int) -> str:
    """A plain-text table; binary histogram columns are shown by size only."""
    shown = df.select(*[F.concat(F.length(f.name).cast("string"), F.lit(" B")).alias(f.name)
                        if isinstance(f.dataType, BinaryType) else F.col(f.name) for f in df.schema.fields])
    frame = shown.limit(limit + 1).toPandas()
    more = len(frame) > limit
    text = frame.head(limit).to_string(index=False, max_colwidth=40)
    return text + (f"\n... (more than {limit} rows)" if more else f"\n({len(frame)} rows)")


def answer(campaign: str, sql: str, limit: int = 100, run_id: str | None = None) -> str:
    """The query's result as text (raises Spark's AnalysisException / ParseException for a wrong query)."""
    spark = get_session(f"sizing query {campaign}")
    register_views(spark, StoreSpec.from_env(), campaign, views_named(sql), run_id)
    return render(spark.sql(sql), limit)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sizing query", description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--run-id", help="only this run's rows in every view (default: every run's)")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("sql")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print(answer(args.campaign, args.sql, args.limit, args.run_id))
    return 0


if __name__ == "__main__":
    from spark_jobs.jobs.query import main as _main

    sys.exit(_main())
