"""Reading campaign files: YAML, `extends:` resolved by deep merge, then `parse_campaign`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sizing.campaign.model import Campaign
from sizing.campaign.parse import parse_campaign
from sizing.documents.fields import Problem, SpecError, deep_merge
from sizing.documents.yamlload import read_yaml_file


def read_campaign_yaml(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a campaign file, resolving `extends: other.yaml` (deep merge; lists are replaced whole)."""
    path = Path(path).resolve()
    if path in _chain:
        raise SpecError([Problem("extends", f"cycle: {' -> '.join(p.name for p in (*_chain, path))}")], str(_chain[-1]))
    data = read_yaml_file(path, "campaign file")
    return resolve_extends(data, path.parent, str(path), _chain=(*_chain, path))


def resolve_extends(data: Any, directory: Path, source: str, _chain: tuple[Path, ...] = ()) -> Any:
    """`data` with its `extends: parent.yaml` (relative to `directory`) merged under it; a parent that is not a
    campaign mapping is refused with its file named."""
    if not isinstance(data, Mapping) or "extends" not in data:
        return data
    parent = data["extends"]
    if not isinstance(parent, str) or not parent.strip() or "\n" in parent or "\0" in parent:
        raise SpecError([Problem("extends", f"must be a file name, got {parent!r}")], source)
    base = read_campaign_yaml(directory / parent, _chain)
    if not isinstance(base, Mapping):
        raise SpecError([Problem("extends", f"names {parent!r}, which holds a {type(base).__name__}, not a campaign "
                                            f"mapping")], source)
    return deep_merge(base, {k: v for k, v in data.items() if k != "extends"})


def load_campaign(path: str | Path) -> Campaign:
    return parse_campaign(read_campaign_yaml(path), source=str(path))
