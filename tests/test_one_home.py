"""One declaration per schema and per list (issue 47, item 3): each is declared in one home, and every other place
derives it or imports it. Pure: reads the source, imports Spark's modules without a session."""

from __future__ import annotations

import re
from pathlib import Path

from sizing import records

ROOT = Path(__file__).resolve().parent.parent


def sources(*packages: str) -> dict[str, str]:
    """Path (relative to the repository) -> text of every Python module of these packages."""
    return {str(path.relative_to(ROOT)): path.read_text() for package in packages
            for path in sorted((ROOT / package).rglob("*.py"))}


def test_the_run_key_ddl_is_derived_from_the_run_key_columns_and_spelled_nowhere() -> None:
    from spark_jobs.lib import phase_summary

    assert records.columns_ddl(records.RUN_KEY) == phase_summary.RUN_KEY_DDL
    assert [c.name for c in records.RUN_KEY] == ["campaign", "config_id", "scenario", "run_id", "repeat"]
    # A DDL string that types the run key by hand (`campaign STRING, ...`) re-declares it.
    by_hand = re.compile(r"\bcampaign`?\s+STRING\b")
    spelled = {path: match.group(0) for path, text in sources("spark_jobs", "sizing", "app").items()
               for match in [by_hand.search(text)] if match}
    assert spelled == {}
