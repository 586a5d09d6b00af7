"""The README's table schemas are generated from the one definition (sizing.contract.records.TABLES): a column added to
a table without regenerating spark_jobs/README.md ("Tables") fails here."""

from __future__ import annotations

from pathlib import Path

from sizing.contract import records

README = Path(__file__).resolve().parent.parent / "spark_jobs" / "README.md"


def test_spark_jobs_readme_tables_are_generated_from_the_schemas() -> None:
    text = README.read_text()
    for name in records.TABLES:
        block = f"### {name}\n\n{records.table_markdown(name)}\n"
        assert block in text, f"README table {name} is stale: regenerate it with scripts/regen_tables_doc.py"
