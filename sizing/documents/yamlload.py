"""Reading a YAML document a user wrote (a campaign, a catalog, an `extends` parent, an inline spec), bounded.

Every file goes through `read_yaml_file` and every text through `load_yaml`, so that each rule below holds for all of
them, before anything else reads the document:

- the file is a readable UTF-8 regular file of at most MAX_BYTES (a directory, a missing or unreadable file is a
  problem line, not an OSError);
- YAML syntax errors name the line and column;
- a key given twice in one mapping is refused (PyYAML keeps the last one without a word);
- nesting is at most MAX_DEPTH levels (PyYAML's composer recurses: thousands of levels end in RecursionError);
- the document expanded (every alias counted as the copy `deep_merge` and the spec hash make of it) has at most
  MAX_NODES nodes, so an alias bomb is refused before it is expanded.

`document_problems` holds the rules for the loaded tree, whatever produced it (a file, or a mapping a test or the
DAG hands to the parser): every number is finite (no field takes `.nan` or `.inf`). Pure apart from reading the
file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sizing.documents.fields import Problem, SpecError, join

MAX_BYTES = 1_000_000  # the largest shipped campaign is ~10 kB
MAX_DEPTH = 32  # the deepest shipped campaign nests 7 levels
MAX_NODES = 100_000  # nodes of the document with every alias expanded


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that tracks the field path of the node it composes, to name it in a depth or duplicate-key error."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._path: list[str | int] = []

    def _where(self) -> str:
        path = ""
        for part in self._path:
            path = join(path, part)
        return path

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        # PyYAML passes a mapping value's key node, a sequence item's position, or None for a key.
        part: str | int | None = index if isinstance(index, int) and not isinstance(index, bool) else (
            str(index.value) if isinstance(index, ScalarNode) else ("<key>" if index is not None else None))
        if part is not None:
            self._path.append(part)
        try:
            if len(self._path) > MAX_DEPTH:
                raise _Refused(self._where(), f"nests deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            node = super().compose_node(parent, index)
            if isinstance(node, MappingNode):
                seen: dict[str, int] = {}
                for key, _value in node.value:
                    if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                        if key.value in seen:
                            raise _Refused(join(self._where(), key.value),
                                           f"is given twice (lines {seen[key.value]} and {key.start_mark.line + 1}); "
                                           f"YAML would keep the last one silently")
                        seen[key.value] = key.start_mark.line + 1
            return node
        finally:
            if part is not None:
                self._path.pop()


class _Refused(yaml.YAMLError):
    def __init__(self, path: str, reason: str, mark: Any = None) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason if mark is None else f"{reason} (line {mark.line + 1})"


def _expanded_size(node: Node, memo: dict[int, int | None]) -> int:
    """Nodes of the document with every alias expanded (an alias is the same Node object composed once)."""
    if id(node) in memo:
        size_so_far = memo[id(node)]
        if size_so_far is None:  # `&a [*a]`: a value that contains itself has no end when expanded
            raise _Refused("", "refers to itself through a YAML alias", node.start_mark)
        return size_so_far
    memo[id(node)] = None
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = min(size, MAX_NODES + 1)
    return min(size, MAX_NODES + 1)


def load_yaml(text: str, source: str) -> Any:
    """The document in `text`, or SpecError (one problem: where, and why) when it breaks a rule above."""
    if len(text) > MAX_BYTES:
        raise SpecError([Problem("", f"is {len(text)} characters long; a spec is at most {MAX_BYTES}")], source)
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise SpecError([Problem("", f"expands to more than {MAX_NODES} values (YAML aliases are copied where "
                                         f"they are used); write the values out, or use fewer aliases")], source)
        return loader.construct_document(node)
    except _Refused as err:
        raise SpecError([Problem(err.path, err.reason)], source) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError([Problem("", f"is not valid YAML{where}: {reason}")], source) from None
    finally:
        loader.dispose()


def read_yaml_file(path: str | Path, what: str = "file") -> Any:
    """Load the YAML file at `path`; SpecError naming the file for anything that stops it being read."""
    path = Path(path)
    source = str(path)
    try:
        if not path.exists():
            raise SpecError([Problem("", f"{what} {source!r} does not exist")], source)
        if not path.is_file():
            raise SpecError([Problem("", f"{what} {source!r} is not a regular file (a directory?)")], source)
        if path.stat().st_size > MAX_BYTES:
            raise SpecError([Problem("", f"is {path.stat().st_size} bytes; a spec is at most {MAX_BYTES}")], source)
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise SpecError([Problem("", f"is not UTF-8 text (byte {err.start})")], source) from None
    except OSError as err:  # permissions, a path through a file, a name too long
        raise SpecError([Problem("", f"cannot be read: {err.strerror or err}")], source) from None
    return load_yaml(text, source)


def document_problems(data: Any, path: str = "") -> list[Problem]:
    """Rules every value of a document obeys, wherever it came from: numbers are finite; the depth is bounded (a
    mapping built in Python skips the loader)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, str, int]] = [(data, path, 0)]
    seen: set[int] = set()
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(Problem(where, f"must be a finite number, got {value}"))
        elif isinstance(value, Mapping | list):
            if depth > MAX_DEPTH:
                problems.append(Problem(where, f"nests deeper than {MAX_DEPTH} levels"))
                continue
            if id(value) in seen:  # the same object twice (an alias): its problems are already listed
                continue
            seen.add(id(value))
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            stack.extend((v, join(where, k if isinstance(value, list) else str(k)), depth + 1) for k, v in items)
    return sorted(problems, key=lambda p: p.path)
