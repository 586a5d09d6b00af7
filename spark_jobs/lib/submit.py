"""Build what spark-submit needs for a job: the --py-files zip and the full argument list (no Airflow here).

The orchestration helper's SparkSubmitOperator reuses `py_files_zip()`, `application(job)` and
`job_arguments(...)`; `command(...)` is the complete argv for running a job by hand or from a benchmark.

    python -m spark_jobs.lib.submit analysis -- --spec campaigns/local-quick.yaml --campaign local-quick \
        --config n1-c5.2xlarge-gp2 --run-id R1          # prints the spark-submit command line
"""

from __future__ import annotations

import os
import py_compile
import shlex
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from spark_jobs.lib.settings import PYTHON_MALLOC_ENV, session_conf

REPO = Path(__file__).resolve().parents[2]
JOBS = ("analysis", "validate", "query")
# Every package code on executors imports (the jobs, the core, and adapters.objectstore: the data source reads and
# writes through it). A local master hides a missing one (the checkout is on its PYTHONPATH); a cluster does not:
# tests/test_spark_cluster.py imports every module of the zip in an interpreter that cannot see the checkout.
PACKAGES = ("sizing", "adapters", "spark_jobs")
DEFAULT_ZIP = REPO / "build" / "sizing_jobs.zip"


def py_files_zip(dest: Path = DEFAULT_ZIP, root: Path = REPO) -> Path:
    """Zip the PACKAGES executors import (their .py files, each with its bytecode) for --py-files; rebuilt every
    call. The driver loads the spec and the price catalogs from the checkout (data, not code)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf, tempfile.TemporaryDirectory() as scratch:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                name = path.relative_to(root).as_posix()
                zf.write(path, name)
                zf.write(_bytecode(path, name, Path(scratch)), name + "c")
    tmp.replace(dest)
    return dest


def _bytecode(source: Path, name: str, scratch: Path) -> Path:
    """The module's bytecode as zipimport looks for it (`x.pyc` beside `x.py`), unchecked: the zip is rebuilt with
    its sources. zipimport never writes bytecode, so without it every Python worker compiled every module it
    imported (~4 CPU-s a job); an interpreter of another version ignores it (magic number) and compiles the .py."""
    return Path(py_compile.compile(str(source), cfile=str(scratch / "module.pyc"), dfile=name, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH))


def application(job: str, root: Path = REPO) -> Path:
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    return root / "spark_jobs" / "jobs" / f"{job}.py"


def spark_conf(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """spark_jobs.lib.settings' session settings as --conf (the driver JVM's options only take effect here)."""
    return {**session_conf(), **(extra or {})}


def job_arguments(job: str, *, spec: str, campaign: str, configs: Sequence[str] = (), run_ids: Sequence[str] = (),
                  batch: str | None = None) -> list[str]:
    """The job's own arguments (after the application path)."""
    args = ["--spec", spec, "--campaign", campaign]
    if job == "analysis":
        for config in configs:
            args += ["--config", config]
        for run_id in run_ids:
            args += ["--run-id", run_id]
    elif job == "validate":
        if batch is None:
            raise ValueError("validate needs a batch: raw | phase_summary | leaderboards")
        args = ["--batch", batch, *args]
        if configs:
            args += ["--config", configs[0]]
        args += ["--run-id", run_ids[0] if run_ids else "all"]
    return args


def command(job: str, job_args: Sequence[str], *, master: str = "local[2]", py_files: Path = DEFAULT_ZIP,
            conf: Mapping[str, str] | None = None, driver_memory: str = "2g",
            spark_submit: str | None = None) -> list[str]:
    """Full spark-submit argv. `spark_submit` defaults to the one next to this interpreter (the venv's)."""
    binary = spark_submit or str(Path(sys.executable).parent / "spark-submit")
    argv = [binary, "--master", master, "--name", f"sizing-{job}", "--driver-memory", driver_memory,
            "--py-files", str(py_files)]
    for key, value in spark_conf(conf).items():
        argv += ["--conf", f"{key}={value}"]
    return [*argv, str(application(job)), *job_args]


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for spark-submit: the venv's python for driver and workers; S3 settings pass through."""
    env = dict(os.environ if base is None else base)
    # The driver loads the campaign spec and price catalogs from the checkout (catalogs/ is data, not in the zip).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    for name, value in PYTHON_MALLOC_ENV.items():  # the driver's own reads (GX's frames, node_series) too
        env.setdefault(name, value)
    return env


def run(argv: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), env=environment(env), check=False)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in JOBS:
        print(f"usage: python -m spark_jobs.lib.submit JOB [--run] -- JOB-ARGS...   (JOB: {', '.join(JOBS)})")
        return 2
    job, rest = args[0], args[1:]
    execute = "--run" in rest[: rest.index("--")] if "--" in rest else "--run" in rest
    job_args = rest[rest.index("--") + 1:] if "--" in rest else []
    argv_ = command(job, job_args, py_files=py_files_zip())
    print(shlex.join(argv_))
    return run(argv_).returncode if execute else 0


if __name__ == "__main__":
    sys.exit(main())
