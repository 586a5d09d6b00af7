"""One way to get a SparkSession for the jobs, the query CLI and the tests."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from spark_jobs.lib import s3source
from spark_jobs.lib.settings import session_conf


def get_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The session spark-submit gave us (its --master wins), or a local one when run as plain python."""
    # Python workers must run the interpreter that has pyarrow/boto3 (the venv), not whatever python3 is first.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master or not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(master or os.environ.get("SIZING_SPARK_MASTER", "local[2]"))
    for key, value in {**session_conf(), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    s3source.register(spark)
    return spark
