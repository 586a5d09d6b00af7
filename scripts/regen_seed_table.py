"""Rewrite README.md's "Seed conclusions from our own runs (generated)" table: every declaration of
sizing/judgement/seeds.py judged by the platform's own code on the run fixtures in tests/fixtures/runs/ (issue 45).

    .venv/bin/python scripts/regen_seed_table.py        (tests/test_seed_fixtures.py fails while it is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.runfixture import load_all, rewrite_section
from sizing.judgement import seeds

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def table() -> str:
    runs = load_all(FIXTURES, [key for seed in seeds.SEEDS for key in seed.runs])
    return seeds.markdown(seeds.judge_all(runs), runs)


def main() -> None:
    rewrite_section(README, seeds.README_START, seeds.README_END, table())
    print(f"rewrote the generated seed verdicts in {README}")


if __name__ == "__main__":
    main()
