"""Print the fidelity table (issue 44 item 4) from the committed run fixtures: every published seed figure whose
config a fixture measured on the scale model, the model's prediction for the cloud and its error (sizing/fidelity.py).

    .venv/bin/python scripts/fidelity_table.py          # markdown, as BENCHMARKS.md "Fidelity" shows it
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.runfixture import load_all
from sizing import fidelity

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs"


def main() -> None:
    runs = load_all(FIXTURES, fidelity.FIDELITY_RUNS)
    rows = fidelity.fidelity_rows(fidelity.PUBLISHED, fidelity.local_figures(runs.values()))
    print(fidelity.markdown(rows, fidelity.summarise(rows)))


if __name__ == "__main__":
    main()
