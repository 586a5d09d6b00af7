"""spark_jobs' module structure (pure: reads the source with ast, imports nothing of Spark).

Jobs never import another job; no module hides an import of a spark_jobs module inside a function (the
`if __name__ == "__main__"` re-import of a job's own main is the one allowed exception).
"""

from __future__ import annotations

import ast
from pathlib import Path

from spark_jobs.lib.submit import JOBS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spark_jobs"
SUBPACKAGES = {"spark_jobs", *(f"spark_jobs.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py"))}


def spark_jobs_imports(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("spark_jobs"):
            # `from spark_jobs.jobs import validate` imports the module spark_jobs.jobs.validate
            names = [node.module] if node.module not in SUBPACKAGES else [f"{node.module}.{a.name}" for a in node.names]
            found += [(n, node) for n in names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node) for a in node.names if a.name.startswith("spark_jobs")]
    return found


def test_jobs_import_no_other_job_and_nothing_hides_an_import_in_a_function() -> None:
    jobs = {f"spark_jobs.jobs.{job}" for job in JOBS}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        top_level = {id(n) for n in tree.body}
        main_guard = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        allowed = {id(n) for guard in main_guard for n in ast.walk(guard)}
        for name, node in spark_jobs_imports(tree):
            if id(node) in allowed:
                assert name == module, f"{module}: its __main__ block may only re-import itself, not {name}"
                continue
            assert id(node) in top_level, f"{module}: function-local import of {name} (line {node.lineno})"
            assert not (module in jobs and name in jobs and name != module), f"job {module} imports job {name}"


def test_the_checker_catches_a_job_importing_a_job() -> None:
    tree = ast.parse("def main():\n    from spark_jobs.jobs import validate\n")
    (name, node), = spark_jobs_imports(tree)
    assert name == "spark_jobs.jobs.validate" and id(node) not in {id(n) for n in tree.body}
