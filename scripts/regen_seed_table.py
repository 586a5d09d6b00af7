"""Rewrite README.md's "Seed conclusions from our own runs (generated)" table: every declaration of
sizing/judgement/seeds.py judged by the platform's own code on the run fixtures in tests/fixtures/runs/ (issue 45).

    .venv/bin/python scripts/regen_seed_table.py        (tests/test_seed_fixtures.py fails while it is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.runfixture import load_all
from sizing.judgement import seeds

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def table() -> str:
    runs = load_all(FIXTURES, [key for seed in seeds.SEEDS for key in seed.runs])
    return seeds.markdown(seeds.judge_all(runs), runs)


def main() -> None:
    text = README.read_text()
    head, rest = text.split(seeds.README_START, 1)
    _, tail = rest.split(seeds.README_END, 1)
    README.write_text(f"{head}{seeds.README_START}\n{table()}\n{seeds.README_END}{tail}")
    print(f"rewrote the generated seed verdicts in {README}")


if __name__ == "__main__":
    main()
