"""Issue 34, item 2: random mutations of every shipped campaign, through `sizing validate` and `sizing plan` as a user
runs them (the CLI's main, in process): each gives a valid spec (exit 0, and `plan` prints) or exit 2 with one
field-path line per problem; never a traceback, never an accepted non-finite number. The same for each subcommand's
numeric options.

The mutations are those a user's editor or a careless script makes: type swaps, non-finite and huge numbers,
unicode and control characters, deleted, duplicated (as YAML text: the same key twice) and unknown keys, deep nesting.
Derandomized (the same examples every run: CI time is stable and a failure reproduces); bounded to about 20 s.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli import main
from sizing.campaign import read_campaign_yaml
from tests import documents

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = sorted((ROOT / "campaigns").glob("*.yaml"))
EXAMPLES_PER_CAMPAIGN = 25
PROPERTY = settings(max_examples=EXAMPLES_PER_CAMPAIGN, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# What a refusal looks like: the file's header line, then one `  - <field path>: <reason>` line per problem.
HEADER = re.compile(r"\S.* is invalid \(\d+ problem\(s\)\):")
PROBLEM = re.compile(r"  - \S.*: \S.*")  # a key may hold anything printable, ':' included

ODD_NUMBERS = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 10**30, 2**63, -1, 0, 0.5, True]),
                        st.floats(), st.integers())
ODD_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 10**30, -(10**30), 2**63, 0, -1, 1, 0.5, True,
                     False, None, "", " ", "max", "off", "\n", "3.12.13\n", "x" * 300, "{n}{x}", "q-{n:>99999}",
                     "\u0663", "\u202e", "a\x00b", [], {}]),
    st.text(max_size=12),
    st.integers(),
    st.floats(),
    st.lists(st.one_of(st.integers(), st.floats(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=4)), max_size=2),
    st.integers(1, 200).map(lambda depth: _nested(depth)),
)


def unshared(data: Any) -> Any:
    """The document with every YAML alias written out, so that an edit at one path changes that path only."""
    return json.loads(json.dumps(data))


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated_text(draw, data: dict[str, Any]) -> str:
    doc = copy.deepcopy(data)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):  # mostly one edit: a spec that stays valid elsewhere
        op = draw(st.sampled_from(["number", "number", "set", "delete", "unknown", "text"]))
        paths = documents.paths(doc)
        if op == "number":  # a number field given an odd number: must be refused, or in the field's bounds
            paths = [p for p in paths if isinstance(documents.parent(doc, p)[p[-1]], int | float)] or paths
        if not paths:
            break
        path = paths[draw(st.integers(0, len(paths) - 1))]
        parent = documents.parent(doc, path)
        if op == "number":
            parent[path[-1]] = draw(ODD_NUMBERS)
        elif op == "set":
            parent[path[-1]] = draw(ODD_VALUES)
        elif op == "delete":
            del parent[path[-1]]
        elif op == "unknown":
            target = parent[path[-1]] if isinstance(parent[path[-1]], dict) else (
                parent if isinstance(parent, dict) else doc)
            target[draw(st.sampled_from(["prefech", "zz_unknown", "é", "1", "params"]))] = draw(ODD_VALUES)
        else:  # a unicode or control character into a string value
            if isinstance(parent[path[-1]], str):
                text = parent[path[-1]]
                at = draw(st.integers(0, len(text)))
                parent[path[-1]] = text[:at] + draw(st.characters()) + text[at:]
    text = yaml.safe_dump(doc, sort_keys=False)
    if draw(st.integers(0, 4)) == 0:  # a line given twice: a duplicated key (or list item)
        lines = text.splitlines()
        at = draw(st.integers(0, len(lines) - 1))
        text = "\n".join([*lines[:at + 1], lines[at], *lines[at + 1:]]) + "\n"
    return text


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse's refusal
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def assert_valid_or_refused(path: Path) -> None:
    code, out, err = run("validate", str(path))
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 0:
        from sizing.campaign import load_campaign

        assert _finite(load_campaign(path).raw), "a non-finite number was accepted"
        code, out, err = run("plan", str(path))
        assert code == 0 and out and not err, (code, err)
        return
    assert code == 2, (code, err)
    lines = err.splitlines()
    assert HEADER.fullmatch(lines[0]) and lines[1:], err
    assert all(PROBLEM.fullmatch(line) for line in lines[1:]), err


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.stem)
def test_every_number_of_every_shipped_campaign_refuses_nan_and_infinity(campaign: Path) -> None:
    """Exhaustive where random is thin: each numeric field of each shipped campaign, given .nan, .inf and -.inf in
    turn, is refused with that field's path (or its list's, for a list of numbers)."""
    from sizing.campaign import parse_campaign
    from sizing.documents.fields import SpecError

    data = unshared(read_campaign_yaml(campaign))
    numbers = [p for p in documents.paths(data) if isinstance(documents.parent(data, p)[p[-1]], int | float)
               and not isinstance(documents.parent(data, p)[p[-1]], bool)]
    assert numbers
    for path in numbers:
        for odd in (math.nan, math.inf, -math.inf):
            doc = copy.deepcopy(data)
            documents.parent(doc, path)[path[-1]] = odd
            with pytest.raises(SpecError) as err:
                parse_campaign(doc)
            where = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
            assert any(p.path == where and "finite" in p.reason for p in err.value.problems), (where, err.value)


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.stem)
def test_mutated_campaigns_are_valid_or_refused_with_field_paths(campaign: Path, tmp_path: Path) -> None:
    data = unshared(read_campaign_yaml(campaign))
    spec = tmp_path / "mutated.yaml"

    @PROPERTY
    @given(mutated_text(data))
    def check(text: str) -> None:
        spec.write_text(text)
        assert_valid_or_refused(spec)

    check()


NUMERIC_OPTIONS = [  # (argv before the value, the option, its bounds): every numeric option of every subcommand
    (["plan", "campaigns/local-quick.yaml"], "--parallelism", 1, 100),
    (["trigger"], "--max-parallel-configs", 1, 100),
    (["backfill", "--config", "c", "--run-label", "r"], "--max-parallel-configs", 1, 100),
    (["demo"], "--timeout", 0, 7 * 86400),
    (["query", "--campaign", "c"], "--limit", 1, 1_000_000),
    (["compare", "--campaign", "c", "--base", "a", "--head", "b"], "--threshold", 0, 1),
]
OPTION_TEXT = st.one_of(st.text(max_size=8), st.integers(-(10**20), 10**20).map(str),
                        st.floats().map(repr), st.sampled_from(["nan", "inf", "-inf", "1e999", "0x10", "1_000", " 3"]))


@pytest.mark.parametrize("prefix, option, low, high", NUMERIC_OPTIONS, ids=lambda v: v if isinstance(v, str) else "")
def test_numeric_options_are_refused_by_the_parser_or_within_bounds(prefix, option, low, high) -> None:
    from app.cli import build_parser

    @settings(max_examples=40, deadline=None, derandomize=True, database=None)
    @given(OPTION_TEXT)
    def check(text: str) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                args = build_parser().parse_args([*prefix, f"{option}={text}", *(["SELECT 1"] if "query" in prefix
                                                                                  else [])])
            except SystemExit as exit_:
                assert exit_.code == 2 and f"argument {option}: must be" in err.getvalue(), err.getvalue()
                return
        value = getattr(args, option.lstrip("-").replace("-", "_"))
        assert math.isfinite(value) and low <= value <= high, value
        if option == "--parallelism":  # the one numeric option that runs offline: plan prints
            code, out, err_text = run(*prefix, option, text)
            assert code == 0 and f"at parallelism {value}" in out, (code, err_text)

    check()
