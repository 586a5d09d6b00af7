"""Any module is one hop from the README: every module of the packages below is named (in backquotes) in the README's
Layout section, in its package's docstring, or in its package's README. Known answer: the files on disk."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("sizing", "sizing/spec", "adapters", "app", "app/report", "app/report/sections", "loadgen",
            "loadgen/faults", "spark_jobs/jobs", "spark_jobs/lib", "spark_jobs/tools", "plugins/rabbit_sizing",
            "plugins/rabbit_sizing/hooks", "plugins/rabbit_sizing/operators", "plugins/rabbit_sizing/sensors")


def layout_section() -> str:
    readme = (REPO / "README.md").read_text()
    return readme.split("\n## Layout", 1)[1].split("\n## ", 1)[0]


def package_maps(package: Path) -> list[str]:
    init = package / "__init__.py"
    maps = [ast.get_docstring(ast.parse(init.read_text())) or ""]
    if (package / "README.md").exists():
        maps.append((package / "README.md").read_text())
    return maps


def named(module: str, text: str) -> bool:
    return re.search(rf"`[^`\n]*\b{re.escape(module)}(\.py)?\b[^`\n]*`", text) is not None


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_named_on_a_map(package: str) -> None:
    maps = [layout_section(), *package_maps(REPO / package)]
    modules = sorted(p.stem for p in (REPO / package).glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert modules, f"{package} has no modules: the package list is stale"
    unnamed = [m for m in modules if not any(named(m, text) for text in maps)]
    assert not unnamed, f"{package}: {unnamed} named neither in README's Layout, the package docstring nor its README"


def test_every_package_with_modules_is_listed() -> None:
    """A new package gets a map too: every directory of Python modules under the code roots is in PACKAGES."""
    roots = ("sizing", "adapters", "app", "loadgen", "spark_jobs", "plugins")
    found = {str(init.parent.relative_to(REPO)) for root in roots for init in (REPO / root).rglob("__init__.py")
             if any(p.name != "__init__.py" for p in init.parent.glob("*.py"))}
    assert found <= set(PACKAGES), sorted(found - set(PACKAGES))
