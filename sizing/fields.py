"""A small reader for nested YAML mappings that collects every problem with its field path.

Validation reports all problems at once ("workload.queues.count: must be > 0, got -3") so that a user
fixes a spec in one round trip, and nothing downstream ever sees a half-valid spec.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.reason}"


class SpecError(ValueError):
    """A spec (campaign or catalog) is malformed. Carries every problem found, each with its field path."""

    def __init__(self, problems: list[Problem], source: str = "spec") -> None:
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source} is invalid ({len(self.problems)} problem(s)):\n{lines}")

    def paths(self) -> list[str]:
        return [p.path for p in self.problems]


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Fields:
    """Typed access to one mapping; every failed access records a Problem and returns None."""

    def __init__(self, data: Any, path: str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        self.seen: set[str] = set()
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            self.fail("", f"must be a mapping, got {_type_name(data)}")
            data = {}
        self.data: Mapping[str, Any] = data

    def fail(self, key: str | int, reason: str) -> None:
        self.problems.append(Problem(join(self.path, key) if key != "" else self.path, reason))

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        self.seen.add(key)
        if key not in self.data:
            if default is _MISSING:
                self.fail(key, "is required")
                return None
            return default
        return self.data[key]

    def sub(self, key: str, required: bool = True) -> Fields:
        value = self.raw(key, _MISSING if required else None)
        return Fields(value, join(self.path, key), self.problems)

    def _typed(self, key: str, default: Any, ok: Callable[[Any], bool], expected: str) -> Any:
        if key not in self.data and default is not _MISSING:
            self.seen.add(key)
            return default
        value = self.raw(key, default)
        if value is None:
            if key in self.data:
                self.fail(key, f"must be {expected}, got null")
            return None
        if not ok(value):
            self.fail(key, f"must be {expected}, got {_type_name(value)} {value!r}")
            return None
        return value

    def str(self, key: str, default: Any = _MISSING, choices: tuple[str, ...] | None = None) -> str | None:
        value = self._typed(key, default, lambda v: isinstance(v, str) and v != "", "a non-empty string")
        if value is not None and key in self.data and choices is not None and value not in choices:
            self.fail(key, f"must be one of {', '.join(choices)}; got {value!r}")
            return None
        return value

    def bool(self, key: str, default: Any = _MISSING) -> bool | None:
        return self._typed(key, default, lambda v: isinstance(v, bool), "true or false")

    def int(self, key: str, default: Any = _MISSING, minimum: int | None = None) -> int | None:
        value = self._typed(key, default, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer")
        return self._at_least(key, value, minimum)

    def number(self, key: str, default: Any = _MISSING, minimum: float | None = None,
               exclusive: bool = False) -> float | None:
        value = self._typed(
            key, default, lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"
        )
        if key not in self.data:
            return value
        if value is not None and exclusive and minimum is not None and value <= minimum:
            self.fail(key, f"must be > {minimum}, got {value}")
            return None
        return self._at_least(key, float(value) if value is not None else None, minimum)

    def _at_least(self, key: str, value: Any, minimum: float | None) -> Any:
        if value is not None and key in self.data and minimum is not None and value < minimum:
            self.fail(key, f"must be >= {minimum}, got {value}")
            return None
        return value

    def list(self, key: str, default: Any = _MISSING, non_empty: bool = True) -> list[Any] | None:
        value = self._typed(key, default, lambda v: isinstance(v, list), "a list")
        if value is not None and key in self.data and non_empty and not value:
            self.fail(key, "must not be empty")
            return None
        return value

    def mapping(self, key: str, default: Any = _MISSING) -> dict[str, Any] | None:
        value = self._typed(key, default, lambda v: isinstance(v, Mapping), "a mapping")
        return dict(value) if value is not None else None

    def done(self) -> None:
        """Unknown keys are errors: a typo like `prefech` must not silently fall back to a default."""
        for key in self.data:
            if key not in self.seen:
                self.fail(key, "is not a known field")


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` on top of `base` (`extends`, a scenario's `workload`): a mapping merges key by key, anything
    else replaces, and an explicit empty mapping (`arguments: {}`) replaces too: it clears what was inherited."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and value and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
