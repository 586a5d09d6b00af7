"""Rewrite BENCHMARKS.md's fidelity table (issue 44 item 4) from the committed run fixtures: every published seed
figure whose config a fixture measured on the scale model, the model's prediction for the cloud and its error
(sizing/judgement/fidelity.py); and the cross-host table: the same configs measured on a second host.

    .venv/bin/python scripts/fidelity_table.py          (tests/test_fidelity.py fails while it is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.runfixture import load_all, rewrite_section
from sizing.judgement import fidelity

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "BENCHMARKS.md"
FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def table() -> str:
    runs = load_all(FIXTURES, fidelity.FIDELITY_RUNS)
    rows = fidelity.fidelity_rows(fidelity.PUBLISHED, fidelity.local_figures(runs.values()))
    return fidelity.markdown(rows, fidelity.summarise(rows))


def cross_host_table(second_runs: tuple = fidelity.SECOND_HOST_RUNS) -> str:
    first = load_all(FIXTURES, fidelity.FIRST_HOST_RUNS)
    second = load_all(FIXTURES, second_runs)
    return fidelity.cross_host_markdown(fidelity.cross_host_rows(fidelity.local_figures(first.values()),
                                                                 fidelity.local_figures(second.values())))


def main() -> None:
    rewrite_section(BENCHMARKS, fidelity.BENCHMARKS_START, fidelity.BENCHMARKS_END, table())
    rewrite_section(BENCHMARKS, fidelity.CROSS_HOST_START, fidelity.CROSS_HOST_END, cross_host_table())
    rewrite_section(BENCHMARKS, fidelity.CROSS_CPU_START, fidelity.CROSS_CPU_END,
                    cross_host_table(fidelity.THIRD_HOST_RUNS))
    print(f"rewrote the generated fidelity and cross-host tables in {BENCHMARKS}")


if __name__ == "__main__":
    main()
