"""A small reader for nested YAML mappings that collects every problem with its field path.

Validation reports all problems at once ("workload.queues.count: must be > 0, got -3") so that a user
fixes a spec in one round trip, and nothing downstream ever sees a half-valid spec.
"""

from __future__ import annotations

import contextlib
import copy
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
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


# Upper bounds every number and string has unless its field sets its own: far above anything a campaign could run,
# low enough that what is computed from them (costs, durations, a search's ladder, trials) stays small and finite.
MAX_INT = 2**53  # the largest integer a float (JSON, Parquet doubles, cost arithmetic) holds exactly
MAX_NUMBER = 1e15
MAX_STR = 256  # identifiers, names, values; `text=True` fields (descriptions) take MAX_TEXT
MAX_TEXT = 4096
# Domain bounds shared by several fields (a field with a bound of its own states it where it is read).
MAX_PORT = 65535
MAX_COUNT = 100_000  # queues, publishers, consumers of one workload
MAX_RATE = 10_000_000.0  # msg/s: ten times the fastest RabbitMQ cluster benchmark published
MAX_DURATION_S = 7 * 86400.0  # one phase, step, probe or delay
MAX_REPEATS = 100
# Names that become S3 partitions, record rows and config ids: ASCII letters, digits, '-' and '_'.
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _got(value: Any) -> str:
    """A wrong value as a message shows it: its type and (short) repr."""
    return "null" if value is None else f"{type(value).__name__} {repr(value)[:80]}"


def is_number(value: Any) -> bool:
    """An int or a float that is not a bool (YAML's `true` is an int to Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def number_problem(value: Any, minimum: float | None = None, maximum: float = MAX_NUMBER, integer: bool = False,
                   exclusive: bool = False) -> str | None:
    """Why `value` is not a number in bounds (None: it is). The one check behind every number of a spec: finite,
    an integer where one is asked for, at least `minimum` (above it when `exclusive`), at most `maximum`."""
    if integer and not (isinstance(value, int) and not isinstance(value, bool)):
        return f"must be an integer, got {_got(value)}"
    if not is_number(value):
        return f"must be a number, got {_got(value)}"
    if not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        return f"must be {'>' if exclusive else '>='} {_show(minimum)}, got {_show(value)}"
    if value > maximum:
        return f"must be <= {_show(maximum)}, got {_show(value)}"
    return None


def _show(value: float) -> str:
    """A bound or a value as written: integers in full (`65535`, not `65535.0`), other numbers short."""
    if isinstance(value, int):
        return str(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e18 else f"{value:g}"


def text_problem(value: Any, max_len: int = MAX_STR, text: bool = False) -> str | None:
    """Why `value` is not a usable string (None: it is): non-empty, at most `max_len` characters, no control
    characters (a line break in a value ends up in a config id, a command line or a rabbitmq.conf line; `text`
    fields, descriptions, may span lines)."""
    if not isinstance(value, str) or value == "":
        return f"must be a non-empty string, got {_got(value)}"
    if len(value) > max_len:
        return f"must be at most {max_len} characters, got {len(value)}"
    allowed = "\n\t" if text else ""
    bad = sorted({repr(ch) for ch in value if (ord(ch) < 32 or 127 <= ord(ch) <= 159) and ch not in allowed})
    if bad:
        return f"must not contain control characters, got {', '.join(bad)} in {value[:60]!r}"
    if not value.strip():
        return "must not be blank"
    return None


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not key.isprintable() or len(key) > 80:  # a problem is one line: an odd key is shown quoted and short
        key = repr(key[:80])
    return f"{path}.{key}" if path else key


class Recorder:
    """What parses read, for the JSON Schema (sizing.campaign.schema): per field pattern (list positions as `[]`) the
    schema fragment of the checks its Fields method makes, its default, and in how many reads of its mapping it was
    required; per mapping pattern, how often it was read and whether it refuses unknown keys. The schema is thereby
    the parser's own checks, written once."""

    def __init__(self) -> None:
        self.fragments: dict[str, dict[str, Any]] = {}
        self.defaults: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        self.required: dict[str, int] = {}
        self.closed: set[str] = set()
        self.direct: set[str] = set()  # fields read outside a merged document: the ones a user writes there
        self.scalars: set[str] = set()  # mappings that may also be written as a scalar (a volume as its type name)
        self.merged = 0  # > 0: reading a merged document (a scenario's workload): nothing there is required

    @staticmethod
    def pattern(path: str) -> str:
        return re.sub(r"\[\d+\]", "[]", path)

    def visit(self, path: str) -> None:
        if not self.merged:
            key = self.pattern(path)
            self.visits[key] = self.visits.get(key, 0) + 1

    def field(self, path: str, fragment: dict[str, Any] | None, required: bool, default: Any) -> None:
        key = self.pattern(path)
        if not self.merged:
            self.direct.add(key)
        if fragment is not None or key not in self.fragments:
            self.fragments[key] = _loosest(self.fragments.get(key, {}), fragment or {})
        if default is not _MISSING and default is not None:
            # a default that depends on the document (a search's SLO: the target's p99) is no default to show
            self.defaults[key] = default if self.defaults.get(key, default) == default else VARIES
        if required and not self.merged:
            self.required[key] = self.required.get(key, 0) + 1


def _loosest(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Two reads of one field: bounds that depend on the rest of the document (an io1 volume's IOPS against the
    catalog's max_iops of io1) differ between reads; the schema keeps the widest."""
    merged = {**before, **after}
    for key in before.keys() & after.keys():
        if key in ("maximum", "maxLength", "maxItems"):
            merged[key] = max(before[key], after[key])
        elif key in ("minimum", "exclusiveMinimum", "minItems"):
            merged[key] = min(before[key], after[key])
    return merged


VARIES = object()  # a field's default differs between reads
RECORDER: ContextVar[Recorder | None] = ContextVar("fields_recorder", default=None)


@contextlib.contextmanager
def merged_document() -> Iterator[None]:
    """Reading a document merged from others (a scenario's workload over the campaign's): its fields are not
    required there, whatever the parse of the merged whole requires."""
    recorder = RECORDER.get()
    if recorder is not None:
        recorder.merged += 1
    try:
        yield
    finally:
        if recorder is not None:
            recorder.merged -= 1


def scalar_form(path: str) -> None:
    """The mapping at `path` was written as a scalar the parser expands (`volume: gp2` is `{type: gp2}`)."""
    recorder = RECORDER.get()
    if recorder is not None:
        recorder.scalars.add(Recorder.pattern(path))


@contextlib.contextmanager
def not_recorded() -> Iterator[None]:
    """Reading another document (a catalog) in the middle of a campaign: none of it is the campaign's schema."""
    token = RECORDER.set(None)
    try:
        yield
    finally:
        RECORDER.reset(token)


# The JSON Schema of a one-line string and of text (sizing.campaign.schema); `(?![\s\S])` ends the match at the true
# end of the value, in ECMAScript (editors) and in Python's re alike (where `$` would match before a final newline).
ONE_LINE = r"^(?=[\s\S]*\S)[^\x00-\x1f\x7f-\x9f]+(?![\s\S])"
TEXT = r"^(?=[\s\S]*\S)[^\x00-\x08\x0b-\x1f\x7f-\x9f]+(?![\s\S])"


def _bounds(minimum: float | None, maximum: float, exclusive: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"maximum": maximum}
    if minimum is not None:
        out["exclusiveMinimum" if exclusive else "minimum"] = minimum
    return out


class Fields:
    """Typed access to one mapping; every failed access records a Problem and returns None."""

    def __init__(self, data: Any, path: str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        self.seen: set[str] = set()
        self.recorder = RECORDER.get()
        if self.recorder is not None and (data is None or isinstance(data, Mapping)):
            self.recorder.visit(path)
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

    def _record(self, key: str, fragment: dict[str, Any] | None, default: Any, raw: bool = False) -> None:
        # `raw` counts whether the field is required (every typed read goes through raw() when it is)
        if self.recorder is not None:
            self.recorder.field(join(self.path, key), fragment, raw and default is _MISSING, default)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        self._record(key, None, default, raw=True)  # read raw: its own code checks it; the schema says any value
        self.seen.add(key)
        if key not in self.data:
            if default is _MISSING:
                self.fail(key, "is required")
                return None
            return default
        return self.data[key]

    def sub(self, key: str, required: bool = True) -> Fields:
        self._record(key, {"type": "object"}, _MISSING if required else None)
        value = self.raw(key, _MISSING if required else None)
        return Fields(value, join(self.path, key), self.problems)

    def _checked(self, key: str, default: Any, problem: Callable[[Any], str | None],
                 schema: dict[str, Any]) -> Any:
        """The value at `key`, `default` when absent (not checked: the code states it), or None with a problem.
        `schema`: the same check as a JSON Schema fragment (sizing.campaign.schema)."""
        self._record(key, schema, default)
        if key not in self.data and default is not _MISSING:
            self.seen.add(key)
            return default
        value = self.raw(key, default)
        if value is None and key not in self.data:
            return None
        reason = problem(value)
        if reason is not None:
            self.fail(key, reason)
            return None
        return value

    def _typed(self, key: str, default: Any, ok: Callable[[Any], bool], expected: str, schema: dict[str, Any]
               ) -> Any:
        return self._checked(key, default, lambda v: None if ok(v) else f"must be {expected}, got {_got(v)}", schema)

    def str(self, key: str, default: Any = _MISSING, choices: tuple[str, ...] | None = None,
            max_len: int = MAX_STR, text: bool = False) -> str | None:
        def problem(value: Any) -> str | None:
            if choices is not None and isinstance(value, str) and value not in choices:
                return f"must be one of {', '.join(choices)}; got {value[:60]!r}"
            return text_problem(value, MAX_TEXT if text else max_len, text)

        schema = {"enum": list(choices)} if choices is not None else {
            "type": "string", "maxLength": MAX_TEXT if text else max_len, "pattern": TEXT if text else ONE_LINE}
        return self._checked(key, default, problem, schema)

    def name(self, key: str, default: Any = _MISSING, names: str = "S3 partitions") -> str | None:
        """A name that becomes part of paths and ids: NAME, whole value."""
        def problem(value: Any) -> str | None:
            if isinstance(value, str) and value and not NAME.fullmatch(value):
                return (f"may only contain ASCII letters, digits, '-' and '_', at most 64 of them (it names "
                        f"{names}), got {value[:80]!r}")
            return text_problem(value)

        return self._checked(key, default, problem, {"type": "string", "pattern": f"^{NAME.pattern}(?![\\s\\S])"})

    def bool(self, key: str, default: Any = _MISSING) -> bool | None:
        return self._typed(key, default, lambda v: isinstance(v, bool), "true or false", {"type": "boolean"})

    def int(self, key: str, default: Any = _MISSING, minimum: int | None = None,
            maximum: int = MAX_INT, widest: int | None = None) -> int | None:
        """`widest`: the bound the schema states when `maximum` depends on the rest of the document (a volume
        type's own limit)."""
        return self._checked(key, default, lambda v: number_problem(v, minimum, maximum, integer=True),
                             {"type": "integer", **_bounds(minimum, widest if widest is not None else maximum)})

    def number(self, key: str, default: Any = _MISSING, minimum: float | None = None,
               exclusive: bool = False, maximum: float = MAX_NUMBER, why: str = "") -> float | None:
        """`why`: what the bounds stand for, added to a refusal of a number out of them."""
        def problem(value: Any) -> str | None:
            reason = number_problem(value, minimum, maximum, exclusive=exclusive)
            if reason is not None and why and is_number(value) and math.isfinite(value):
                return f"{reason}: {why}"
            return reason

        value = self._checked(key, default, problem, {"type": "number", **_bounds(minimum, maximum, exclusive)})
        return float(value) if value is not None and key in self.data else value

    def list(self, key: str, default: Any = _MISSING, non_empty: bool = True, max_len: int = 1000
             ) -> list[Any] | None:
        def problem(value: Any) -> str | None:
            if not isinstance(value, list):
                return f"must be a list, got {_got(value)}"
            if non_empty and not value:
                return "must not be empty"
            if len(value) > max_len:
                return f"must have at most {max_len} entries, got {len(value)}"
            return None

        return self._checked(key, default, problem, {"type": "array", "minItems": 1 if non_empty else 0,
                                                     "maxItems": max_len})

    def mapping(self, key: str, default: Any = _MISSING) -> dict[str, Any] | None:
        value = self._typed(key, default, lambda v: isinstance(v, Mapping), "a mapping", {"type": "object"})
        return dict(value) if value is not None else None

    def done(self) -> None:
        """Unknown keys are errors: a typo like `prefech` must not silently fall back to a default."""
        if self.recorder is not None:
            self.recorder.closed.add(Recorder.pattern(self.path))
        for key in self.data:
            if key not in self.seen:
                self.fail(str(key), "is not a known field")


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
