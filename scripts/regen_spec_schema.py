"""Rewrite campaigns/campaign.schema.json and the README's field reference ("Campaign spec") from the spec parser
(sizing.campaign.schema), and give every shipped campaign the modeline that points YAML editors at it.

    .venv/bin/python scripts/regen_spec_schema.py        (tests/test_spec_schema.py fails while either is stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizing.campaign import read_campaign_yaml
from sizing.campaign.schema import (
    MODELINE,
    REFERENCE_END,
    REFERENCE_START,
    SCHEMA_FILE,
    campaign_schema,
    reference_markdown,
    schema_text,
)

CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"
README = CAMPAIGNS.parent / "README.md"
PLACEHOLDER = "REFERENCE_PLACEHOLDER"  # where a README without the section gets it


def shipped() -> list[Path]:
    return sorted(CAMPAIGNS.glob("*.yaml"))


def main() -> None:
    documents = [read_campaign_yaml(p) for p in shipped()]
    (CAMPAIGNS / SCHEMA_FILE).write_text(schema_text(campaign_schema(documents)))
    print(f"rewrote {CAMPAIGNS / SCHEMA_FILE}")
    text = README.read_text()
    block = f"{REFERENCE_START}\n\n{reference_markdown(documents)}\n\n{REFERENCE_END}"
    if PLACEHOLDER in text:
        text = text.replace(PLACEHOLDER, block)
    else:
        head, rest = text.split(REFERENCE_START, 1)
        text = head + block + rest.split(REFERENCE_END, 1)[1]
    README.write_text(text)
    print(f"rewrote the field reference in {README}")
    for path in shipped():
        text = path.read_text()
        if not text.startswith(MODELINE + "\n"):
            path.write_text(f"{MODELINE}\n{text}")
            print(f"added the schema modeline to {path.name}")


if __name__ == "__main__":
    main()
