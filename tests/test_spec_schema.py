"""Issue 34, item 3: the campaign JSON Schema is generated from the parser, shipped, named by every campaign's
modeline, and agrees with `sizing validate`.

Agreement, on a corpus of mutations of shipped campaigns (an unknown key in every mapping, every key deleted, every
scalar given the wrong type, a trailing newline, a huge and a negative number): the schema never refuses what
`sizing validate` accepts (an editor raises no false alarm), and where the schema accepts what the validator refuses,
the rule is one a JSON Schema cannot state (sizing.campaign.schema.SCHEMA_CANNOT_SAY), told apart here by where it
lives: a deletion (a requirement that depends on other fields: exactly one of steps / publish_rate / search, ...), a
field read raw or an open mapping (checked by its own code), a merged document (a scenario's or a group's workload), or
a non-finite number. Known answer for the counts: the mutations are enumerated, not sampled.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sizing.campaign import parse_campaign, read_campaign_yaml
from sizing.campaign.schema import (
    MEANINGS,
    MODELINE,
    REFERENCE_END,
    REFERENCE_START,
    SCHEMA_CANNOT_SAY,
    SCHEMA_FILE,
    campaign_schema,
    corpus,
    record,
    reference_markdown,
    schema_text,
)
from sizing.documents.fields import SpecError
from sizing.planning.plan import check_budget
from tests import documents

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = sorted((ROOT / "campaigns").glob("*.yaml"))
SCHEMA_PATH = ROOT / "campaigns" / SCHEMA_FILE
# One campaign per feature family: steps and a fault, a search, backlog profiles, an existing cluster, client-setting
# steps, workload groups and role volumes (all of them: 36 s; these: a few seconds).
AGREEMENT_CORPUS = ["local-quick", "local-search", "adverse-local", "existing-example", "flow-control-local",
                    "disks-matter-local"]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def test_the_shipped_schema_is_generated_from_the_parser_and_every_campaign_names_it(schema) -> None:
    generated = schema_text(campaign_schema([read_campaign_yaml(p) for p in CAMPAIGNS]))
    assert SCHEMA_PATH.read_text() == generated, "stale: regenerate with scripts/regen_spec_schema.py"
    jsonschema.Draft7Validator.check_schema(schema)
    for path in CAMPAIGNS:
        assert path.read_text().startswith(MODELINE + "\n"), f"{path.name} lacks the modeline"


def test_every_field_the_parser_reads_is_in_the_schema() -> None:
    """The schema is read off parses of a corpus: a field only a branch outside it reads would be missing (and an
    editor would flag it). Known answer: the field names in the parser's own source."""
    read = record(corpus([read_campaign_yaml(p) for p in CAMPAIGNS]))
    names = {pattern.rsplit(".", 1)[-1].removesuffix("[]") for pattern in read.fragments}
    sources = ["sizing/campaign/parse.py", "sizing/campaign/steps.py", "sizing/campaign/groups.py",
               "sizing/resources/existing.py"]
    in_code = {key for source in sources for key in re.findall(
        r'\.(?:str|int|number|bool|list|mapping|sub|raw|name)\("([a-z_0-9]+)"', (ROOT / source).read_text())}
    assert len(in_code) > 80 and not in_code - names, sorted(in_code - names)


def test_the_readme_field_reference_is_generated_and_every_field_has_a_meaning() -> None:
    """Item 4: the README's "Campaign spec" table is the parser's fields (type, bounds, default) with their meanings;
    a field added to the parser without a meaning, or a meaning left for a field that is gone, fails here."""
    documents = [read_campaign_yaml(p) for p in CAMPAIGNS]
    readme = (ROOT / "README.md").read_text()
    assert f"{REFERENCE_START}\n\n{reference_markdown(documents)}\n\n{REFERENCE_END}" in readme, \
        "stale: regenerate with scripts/regen_spec_schema.py"
    written = record(corpus(documents)).direct
    assert not written - set(MEANINGS), sorted(written - set(MEANINGS))
    assert not set(MEANINGS) - written - {"extends"}, sorted(set(MEANINGS) - written)


@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.stem)
def test_every_shipped_campaign_validates_against_the_schema(schema, path: Path) -> None:
    """As written (a file that `extends` another is checked as the changes it gives)."""
    errors = [f"{list(e.absolute_path)}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(yaml.safe_load(path.read_text()))]
    assert not errors, errors


def _mutations(data: dict[str, Any]) -> list[tuple[str, tuple, Any]]:
    """(kind, path, the mutated document) for every position of `data`."""
    out = []

    def mutated(path: tuple, edit) -> Any:
        doc = copy.deepcopy(data)
        edit(documents.parent(doc, path), path[-1])
        return doc

    for path in documents.paths(data):
        value = documents.parent(data, path)[path[-1]]
        if isinstance(value, dict):
            out.append(("unknown", path, mutated(path, lambda p, k: p[k].__setitem__("zz_unknown", 1))))
        if isinstance(path[-1], str):
            out.append(("delete", path, mutated(path, lambda p, k: p.__delitem__(k))))
        if isinstance(value, bool):
            out.append(("type", path, mutated(path, lambda p, k: p.__setitem__(k, "yes"))))
        elif isinstance(value, int | float):
            out.append(("type", path, mutated(path, lambda p, k: p.__setitem__(k, "12"))))
            out.append(("huge", path, mutated(path, lambda p, k: p.__setitem__(k, 10**17))))
            out.append(("negative", path, mutated(path, lambda p, k: p.__setitem__(k, -1))))
        elif isinstance(value, str):
            out.append(("type", path, mutated(path, lambda p, k: p.__setitem__(k, 12))))
            out.append(("newline", path, mutated(path, lambda p, k, v=value: p.__setitem__(k, v + "\n"))))
    return out


def _accepted(document: Any) -> bool:
    try:
        check_budget(parse_campaign(document))
    except SpecError:
        return False
    return True


def _subschema(schema: dict[str, Any], path: tuple) -> dict[str, Any] | None:
    """The schema a position of a (non-extending) campaign is checked against; None below a field the schema does
    not describe (read raw, or an open mapping)."""
    node = schema["definitions"]["campaign"]
    for key in path:
        if "anyOf" in node:  # read raw, a mapping there read as fields
            node = node["anyOf"][1]
        node = node.get("items") if isinstance(key, int) else (node.get("properties") or {}).get(key)
        if node is None:
            return None
    return node


def _why_the_schema_cannot_say(schema: dict[str, Any], kind: str, path: tuple) -> str | None:
    where = ".".join(str(k) for k in path)
    if kind == "delete":
        return "cross-field rules"  # required only with (or without) other fields
    if re.match(r"scenarios\.\d+\.(workload|groups)\b", where):
        return "a workload group"  # merged documents: a scenario's workload overrides, a group's workload
    for depth in range(len(path), 0, -1):  # the field itself, or the nearest container the schema describes
        node = _subschema(schema, path[:depth])
        untyped = "type" not in node and "enum" not in node if node is not None else True  # read raw
        if untyped or "anyOf" in node or (node.get("type") == "object" and "properties" not in node):
            return "fields read raw"
    return None


def test_schema_and_validator_agree_on_mutations(schema) -> None:
    validator = jsonschema.Draft7Validator(schema)
    false_alarms, unexplained, explained, total = [], [], 0, 0
    for name in AGREEMENT_CORPUS:
        data = json.loads(json.dumps(read_campaign_yaml(ROOT / "campaigns" / f"{name}.yaml")))
        for kind, path, document in _mutations(data):
            total += 1
            by_schema, by_validator = validator.is_valid(document), _accepted(document)
            if by_validator and not by_schema:
                false_alarms.append((name, kind, path, next(validator.iter_errors(document)).message))
            elif by_schema and not by_validator:
                reason = _why_the_schema_cannot_say(schema, kind, path)
                if reason is None:
                    unexplained.append((name, kind, path))
                else:
                    assert any(reason in said for said in SCHEMA_CANNOT_SAY), reason
                    explained += 1
    assert total > 1500
    assert not false_alarms, false_alarms[:10]
    assert not unexplained, unexplained[:20]
    assert explained < total / 3  # most mutations the schema itself refuses, as the validator does
