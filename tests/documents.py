"""Positions in a parsed YAML document, for the tests that mutate shipped campaigns (the property test and the
schema agreement test)."""

from __future__ import annotations

from typing import Any


def paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every position in the document (the root's children and below)."""
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((*path, key))
        out.extend(paths(child, (*path, key)))
    return out


def parent(doc: Any, path: tuple) -> Any:
    """The mapping or list that holds the position `path`."""
    for key in path[:-1]:
        doc = doc[key]
    return doc
