"""Rewrite campaigns/campaign.schema.json from the spec parser (sizing.spec.schema) and give every shipped campaign
the modeline that points YAML editors at it.

    .venv/bin/python scripts/regen_spec_schema.py        (tests/test_spec_schema.py fails while either is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizing.spec import read_campaign_yaml
from sizing.spec.schema import MODELINE, SCHEMA_FILE, campaign_schema, schema_text

CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"


def shipped() -> list[Path]:
    return sorted(CAMPAIGNS.glob("*.yaml"))


def main() -> None:
    (CAMPAIGNS / SCHEMA_FILE).write_text(schema_text(campaign_schema([read_campaign_yaml(p) for p in shipped()])))
    print(f"rewrote {CAMPAIGNS / SCHEMA_FILE}")
    for path in shipped():
        text = path.read_text()
        if not text.startswith(MODELINE + "\n"):
            path.write_text(f"{MODELINE}\n{text}")
            print(f"added the schema modeline to {path.name}")


if __name__ == "__main__":
    main()
