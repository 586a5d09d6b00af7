"""`sizing query`: Spark SQL over a campaign's tables and raw records in the object store.

    python -m spark_jobs.query --campaign local-quick "SELECT config_id, cost_per_1k_at_top FROM leaderboards"

Views: phase_summary, leaderboards, pareto, adverse (derived tables) and client_seconds, accounting,
events, broker_samples, phases (raw records of every config and run of the campaign). Only the views
a query names are registered, so a query on the leaderboards never lists the raw objects.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from adapters.objectstore import StoreSpec
from sizing import layout, records
from spark_jobs import leaderboards
from spark_jobs.s3source import read_objects
from spark_jobs.tables import PHASE_SUMMARY_DDL

TABLES = {"phase_summary": PHASE_SUMMARY_DDL, "leaderboards": leaderboards.LEADERBOARD_DDL,
          "pareto": leaderboards.PARETO_DDL, "adverse": leaderboards.ADVERSE_DDL}


def views_named(sql: str) -> list[str]:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql.lower()))
    return [v for v in (*TABLES, *records.RECORD_TYPES) if v in words]


def register_views(spark: SparkSession, spec: StoreSpec, campaign: str, names: Sequence[str]) -> None:
    for name in names:
        if name in TABLES:
            df = read_objects(spark, spec, [layout.table_prefix(name, campaign)], TABLES[name])
        else:
            df = read_objects(spark, spec, [f"raw/campaign={campaign}/"], records.spark_ddl(name),
                              lambda key, rt=name: f"/{rt}/" in key)
        df.createOrReplaceTempView(name)


def render(df: DataFrame, limit: int) -> str:
    """A plain-text table; binary histogram columns are shown by size only."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    shown = df.select(*[F.concat(F.length(f.name).cast("string"), F.lit(" B")).alias(f.name)
                        if isinstance(f.dataType, BinaryType) else F.col(f.name) for f in df.schema.fields])
    frame = shown.limit(limit + 1).toPandas()
    more = len(frame) > limit
    text = frame.head(limit).to_string(index=False, max_colwidth=40)
    return text + (f"\n... (more than {limit} rows)" if more else f"\n({len(frame)} rows)")


def main(argv: Sequence[str] | None = None) -> int:
    from spark_jobs.session import get_session

    parser = argparse.ArgumentParser(prog="sizing query", description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("sql")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    spark = get_session(f"sizing query {args.campaign}")
    register_views(spark, StoreSpec.from_env(), args.campaign, views_named(args.sql))
    print(render(spark.sql(args.sql), args.limit))
    return 0


if __name__ == "__main__":
    from spark_jobs.query import main as _main

    sys.exit(_main())
