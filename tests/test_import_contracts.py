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


@pytest.mark.tools
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
    ("spark_jobs/jobs/query.py", None, "A Spark job imports no other job"),  # None: append a job import to a job
    ("spark_jobs/lib/leak.py", "import spark_jobs.tools.synthetic\n", "Spark jobs and tools stand on the library"),
    ("sizing/campaign/model.py", "import sizing.campaign.parse\n", "The campaign model's parts build on each other"),
    ("sizing/resources/leak.py", "import sizing.campaign\n", "The core's floors"),  # an import back up a floor
    ("sizing/criteria/leak.py", "import sizing.contract.records\n", "The core's floors"),  # siblings stay apart
    ("app/report/sections/leak.py", "import app.report.build\n", "The report's parts build on each other one way"),
    ("app/report/leak.py", "from sizing.contract.histogram import merge_wire\n", "The apps read the analysis' tables"),
    ("app/leak.py", "import requests\n", "The apps talk HTTP only through adapters"),
    ("loadgen/faults/leak.py", "import boto3\n", "The load generator makes no AWS client"),
    ("sizing/judgement/leak.py", "import sizing.campaign\n", None),  # a harmless import: no contract breaks
])
@pytest.mark.tools
def test_a_forbidden_import_breaks_its_contract(tree_copy: Path, module: str, source: str | None,
                                                contract: str | None) -> None:
    path = tree_copy / module
    original = path.read_text() if path.exists() else None
    path.write_text(original + "\nimport spark_jobs.jobs.analysis  # noqa\n" if source is None else source)
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


@pytest.mark.tools
def test_a_cycle_between_siblings_is_reported(tree_copy: Path) -> None:
    # sizing.planning.plan imports sizing.campaign; make the campaign's model import plan back.
    spec = tree_copy / "sizing" / "campaign" / "model.py"
    original = spec.read_text()
    spec.write_text(original + "\nimport sizing.planning.plan  # noqa\n")
    try:
        proc = lint_imports(tree_copy)
    finally:
        spec.write_text(original)
    assert proc.returncode != 0 and "No cycles are allowed in sizing" in proc.stdout, proc.stdout[-3000:]


def _own_imports(path: Path, package: str) -> list[tuple[str, str]]:
    """Top-level `from <package or its modules> import name` pairs of one file (module, name)."""
    import ast

    tree = ast.parse(path.read_text())
    return [(node.module, alias.name) for node in tree.body if isinstance(node, ast.ImportFrom) and node.module
            and (node.module == package or node.module.startswith(package + ".")) for alias in node.names]


def test_no_module_imports_back_through_its_packages_init() -> None:
    """A package __init__ that imports its own modules (to re-export them) must not be imported back by them: a
    module of the package importing a name from the package itself (not one of its submodules) closes a cycle through
    the __init__ (issue 26: app.report's __init__ and app.report.build imported each other). Checked statically over
    every package of the tree; the rule breaks on a planted cycle."""
    def cycles(root: Path) -> list[str]:
        found = []
        for init in sorted(root.rglob("__init__.py")):
            if "__pycache__" in init.parts or ".venv" in init.parts:
                continue
            package_dir = init.parent
            base = package_dir.relative_to(root)
            package = ".".join(base.parts[1:] if base.parts[0] == "plugins" else base.parts)
            submodules = {p.stem for p in package_dir.glob("*.py") if p.stem != "__init__"} | {
                p.name for p in package_dir.iterdir() if (p / "__init__.py").exists()}
            if not any(module.startswith(package + ".") or name in submodules
                       for module, name in _own_imports(init, package)):
                continue  # the __init__ imports none of its own modules: nothing can come back through it
            for module_path in sorted(package_dir.glob("*.py")):
                if module_path.stem == "__init__":
                    continue
                for module, name in _own_imports(module_path, package):
                    if module == package and name not in submodules:
                        found.append(f"{package}.{module_path.stem} imports {name} from {package}'s __init__")
        return found

    assert cycles(ROOT) == []
    planted = ROOT / "build" / "cycle-tree"
    shutil.rmtree(planted, ignore_errors=True)
    (planted / "pkg").mkdir(parents=True)
    (planted / "pkg" / "__init__.py").write_text("from pkg.core import helper\n")
    (planted / "pkg" / "core.py").write_text("from pkg import VERSION\n\n\ndef helper():\n    return VERSION\n")
    try:
        assert cycles(planted) == ["pkg.core imports VERSION from pkg's __init__"]
    finally:
        shutil.rmtree(planted, ignore_errors=True)
