"""The layering holds (the same check as `make lint`): import-linter's contracts in pyproject.toml.

The known answer for "the contracts can fail": a copy of the tree with one forbidden import added
(the core importing boto3, a job importing another job, a cycle) is reported broken, naming the import.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sizing", "adapters", "app", "loadgen", "spark_jobs", "plugins", "dags")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).parent / "lint-imports"
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": f"{tree}:{tree}/plugins"}
    return subprocess.run([str(lint), "--no-cache", "--config", str(tree / "pyproject.toml")], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_its_import_contracts() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert proc.stdout.split("Contracts:")[-1].splitlines()[0].strip().endswith(" 0 broken.")


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


@pytest.mark.parametrize("module, source, contract", [
    ("sizing/leak.py", "import boto3\n", "The core (sizing) does no I/O"),
    ("sizing/leak.py", "from adapters import objectstore\n", "The core (sizing) does no I/O"),
    ("loadgen/leak.py", "import airflow\n", "No Airflow outside dags/ and plugins/"),
    ("adapters/leak.py", "import app.cli\n", "Adapters wrap outside systems"),
    ("spark_jobs/query.py", None, "A Spark job imports no other job"),  # None: append a job import to a job
    ("sizing/leak.py", "import sizing.spec\n", None),  # a harmless import: no contract breaks
])
def test_a_forbidden_import_breaks_its_contract(tree_copy: Path, module: str, source: str | None,
                                                contract: str | None) -> None:
    path = tree_copy / module
    original = path.read_text() if path.exists() else None
    path.write_text(original + "\nimport spark_jobs.analysis  # noqa\n" if source is None else source)
    try:
        proc = lint_imports(tree_copy)
    finally:
        path.write_text(original) if original is not None else path.unlink()
    if contract is None:
        assert proc.returncode == 0, proc.stdout[-3000:]
        return
    assert proc.returncode != 0
    broken = proc.stdout.split("Broken contracts")[-1]
    assert contract in broken and module.replace("/", ".").removesuffix(".py") in broken, broken[-3000:]


def test_a_cycle_between_siblings_is_reported(tree_copy: Path) -> None:
    # sizing.plan imports sizing.spec; make spec import plan back.
    spec = tree_copy / "sizing" / "spec.py"
    original = spec.read_text()
    spec.write_text(original + "\nimport sizing.plan  # noqa\n")
    try:
        proc = lint_imports(tree_copy)
    finally:
        spec.write_text(original)
    assert proc.returncode != 0 and "No cycles are allowed in sizing" in proc.stdout, proc.stdout[-3000:]
