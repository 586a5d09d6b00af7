"""Load a campaign spec on the driver, also when `sizing` is imported from the --py-files zip.

sizing.resources.catalog finds catalogs/ next to the package, which does not exist inside a zip; the price catalog
is then looked up (in order) at $SIZING_CATALOG_DIR, next to the package, or catalogs/ beside the spec's directory
(the repository layout: campaigns/x.yaml -> catalogs/).
"""

from __future__ import annotations

import os
from pathlib import Path

from sizing.campaign import Campaign, parse_campaign, read_campaign_yaml
from sizing.resources.catalog import CATALOG_DIR, load_catalog


def catalog_path(name: str, spec_path: Path) -> Path | str:
    candidates = [Path(os.environ["SIZING_CATALOG_DIR"])] if os.environ.get("SIZING_CATALOG_DIR") else []
    candidates += [CATALOG_DIR, spec_path.resolve().parent.parent / "catalogs"]
    for directory in candidates:
        if (directory / f"{name}.yaml").exists():
            return directory / f"{name}.yaml"
    return name  # let sizing.resources.catalog report the problem


def load(spec_path: str | Path) -> Campaign:
    path = Path(spec_path)
    data = read_campaign_yaml(path)
    name = data.get("catalog") if isinstance(data, dict) else None
    loaded = load_catalog(catalog_path(name, path)) if isinstance(name, str) else None
    return parse_campaign(data, source=str(path), catalog=loaded)
