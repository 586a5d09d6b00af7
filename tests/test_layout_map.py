"""Any module is one hop from the README: every module of the packages below is named (in backquotes) in its
package's row of the README's Layout table, in its package's docstring, or in its package's README. A name counts
only as a whole reference to the module (`name`, `name.py`, `dir/name.py`, `package.name`), and only on its own
package's map: `history.py` on the app row does not name sizing/judgement/history.py. Known answer: the files on
disk."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("sizing/documents", "sizing/resources", "sizing/contract", "sizing/criteria", "sizing/campaign",
            "sizing/judgement", "sizing/planning", "adapters", "app", "app/demo", "app/report", "app/report/sections",
            "loadgen", "loadgen/faults", "spark_jobs/jobs", "spark_jobs/lib", "spark_jobs/lib/phase_summary",
            "spark_jobs/tools", "plugins/rabbit_sizing", "plugins/rabbit_sizing/hooks",
            "plugins/rabbit_sizing/operators", "plugins/rabbit_sizing/sensors")


def layout_rows(readme: str) -> dict[str, str]:
    """The README's Layout table: each backquoted path of a row's first cell (no trailing slash) -> the row."""
    section = readme.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 3 and not set(cells[1].strip()) <= set("-"):
            for path in re.findall(r"`([^`]+)`", cells[1]):
                rows[path.rstrip("/")] = line
    return rows


def package_row(package: str, rows: dict[str, str]) -> str:
    """The row of the package, or of its nearest ancestor with one (app/report/sections is on the app row)."""
    parts = package.split("/")
    for end in range(len(parts), 0, -1):
        if "/".join(parts[:end]) in rows:
            return rows["/".join(parts[:end])]
    return ""


def package_maps(package: Path) -> list[str]:
    init = package / "__init__.py"
    maps = [ast.get_docstring(ast.parse(init.read_text())) or ""]
    if (package / "README.md").exists():
        maps.append((package / "README.md").read_text())
    return maps


def named(module: str, text: str) -> bool:
    return any(re.fullmatch(rf"(?:[\w.]*[./])?{re.escape(module)}(?:\.py)?", span)
               for span in re.findall(r"`([^`\n]+)`", text))


def test_a_name_counts_only_as_a_whole_reference_on_its_own_packages_row() -> None:
    readme = "# x\n\n## Layout\n\n| path | what |\n|---|---|\n| `app/` | the CLI (`cli.py`), `python -m search` |\n" \
             "| `sizing/` | rules (`sizing.criteria.rules`), `campaign/model.py` |\n\n## Next\n`history.py`\n"
    rows = layout_rows(readme)
    assert set(rows) == {"app", "sizing"}
    assert named("cli", package_row("app/report/sections", rows)) and not named("cli", package_row("sizing", rows))
    assert named("rules", rows["sizing"]) and named("model", rows["sizing"])
    assert not named("search", rows["app"])  # a command line that mentions a word is no reference to a module
    assert not named("history", package_row("app", rows))  # outside the table
    assert not named("rule", rows["sizing"]) and not named("li", rows["app"])  # whole names only
    assert package_row("loadgen", rows) == ""


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_named_on_a_map(package: str) -> None:
    row = package_row(package, layout_rows((REPO / "README.md").read_text()))
    assert row, f"{package} has no row (nor an ancestor's) in the README's Layout table"
    maps = [row, *package_maps(REPO / package)]
    modules = sorted(p.stem for p in (REPO / package).glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert modules, f"{package} has no modules: the package list is stale"
    unnamed = [m for m in modules if not any(named(m, text) for text in maps)]
    assert not unnamed, f"{package}: {unnamed} named neither on its Layout row, the package docstring nor its README"


def test_every_package_with_modules_is_listed() -> None:
    """A new package gets a map too: every directory of Python modules under the code roots is in PACKAGES."""
    roots = ("sizing", "adapters", "app", "loadgen", "spark_jobs", "plugins")
    found = {str(init.parent.relative_to(REPO)) for root in roots for init in (REPO / root).rglob("__init__.py")
             if any(p.name != "__init__.py" for p in init.parent.glob("*.py"))}
    assert found <= set(PACKAGES), sorted(found - set(PACKAGES))
