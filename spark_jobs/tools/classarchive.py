"""Build the driver JVM's class-data-sharing archive (spark_jobs.lib.settings.class_archive); setup runs it.

    python -m spark_jobs.tools.classarchive

Runs the analysis job once on a one-config synthetic store with -XX:ArchiveClassesAtExit (about a minute): the
classes that run loads are what every job loads. Exit 1 (and the jobs start without an archive) if that run fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from adapters.objectstore import StoreSpec
from spark_jobs.lib import submit
from spark_jobs.lib.settings import JIT, class_archive
from spark_jobs.tools.synthetic import campaign_models, run_objects, write_objects


def build_archive(archive: Path | None = None) -> Path:
    """Run the analysis job on a one-config synthetic store with -XX:ArchiveClassesAtExit; replace the archive."""
    archive = class_archive() if archive is None else archive
    spec = submit.REPO / "campaigns" / "quorum-sizing-2020.yaml"
    work = Path(tempfile.mkdtemp(prefix="spark_classes_"))
    try:
        env = {**os.environ, "SIZING_STORE_ROOT": str(work / "store")}
        model = campaign_models(str(spec), "archive", "increasing-intensity", 10, 2)[0]
        write_objects(StoreSpec.from_env(env).open(), run_objects(model))
        args = submit.job_arguments("analysis", spec=str(spec), campaign=model.key.campaign,
                                    configs=[model.key.config_id], run_ids=["archive"])
        dump = work / "classes.jsa"
        java_options = f"{JIT} -XX:ArchiveClassesAtExit={dump}"
        argv = submit.command("analysis", args, py_files=submit.py_files_zip(work / "jobs.zip"),
                              conf={"spark.driver.extraJavaOptions": java_options})
        result = subprocess.run(argv, env=submit.environment(env), capture_output=True, text=True, check=False)
        if result.returncode != 0 or not dump.exists():
            raise RuntimeError(f"analysis exited {result.returncode} without an archive:\n{result.stderr[-2000:]}")
        archive.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(dump, archive)
        return archive
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    start = time.monotonic()
    try:
        archive = build_archive()
    except (RuntimeError, OSError) as exc:  # an optimisation: the jobs run without it
        print(f"spark class archive not built (jobs start without it): {exc}", file=sys.stderr)
        return 1
    print(f"spark class archive: {archive} ({archive.stat().st_size / 1e6:.0f} MB, "
          f"{time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
