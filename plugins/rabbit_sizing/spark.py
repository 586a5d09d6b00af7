"""spark-submit arguments of the analysis jobs (spark_jobs/, branch analysis), as SparkSubmitOperator takes them.

Job CLIs (spark_jobs/*.py):
    phase_summary.py --spec S --campaign C --config K --run-id R
    leaderboards.py  --spec S --campaign C
    validate.py      --batch raw|phase_summary|leaderboards --spec S --campaign C [--config K] --run-id R
The jobs' Python modules (sizing/, spark_jobs/) reach the executors as one zip given to --py-files.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rabbit_sizing.planning import REPO_ROOT, state_dir

PACKAGES = ("sizing", "spark_jobs")


def application(job: str) -> str:
    return str(REPO_ROOT / "spark_jobs" / f"{job}.py")


def driver_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The spark-submit process env additions: the repo on PYTHONPATH (what a local master imports)."""
    env = os.environ if env is None else env
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))}


def py_files_path() -> Path:
    return state_dir() / "build" / "sizing_jobs.zip"


def build_py_files(target: Path | None = None, root: Path = REPO_ROOT) -> Path:
    """Zip the packages the jobs import; rewritten only when their content changed."""
    target = target or py_files_path()
    files = sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha256(b"".join(p.relative_to(root).as_posix().encode() + p.read_bytes() for p in files))
    stamp = target.with_suffix(".sha256")
    if target.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            zf.write(path, path.relative_to(root).as_posix())
    tmp.replace(target)
    stamp.write_text(digest.hexdigest())
    return target


def analysis_args(run: Mapping[str, Any], configs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Arguments of every analysis job of one campaign run (per-config lists for the mapped tasks)."""
    base = ["--spec", run["spec_path"], "--campaign", run["campaign"]]
    label = run["run_label"]
    docs = ["--docs-dir", str(state_dir() / "gx_docs")]
    ids = [c["config_id"] for c in configs]
    return {
        "per_config": [{
            "config_id": k,
            "validate_raw": ["--batch", "raw", *base, "--config", k, "--run-id", label, *docs],
            "phase_summary": [*base, "--config", k, "--run-id", label],
            "validate_phase_summary": ["--batch", "phase_summary", *base, "--config", k, "--run-id", label, *docs],
        } for k in ids],
        "leaderboards": base,
        "validate_leaderboards": ["--batch", "leaderboards", *base, "--run-id", label, *docs],
    }
