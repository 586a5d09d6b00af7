"""The Spark settings of every session here, spark-submitted jobs and in-process sessions alike (one home).

SQL: few shuffle partitions (tables are small per partition), Arrow transfers, UTC, reused Python workers, and
no adaptive execution: AQE plans each shuffle stage only after the previous one finished, which serialised
phase_summary's dozen small stages (measured with C1 at seed scale: 58-60 s instead of 69 s, BENCHMARKS.md).

Driver JVM: a job here is short (tens of seconds) and starts a fresh JVM, so start-up and JIT dominate its CPU:
- `-XX:TieredStopAtLevel=1`: C1 only. C2 spent ~30 CPU-s compiling for a phase_summary run that is over
  before the compiled code pays back (BENCHMARKS.md, "Cutting the fixed costs");
- class-data sharing: an archive of the classes a job loads (~175 MB), mapped instead of loaded, parsed and
  verified from Spark's 280 jars (a no-op spark-submit: 11-13 s without it, 6.5 s with it). Setup builds it with
  `python -m spark_jobs.tools.classarchive` (one phase_summary run on a small synthetic store with
  `-XX:ArchiveClassesAtExit`). It lives in the virtualenv, since it is only valid for those jars; a missing or
  stale archive is ignored by the JVM (it then loads classes as usual).

Python: `spark.pyspark.python` names the interpreter executors run, set explicitly (the driver's own path means
nothing on a worker host): SIZING_SPARK_PYTHON, else this interpreter (a local master, or a standalone cluster on
this host). `spark.pyspark.driver.python` is the submitting interpreter. Secrets: executors get object-store
credentials as `spark.executorEnv.AWS_*` (from a properties file, never the command line, with REDACTION_REGEX:
Spark's default plus `access_key`, so the UI and event logs show neither the key nor its id).

stdlib only at import: the DAG builds its SparkSubmitOperator conf from here at parse time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

JIT = "-XX:TieredStopAtLevel=1"
# Spark 4's default is (?i)secret|password|token|access[.]?key|credential: AWS_ACCESS_KEY_ID would show.
REDACTION_REGEX = "(?i)secret|password|token|access[._]?key|credential"


# glibc malloc of the Python workers (and the submitting driver): blocks up to 32 MiB from the heap, and up to 1 GiB
# of freed heap kept for the next call. By default glibc raises its mmap threshold as it goes and hands freed memory
# back, so a fold's arrays (tens of MB per call) are mapped, unmapped and faulted in again call after call: at 10x seed
# scale one config's client fold took 7.2 s and its read 4.2 s that way, 4.6 s and 1.6 s with these, at the same peak
# RSS (2.1 GB; BENCHMARKS.md "10x seed scale within 2 minutes").
PYTHON_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def executor_python(env: Mapping[str, str] | None = None) -> str:
    """The interpreter of the executors' Python workers (it must have the analysis' dependencies there)."""
    env = os.environ if env is None else env
    return env.get("SIZING_SPARK_PYTHON") or sys.executable


def python_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    return {"spark.pyspark.python": executor_python(env), "spark.pyspark.driver.python": sys.executable}


def session_conf() -> dict[str, str]:
    return {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "true",
        **python_conf(),
        **{f"spark.executorEnv.{name}": value for name, value in PYTHON_MALLOC_ENV.items()},
        # Only where the JVM is started: spark-submit's command line, or an in-process session's first builder.
        "spark.driver.extraJavaOptions": driver_java_options(),
    }


def class_archive(prefix: str | None = None) -> Path:
    """The archive of the virtualenv whose spark-submit runs the jobs (this interpreter's)."""
    return Path(prefix or sys.prefix) / "spark-classes.jsa"


def driver_java_options(archive: Path | None = None) -> str:
    archive = class_archive() if archive is None else archive
    return " ".join([JIT, *([f"-XX:SharedArchiveFile={archive}"] if archive.exists() else [])])
