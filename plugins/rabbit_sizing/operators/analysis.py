"""The analysis task: the Spark provider's SparkSubmitOperator, with everything the job needs made by this task.

With several Airflow workers, the task before this one may have run on another host, so nothing it left on its
disk can be used here. This task, on whatever worker runs it:
- loads the run's resolved spec on this worker (adapters.planning.spec_on_this_worker),
- builds the --py-files zip of every package executors import (spark_jobs.lib.submit.PACKAGES),
- names the executors' interpreter (`spark.pyspark.python`; spark_jobs.lib.settings.executor_python),
- for a master that is not local, writes the object-store credentials as `spark.executorEnv.*` into a
  properties file readable by this user only, passed with --properties-file and deleted after the submit,
then submits through the Spark connection (local[2] in the demo; `spark://host:7077`, YARN or k8s elsewhere).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator


class AnalysisSubmitOperator(SparkSubmitOperator):
    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "run", "configs")

    def __init__(self, *, run: Any, configs: Any, **kwargs) -> None:
        from rabbit_sizing.spark import application

        kwargs.setdefault("application", application("analysis"))
        kwargs.setdefault("name", "analysis")
        super().__init__(**kwargs)
        self.run = run
        self.configs = configs

    def master(self) -> str:
        """The master the provider's hook makes of the connection (`local[2]`, `spark://host:7077`, ...)."""
        return str(self._get_hook()._connection["master"])

    def execute(self, context) -> None:
        from rabbit_sizing.spark import (
            analysis_args,
            build_py_files,
            executor_env,
            is_local_master,
            write_executor_properties,
        )
        from spark_jobs.lib.settings import python_conf

        master = self.master()
        with tempfile.TemporaryDirectory(prefix="sizing-analysis-") as tmp:
            self.application_args = analysis_args(self.run, list(self.configs or []))
            self.py_files = str(build_py_files(Path(tmp)))
            self.conf = {**(self.conf or {}), **python_conf()}
            if not is_local_master(master):  # local Python workers inherit this process's environment
                self.properties_file = str(write_executor_properties(Path(tmp), executor_env()))
            self.log.info("spark master %s: py-files %s (%s), executors run %s%s", master, Path(self.py_files).name,
                          "built for this submit", self.conf["spark.pyspark.python"],
                          "" if is_local_master(master) else "; object-store credentials in a properties file")
            self._hook = None  # built from the values above
            return super().execute(context)
