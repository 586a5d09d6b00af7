"""Rewrite spark_jobs/README.md's "Tables" section from the one schema definition (sizing.contract.records.TABLES).

    .venv/bin/python scripts/regen_tables_doc.py        (tests/test_docs_tables.py fails while it is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizing.contract import records

README = Path(__file__).resolve().parent.parent / "spark_jobs" / "README.md"
START = "Generated from `sizing/contract/records.py` (`python -m sizing.contract.records`)."
END = "Raw views in `sizing query`"


def main() -> None:
    text = README.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    tables = "\n\n".join(f"### {name}\n\n{records.table_markdown(name)}" for name in records.TABLES)
    README.write_text(f"{head}{START}\n\n{tables}\n\n{END}{tail}")
    print(f"rewrote the Tables section of {README}")


if __name__ == "__main__":
    main()
