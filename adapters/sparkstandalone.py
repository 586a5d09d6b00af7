"""A Spark standalone cluster on this machine, from the pyspark installation's own launcher (edge module).

    cluster = StandaloneCluster(work_dir, master_port=24550, master_ui_port=24551, worker_ui_port=24552)
    cluster.start()            # master + one worker with `cores` cores; waits until the worker has registered
    cluster.master_url         # spark://127.0.0.1:24550: what a `spark` Airflow connection names
    cluster.applications()     # the master's record of running and finished applications (its JSON endpoint)
    cluster.stop()

`spark-class org.apache.spark.deploy.master.Master` and `...deploy.worker.Worker`, as on any cluster host. Both run
in a clean environment (PATH of the system only, HOME and working directory under `work_dir`, no PYTHONPATH, no
AWS_* variables) and the worker's executors inherit it: whatever the executors' Python imports must come with the
job (spark_jobs.submit.PACKAGES as --py-files), and their object-store credentials too. `python` is the executors'
interpreter (pass it as `spark.pyspark.python`): the analysis' libraries of this environment, not the project, as
on a cluster host; `python_can_import()` shows that it cannot see the checkout. Used by tests/test_spark_cluster.py,
the Celery end-to-end test and benchmarks/analysis_scale.py (--master standalone); no pyspark import here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sysconfig
import time
import urllib.request
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.procs import pid_alive, stop_process_group

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The pyspark installation: its bin/spark-class, jars/ and python/lib/ (what a Spark distribution has)."""
    found = importlib.util.find_spec("pyspark")
    if found is None or not found.submodule_search_locations:
        raise RuntimeError("pyspark is not installed in this interpreter")
    return Path(next(iter(found.submodule_search_locations)))


@dataclass
class StandaloneCluster:
    work_dir: Path
    master_port: int
    master_ui_port: int
    worker_ui_port: int
    cores: int = 2
    memory: str = "3g"  # what the worker offers its executors
    host: str = "127.0.0.1"
    daemon_memory: str = "256m"  # the master's and the worker's own JVM heaps
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def master_ui(self) -> str:
        return f"http://{self.host}:{self.master_ui_port}"

    @property
    def log_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def worker_dir(self) -> Path:
        return self.work_dir / "worker"  # executors' working directories (their stdout/stderr too)

    @property
    def python(self) -> str:
        """The executors' interpreter (made by start)."""
        return str(self.work_dir / "python" / "bin" / "python")

    def _make_executor_python(self) -> None:
        """A virtualenv of the base interpreter that sees this environment's site-packages as a plain path. The
        libraries (pyspark, pyarrow, boto3, ...) import; the project's editable install does not, because .pth files
        are run only in site directories, not in paths that a .pth file adds."""
        root = self.work_dir / "python"
        venv.create(root, with_pip=False, clear=True)
        site = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
        (site / "analysis-libraries.pth").write_text(sysconfig.get_path("purelib") + "\n")

    def environment(self) -> dict[str, str]:
        """The daemons' (and so the executors') whole environment: nothing of the submitting user's."""
        home = self.work_dir / "home"
        java = shutil.which("java")
        path = ["/usr/local/bin", "/usr/bin", "/bin"]
        if java:
            path.insert(0, str(Path(os.path.realpath(java)).parent))
        env = {"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8",
               "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host, "SPARK_LOG_DIR": str(self.log_dir),
               "SPARK_WORKER_DIR": str(self.worker_dir), "SPARK_DAEMON_MEMORY": self.daemon_memory,
               "SPARK_NO_DAEMONIZE": "1"}
        if os.environ.get("JAVA_HOME"):
            env["JAVA_HOME"] = os.environ["JAVA_HOME"]
        return env

    def _launch(self, name: str, argv: list[str]) -> int:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        cwd = self.work_dir / name
        cwd.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(argv, cwd=cwd, env=self.environment(), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.pids[name] = proc.pid
        return proc.pid

    def start(self, timeout_s: float = 90.0) -> StandaloneCluster:
        """Master, then one worker; returns once the master lists the worker ALIVE with its cores."""
        (self.work_dir / "home").mkdir(parents=True, exist_ok=True)
        self.worker_dir.mkdir(parents=True, exist_ok=True)
        self._make_executor_python()
        spark_class = str(spark_home() / "bin" / "spark-class")
        self._launch("master", [spark_class, MASTER_CLASS, "--host", self.host, "--port", str(self.master_port),
                                "--webui-port", str(self.master_ui_port)])
        self._launch("worker", [spark_class, WORKER_CLASS, self.master_url, "--host", self.host,
                                "--cores", str(self.cores), "--memory", self.memory,
                                "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.worker_dir)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, pid in self.pids.items():
                if not pid_alive(pid):
                    self.stop()
                    raise RuntimeError(f"spark {name} exited while starting; see {self.log_dir / (name + '.out')}")
            state = self.state()
            if state and any(w.get("state") == "ALIVE" and w.get("cores") == self.cores for w in state["workers"]):
                return self
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"no ALIVE worker registered at {self.master_url} within {timeout_s:.0f}s; "
                           f"see {self.log_dir}")

    def state(self) -> dict[str, Any] | None:
        """The master's JSON status (workers, active and completed applications), None while it is not up."""
        try:
            with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=3) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def applications(self) -> list[dict[str, Any]]:
        state = self.state() or {}
        return [*state.get("activeapps", []), *state.get("completedapps", [])]

    def python_can_import(self, python: str, module: str) -> bool:
        """Whether `python`, started as an executor would be (this environment, a working directory of the
        worker's), can import `module`."""
        probe = self.worker_dir / "probe"
        probe.mkdir(parents=True, exist_ok=True)
        result = subprocess.run([python, "-c", f"import {module}"], cwd=probe, env=self.environment(),
                                capture_output=True, timeout=60)
        return result.returncode == 0

    def stop(self) -> None:
        """Worker first (its executors go with its process group), then the master."""
        for name in ("worker", "master"):
            pid = self.pids.pop(name, None)
            if pid:
                stop_process_group(pid, grace_s=15)
