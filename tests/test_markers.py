"""`make test-fast` is what it says (tests/README.md): it deselects every marker of a test that needs more than
Python, and a fast test that starts an outside tool fails instead of passing slowly (tests/fixtures/tools.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.fixtures import tools

REPO = Path(__file__).resolve().parents[1]


def test_the_makefiles_fast_target_deselects_exactly_the_markers_the_guard_exempts() -> None:
    recipe = (REPO / "Makefile").read_text().split("\ntest-fast:", 1)[1].split("\n\n", 1)[0]
    expression = re.search(r'-m "([^"]+)"', recipe).group(1)
    assert re.findall(r"not (\w+)", expression) == list(tools.NOT_FAST)
    assert expression == " and ".join(f"not {name}" for name in tools.NOT_FAST)
    registered = {line.split(":")[0].strip(' "') for line in
                  (REPO / "pyproject.toml").read_text().split("markers = [", 1)[1].split("]", 1)[0].splitlines()}
    assert set(tools.NOT_FAST) <= registered


def test_an_unmarked_test_that_starts_an_outside_tool_fails_before_the_tool_runs() -> None:
    with pytest.raises(tools.UnmarkedToolError, match="runs `ruff`: mark it"):
        subprocess.run([str(Path(sys.executable).parent / "ruff"), "--version"], capture_output=True)
    with pytest.raises(tools.UnmarkedToolError, match="`terraform`"):
        subprocess.run(["terraform", "version"], capture_output=True)
    assert subprocess.run(["true"]).returncode == 0  # anything else runs


@pytest.mark.tools
def test_a_marked_test_may_start_one() -> None:
    proc = subprocess.run([str(Path(sys.executable).parent / "ruff"), "--version"], capture_output=True, text=True)
    assert proc.stdout.startswith("ruff ")


def test_tool_names_are_read_from_the_executable_not_its_arguments() -> None:
    assert tools.tool_of(["/opt/bin/terraform", "apply"]) == "terraform"
    assert tools.tool_of("uv pip install x") == "uv"
    assert tools.tool_of(["python", "-m", "ruff"]) is None  # not caught: a known gap, no test does this
    assert tools.tool_of(["git", "ls-files", "terraform"]) is None and tools.tool_of([]) is None


def test_a_test_using_the_moto_server_is_marked_by_its_fixture() -> None:
    added: list[str] = []

    def item(*fixtures: str) -> SimpleNamespace:
        return SimpleNamespace(fixturenames=fixtures, add_marker=lambda mark: added.append((fixtures, mark.name)))

    tools.pytest_collection_modifyitems([item("s3", "s3_endpoint", "tmp_path"), item("tmp_path")])
    assert added == [(("s3", "s3_endpoint", "tmp_path"), "tools")]


def test_every_test_module_is_on_the_readmes_map() -> None:
    """tests/README.md names every test module (a pattern such as `test_spark_*.py` counts). Known answer: the files."""
    import fnmatch

    patterns = re.findall(r"`(test_[^`]*\.py)`", (REPO / "tests" / "README.md").read_text())
    unlisted = [p.name for p in sorted((REPO / "tests").glob("test_*.py"))
                if not any(fnmatch.fnmatch(p.name, pattern) for pattern in patterns)]
    assert not unlisted, f"add to tests/README.md's map: {unlisted}"
