"""The JSON Schema of a campaign file, generated from the parser itself (issue 34): one model, two uses.

Every typed read of `sizing.fields.Fields` states its check as a JSON Schema fragment next to the check itself
(type, bounds, enum, length, pattern); `campaign_schema` parses a corpus of campaigns (the shipped ones) with a
`Recorder` listening, and assembles what was read into one schema: a mapping the parser closes with `done()` takes
no other keys, a field is required where every read of its mapping required it, defaults are the parser's. Editors
read it (the `# yaml-language-server: $schema=...` modeline of the shipped campaigns); `sizing validate` stays the
judge. What a JSON Schema cannot say is listed in SCHEMA_CANNOT_SAY (tests/test_spec_schema.py checks both agree
everywhere else on a corpus of mutations).

A field the corpus never reaches is not in the schema: the agreement test adds mutations and fails on any field
`sizing validate` accepts that the schema does not know.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from sizing.fields import RECORDER, Recorder, SpecError
from sizing.scalemodel import DEFAULT_FACTORS, ScaleFactors

SCHEMA_ID = "https://github.com/rabbit-sizing/rabbit-sizing/campaigns/campaign.schema.json"
SCHEMA_FILE = "campaign.schema.json"  # in campaigns/, next to the files whose modeline names it
MODELINE = f"# yaml-language-server: $schema={SCHEMA_FILE}"

# Rules `sizing validate` holds that a JSON Schema cannot state (or states differently); where the two disagree on a
# mutation, it is one of these.
SCHEMA_CANNOT_SAY = (
    "finite numbers: JSON has no NaN or infinity, so a schema has no word for them (YAML's .nan passes `number`)",
    "integers: JSON Schema counts 2.0 as an integer; the spec wants an int (2)",
    "cross-field rules: exactly one of steps / publish_rate / search, warm-up shorter than a step, the catalog's "
    "instance and volume types, config ids unique, budgets, live step changes, faults against phases and nodes",
    "fields read raw and checked by their own code (a fault's target and phases, a volume given as a name or a "
    "mapping, resolution, rates, steps.rate, queue arguments, broker_config): the schema says only what their "
    "container is",
    "provisioned IOPS and MiB/s within the catalog's limits of the named volume type: the schema states none",
    "a workload group is read as a scenario too: the schema lets a group carry scenario fields the parser refuses",
    "duplicate keys and YAML bounds (depth, size, aliases) are the loader's, before any schema sees the document",
)


def corpus(shipped: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The documents the schema is read from: the shipped campaigns, and for each parser branch no shipped campaign
    takes, one of them edited to take it (tests/test_spec_schema.py fails on a field name the parser reads that the
    schema lacks: add a branch here)."""
    documents = [copy.deepcopy(dict(d)) for d in shipped]
    aws = next((d for d in documents if d.get("deployment") == "aws" and any(
        "steps" in s for s in d.get("scenarios") or ())), None)
    local = next((d for d in documents if d.get("deployment", "local") == "local"), None)
    branches: list[dict[str, Any]] = []
    if aws is not None:
        matrix = copy.deepcopy(aws)
        matrix["clusters"] = {"matrix": {"nodes": [3], "instance_types": ["c5.2xlarge"], "volumes": ["gp2"],
                                         "rabbitmq_versions": ["3.12"]}}
        branches.append(matrix)
        network = copy.deepcopy(aws)
        scenario = next(s for s in network["scenarios"] if "steps" in s)
        scenario["faults"] = [
            {"kind": "network_delay", "at": 0.5, "heal_after_s": 5,
             "params": {"delay_ms": 50, "jitter_ms": 5, "interface": "eth0"}},
            {"kind": "network_loss", "at": 0.5, "heal_after_s": 5, "params": {"loss_percent": 5}}]
        branches.append(network)
    if local is not None:
        scaled = copy.deepcopy(local)
        scaled["scale_model"] = {name: getattr(DEFAULT_FACTORS, name) for name in ScaleFactors.field_names()}
        branches.append(scaled)
    return documents + branches


def record(documents: Iterable[Mapping[str, Any]]) -> Recorder:
    """What parsing `documents` read (valid or not: a refused document's reads count too)."""
    from sizing.spec.parse import parse_campaign

    recorder = Recorder()
    token = RECORDER.set(recorder)
    try:
        for document in documents:
            with contextlib.suppress(SpecError):
                parse_campaign(document)
    finally:
        RECORDER.reset(token)
    return recorder


def _split(pattern: str) -> tuple[str, str]:
    """`scenarios[].faults[].kind` -> (`scenarios[].faults[]`, `kind`)."""
    parent, _, key = pattern.rpartition(".")
    return parent, key


def _node(recorder: Recorder, pattern: str, children: dict[str, list[str]], strict: bool) -> dict[str, Any]:
    schema: dict[str, Any] = dict(recorder.fragments.get(pattern, {}))
    if pattern in recorder.defaults:
        default = recorder.defaults[pattern]
        if isinstance(default, str | int | float | bool):
            schema["default"] = default
    item = f"{pattern}[]" if pattern else None
    if item is not None and (item in recorder.visits or children.get(item)):
        schema["items"] = _object(recorder, item, children, strict)
        if item in recorder.scalars:
            schema["items"] = {"anyOf": [{"not": {"type": "object"}}, schema["items"]]}
    if children.get(pattern):
        shape = _object(recorder, pattern, children, strict)
        if schema.get("type") == "object":
            schema.update(shape)
        else:  # read raw (any value), and a mapping there is read as fields: a mapping must fit them
            schema = {**{k: v for k, v in schema.items() if k != "type"},
                      "anyOf": [{"not": {"type": "object"}}, shape]}
    return schema


def _object(recorder: Recorder, pattern: str, children: dict[str, list[str]], strict: bool) -> dict[str, Any]:
    """A mapping the parser read; `strict`: with its required fields (a file that extends another gives only what
    it changes: nothing is required of it)."""
    keys = sorted(children.get(pattern, []))
    visits = recorder.visits.get(pattern, 0)
    out: dict[str, Any] = {"type": "object",
                           "properties": {k: _node(recorder, f"{pattern}.{k}" if pattern else k, children, strict)
                                          for k in keys}}
    required = [k for k in keys if strict and visits
                and recorder.required.get(f"{pattern}.{k}" if pattern else k, 0) >= visits]
    if required:
        out["required"] = required
    if pattern in recorder.closed:
        out["additionalProperties"] = False
    return out


def campaign_schema(documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema (draft-07: what yaml-language-server reads) of a campaign file, from what parsing
    `documents` read."""
    recorder = record(corpus(list(documents)))
    children: dict[str, list[str]] = {}
    for pattern in recorder.fragments:
        parent, key = _split(pattern)
        children.setdefault(parent, []).append(key)
    whole, changes = (_object(recorder, "", children, strict) for strict in (True, False))
    changes["properties"]["extends"] = {"type": "string", "description": "the campaign file this one is merged onto"}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$id": SCHEMA_ID,
            "title": "rabbit-sizing campaign",
            "description": "Generated from the spec parser (sizing/spec/schema.py); `sizing validate` is the judge.",
            "definitions": {"campaign": whole, "extending": changes},
            "if": {"type": "object", "required": ["extends"]}, "then": {"$ref": "#/definitions/extending"},
            "else": {"$ref": "#/definitions/campaign"}}


def schema_text(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
