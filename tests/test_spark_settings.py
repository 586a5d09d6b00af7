"""spark_jobs.lib.settings: the driver JVM's options reach the JVM, and the class archive is named only when it
exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.lib import settings, submit


def test_the_archive_is_named_only_when_it_exists(tmp_path: Path):
    archive = tmp_path / "spark-classes.jsa"
    assert settings.driver_java_options(archive) == settings.JIT
    archive.write_bytes(b"")
    assert settings.driver_java_options(archive) == f"{settings.JIT} -XX:SharedArchiveFile={archive}"


def test_spark_submit_gets_the_session_settings_and_a_job_may_override_them():
    argv = submit.command("analysis", [], conf={"spark.sql.shuffle.partitions": "4"})
    confs = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--conf")
    assert confs["spark.driver.extraJavaOptions"] == settings.driver_java_options()
    assert confs["spark.sql.adaptive.enabled"] == "false" and confs["spark.sql.shuffle.partitions"] == "4"


@pytest.mark.spark
def test_an_in_process_session_runs_its_jvm_with_those_options(spark):
    # Independent counter: the JVM's own record of its command-line flags (RuntimeMXBean), not Spark's conf.
    jvm = spark.sparkContext._jvm
    flags = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert settings.JIT in flags
    archive = settings.class_archive()
    assert (f"-XX:SharedArchiveFile={archive}" in flags) == archive.exists()
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
