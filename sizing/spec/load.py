"""Reading campaign files: YAML, `extends:` resolved by deep merge, then `parse_campaign`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sizing.fields import Problem, SpecError, deep_merge
from sizing.spec.model import Campaign
from sizing.spec.parse import parse_campaign


def read_campaign_yaml(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a campaign file, resolving `extends: other.yaml` (deep merge; lists are replaced whole)."""
    path = Path(path).resolve()
    if not path.exists():
        raise SpecError([Problem("", f"campaign file {str(path)!r} does not exist")], str(path))
    if path in _chain:
        raise SpecError([Problem("extends", f"cycle: {' -> '.join(p.name for p in (*_chain, path))}")], str(path))
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpecError([Problem("", f"is not valid YAML: {err}")], str(path)) from err
    if isinstance(data, Mapping) and "extends" in data:
        parent = data["extends"]
        if not isinstance(parent, str):
            raise SpecError([Problem("extends", f"must be a file name, got {parent!r}")], str(path))
        base = read_campaign_yaml(path.parent / parent, (*_chain, path))
        data = deep_merge(base, {k: v for k, v in data.items() if k != "extends"})
    return data


def load_campaign(path: str | Path) -> Campaign:
    return parse_campaign(read_campaign_yaml(path), source=str(path))
