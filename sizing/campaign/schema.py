"""The JSON Schema of a campaign file, generated from the parser itself (issue 34): one model, two uses.

Every typed read of `sizing.documents.fields.Fields` states its check as a JSON Schema fragment next to the check itself
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

from sizing.documents.fields import RECORDER, Recorder, SpecError
from sizing.resources.localports import LOCAL_MAX_NODES
from sizing.resources.scalemodel import DEFAULT_FACTORS, ScaleFactors

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


# What each field means: the schema's descriptions (an editor shows them on hover) and the README's field reference
# (`reference_markdown`). A field of a scenario's or a group's workload override means what the campaign's does.
_VOLUME = {
    "type": "volume type of the catalog (gp2, gp3, io1, st1, ...)",
    "size_gb": "size in GiB (default: the catalog's for the type)",
    "iops": "provisioned IOPS (io1, gp3), at most the type's `max_iops` in the catalog",
    "throughput_mbps": "provisioned MiB/s (gp3), at most the type's `max_mib_s` in the catalog",
}
_PROFILE = {
    "for_s": "seconds this segment lasts",
    "hold": "a value held for the segment",
    "ramp": "`[from, to]`: a linear ramp over the segment, starting where the previous segment ends",
}
MEANINGS: dict[str, str] = {
    "name": "the campaign's name: names its S3 partitions and reports",
    "description": "what the campaign is for, in words (may span lines)",
    "extends": "a campaign file (relative to this one) this file is merged onto: mappings merge key by key, lists "
               "replace, an explicit empty mapping clears what is inherited",
    "purpose": "the question the report's first sentence answers: `size` (which config, at what cost), `compare` "
               "(needs `compare`), `characterise`",
    "deployment": f"`local` (nodes on 127.0.0.1, at most {LOCAL_MAX_NODES} per cluster: its port block; their "
                  "envelopes must fit the machine), `aws`, or `existing` (a running cluster named in `existing`)",
    "catalog": "price catalog: a name under `catalogs/` or a path",
    "seed": "seed for random fault targets and start delays",
    "repeats": "trials per config, each on a fresh cluster; figures are medians over repeats with intervals",
    "broker_config": "extra `rabbitmq.conf` settings for every node (well-formed keys, one-line values; listener "
                     "settings refused on `local`)",
    "target": "what a config must sustain to be recommended",
    "target.rate": "msg/s the cluster must sustain",
    "target.p99_latency_ms": "end-to-end p99 latency SLO, ms",
    "workload": "the load every scenario runs (a scenario's `workload` overrides parts of it)",
    "workload.queues": "the queues the load generator declares",
    "workload.queues.count": "number of queues",
    "workload.queues.name_pattern": "queue names, `{n}` the queue number (e.g. `perf-test-{n}`, `q-{n:03d}`)",
    "workload.queues.type": "queue type",
    "workload.queues.durable": "durable queues",
    "workload.queues.arguments": "queue arguments (`x-...`), checked as RabbitMQ 3.10 checks them at "
                                 "queue.declare (sizing/campaign/queueargs.py)",
    "workload.queues.policy": "policy definition for the queues (mirrored queues: `ha-mode`, `ha-params`, ...)",
    "workload.message": "the messages published",
    "workload.message.size_bytes": "message body size in bytes; must fit the broker's `max_message_size`",
    "workload.message.persistent": "publish persistent messages (delivery mode 2)",
    "workload.publishers": "publishing clients",
    "workload.publishers.count": "number of publishers",
    "workload.publishers.confirms_in_flight": "publisher-confirm window per publisher (0: no confirms)",
    "workload.publishers.random_start_delay_s": "each publisher starts after a random delay up to this, s",
    "workload.publishers.mandatory": "publish with the mandatory flag (unroutable messages come back)",
    "workload.consumers": "consuming clients",
    "workload.consumers.count": "number of consumers",
    "workload.consumers.prefetch": "basic.qos prefetch per consumer",
    "workload.consumers.multi_ack_every": "ack with multiple=true every N deliveries (1: each)",
    "workload.consumers.processing_ms": "simulated processing time per message, ms",
    "workload.consumers.auto_ack": "consume without acks",
    "clusters": "the configs measured: exactly one of `matrix` or `list`",
    "clusters.matrix": "every combination of its lists is a config",
    "clusters.matrix.nodes": "node counts",
    "clusters.matrix.instance_types": "instance types of the catalog",
    "clusters.matrix.volumes": "volumes: a type name or a mapping",
    "clusters.matrix.rabbitmq_versions": "RabbitMQ versions (`X.Y` or `X.Y.Z`; sizing/resources/versions.py): a "
                                         "dimension of the matrix",
    **{f"clusters.matrix.volumes[].{k}": v for k, v in _VOLUME.items()},
    "clusters.list": "configs one by one",
    "clusters.list[].nodes": "node count",
    "clusters.list[].instance_type": "instance type of the catalog",
    "clusters.list[].volume": "one volume holding every role: a type name or a mapping (or give `volumes`)",
    **{f"clusters.list[].volume.{k}": v for k, v in _VOLUME.items()},
    "clusters.list[].volumes": "one volume per role instead of `volume` (`data` required; README \"Disk layouts\")",
    "clusters.list[].volumes[].role": "`data`, `logs`, `wal` or `segments`",
    **{f"clusters.list[].volumes[].{k}": v for k, v in _VOLUME.items()},
    "clusters.list[].filesystem": "what every volume is formatted with (aws only)",
    "clusters.list[].rabbitmq_version": "the RabbitMQ version the nodes run (`X.Y` or `X.Y.Z`; the config id gains "
                                        "`-rmq<version>`)",
    "scenarios": "what each config is put through, in order",
    "scenarios[].name": "the scenario's name (names record rows and partitions)",
    "scenarios[].description": "what the scenario shows, in words",
    "scenarios[].warmup_s": "seconds of load before each phase is measured",
    "scenarios[].workload": "overrides of the campaign's `workload` for this scenario (deep-merged; any of its "
                            "fields)",
    "scenarios[].steps": "increasing intensities, one phase each: `rates` (msg/s), or client settings (`vary` + "
                         "`values`, or `sequence`)",
    "scenarios[].steps.rates": "the phases' rates, msg/s (per publisher with `per_publisher`)",
    "scenarios[].steps.duration_s": "seconds each step lasts",
    "scenarios[].steps.isolate": "each step a run of its own (fresh queues)",
    "scenarios[].steps.per_publisher": "rates are per publisher (PerfTest's `--rate`)",
    "scenarios[].steps.vary": "the client setting the steps vary: rate, confirms_in_flight, prefetch, "
                              "multi_ack_every, auto_ack, message_size, processing_ms",
    "scenarios[].steps.values": "the varied setting's value per step",
    "scenarios[].steps.sequence": "one mapping of settings per step",
    "scenarios[].steps.rate": "rate of every client-setting step: msg/s or `max` (closed loop)",
    "scenarios[].steps.max_rate": "cap on max mode, total msg/s (required without confirms)",
    "scenarios[].publish_rate": "a profile instead of steps: holds and ramps of the publish rate, msg/s",
    **{f"scenarios[].publish_rate[].{k}": v for k, v in _PROFILE.items()},
    "scenarios[].consumer_processing_ms": "a profile of the consumers' processing time, ms (as long as the "
                                          "publish schedule)",
    **{f"scenarios[].consumer_processing_ms[].{k}": v for k, v in _PROFILE.items()},
    "scenarios[].search": "a capacity search instead of steps or a profile: a ladder to the first failing probe, "
                          "then bisection to the resolution (sizing/criteria/search.py)",
    "scenarios[].search.start_rate": "first probe, msg/s",
    "scenarios[].search.upper_rate": "never probed above, msg/s",
    "scenarios[].search.growth": "ladder multiplier",
    "scenarios[].search.resolution": "when the search stops: `2%` of the rate or msg/s",
    "scenarios[].search.warmup_s": "per probe, excluded from the verdict, s",
    "scenarios[].search.measure_s": "per probe, the window judged, s",
    "scenarios[].search.drain_s": "per probe, the longest wait for a backlog to drain, s",
    "scenarios[].search.max_disagreements": "failed confirmations tolerated before the search is unstable",
    "scenarios[].search.slo": "the latency a probe must hold (default: the target's p99)",
    "scenarios[].search.slo.p99_ms": "p99 SLO, ms (default: the target's p99)",
    "scenarios[].search.slo.p999_ms": "p99.9 SLO, ms",
    "scenarios[].faults": "faults injected during the scenario",
    "scenarios[].faults[].kind": "what is done to the cluster (network_delay: aws only; network_loss and partition: "
                                 "aws, or local with `network: namespaces`; partition cuts the target node off from "
                                 "every other node (both ways, or one: params.direction); client_latency: a delay "
                                 "between the generator and "
                                 "every node, any target)",
    "scenarios[].faults[].phases": "`all` or the phase numbers (1-based) it hits",
    "scenarios[].faults[].at": "when, as a fraction of the phase (or `at_s`)",
    "scenarios[].faults[].at_s": "when, seconds into the phase (or `at`)",
    "scenarios[].faults[].target": "`random`, `all`, `{node: N}` or `{leader_of: queue}` (default: `random`; `all` "
                                   "for rolling_restart and client_latency, which take no other; never for "
                                   "partition)",
    "scenarios[].faults[].heal_after_s": "seconds until the fault is healed",
    "scenarios[].faults[].params": "the fault kind's parameters (network faults, partition and client_latency only)",
    "scenarios[].faults[].params.delay_ms": "network_delay: added delay, ms",
    "scenarios[].faults[].params.jitter_ms": "network_delay: jitter, ms",
    "scenarios[].faults[].params.loss_percent": "network_loss: packets lost, %",
    "scenarios[].faults[].params.to_broker_ms": "client_latency: delay from the generator to the broker, ms",
    "scenarios[].faults[].params.to_client_ms": "client_latency: delay from the broker to the generator, ms",
    "scenarios[].faults[].params.direction": "partition: `both` (default), `from_node` (only the target's packets "
                                             "to the other nodes dropped) or `to_node` (only theirs to it)",
    "scenarios[].faults[].params.interface": "the network interface (default: the default route's)",
    "scenarios[].publish_tolerance_s": "backlog scenarios: seconds of reduced publish rate that still count as "
                                       "held",
    "scenarios[].required": "adverse scenarios: false = judged and reported, not deciding the recommendation",
    "scenarios[].groups": "concurrent workloads, each with its own queues, clients and steps (README \"Workload "
                          "groups\")",
    "scenarios[].groups[].name": "the group's name (names record rows)",
    "scenarios[].groups[].description": "what the group stands for, in words",
    "scenarios[].groups[].workload": "the group's workload, deep-merged onto the scenario's",
    "scenarios[].groups[].rate": "a rate held over every phase: msg/s or `max` (or give the group `steps`, as a "
                                 "scenario's)",
    "scenarios[].groups[].per_publisher": "the held rate is per publisher",
    "scenarios[].groups[].max_rate": "cap on `rate: max`, total msg/s",
    "scenarios[].foreground": "the group the SLO, verdicts and leaderboards judge (default: the first)",
    "budget": "caps on the campaign's own worst case, checked before anything runs",
    "budget.max_cost_usd": "cloud cost of the whole campaign",
    "budget.max_hours": "wall-clock hours of the whole campaign at `parallelism`",
    "budget.parallelism": "clusters up at once",
    "compare": "purpose compare: what is compared with what",
    "compare.by": "`config` (every config against `baseline`) or `step` (every step against its family's "
                  "baseline step)",
    "compare.baseline": "by config: the baseline config id, or a list of them",
    "compare.baselines": "by step: `{scenario: step}`",
    "compare.versus": "scenario against scenario: `[{baseline: scenario[/step], other: scenario[/step]}]`",
    "compare.versus[].baseline": "the scenario (or `scenario/step`) compared with",
    "compare.versus[].other": "the scenario (or `scenario/step`) judged",
    "compare.description": "the question in words, for the report's first sentence",
    "existing": "deployment existing: the running cluster measured (credentials come from the Airflow connection)",
    "existing.connection": "the Airflow connection holding the login and password",
    "existing.vhost": "the campaign's vhost on that cluster (it must exist)",
    "existing.local": "the nodes run on this machine (fault scenarios allowed)",
    "existing.monthly_cost": "what the cluster costs per month (leaderboards)",
    "existing.ctl_env": "environment of the control commands (local clusters)",
    "existing.nodes": "one entry per broker node",
    "existing.nodes[].amqp": "AMQP `host:port`",
    "existing.nodes[].management": "management API `host:port` or `http(s)://host:port`",
    "existing.nodes[].name": "Erlang node name (default: asked of the management API)",
    "existing.nodes[].prometheus_port": "the node's Prometheus port, on the AMQP host",
    "existing.nodes[].pid_file": "local clusters: the node's pid file",
    "existing.nodes[].start_cmd": "local clusters: argv that starts the node",
    "existing.nodes[].stop_cmd": "local clusters: argv that stops the node",
    "existing.nodes[].ctl_cmd": "local clusters: argv of rabbitmqctl for the node",
    "scale_model": "local target: `off`, or factors from cloud to local resources (others keep their defaults)",
    "scale_model.cpu_cores_per_vcpu": "local cores per cloud vCPU",
    "scale_model.memory_mib_per_gib": "local MiB per cloud GiB of RAM",
    "scale_model.disk_divisor": "volume IOPS and MiB/s, and the instance's EBS ceiling, divided by this",
    "scale_model.volume_mib_per_gib": "volume image size per cloud GiB",
    "scale_model.generator_cores": "the load generator's CPU envelope, cores",
    "scale_model.generator_memory_mib": "the load generator's memory envelope, MiB",
    "scale_model.network_mbit_per_gbps": "each node's link, Mbit/s each way per cloud Gbps of its instance, with "
                                         "`network: namespaces` (default: 1000 x cpu_cores_per_vcpu)",
    "network": "local target: `loopback` (every node on 127.0.0.1) or `namespaces` (each node in a network namespace "
               "of its own on a private bridge, root only, adapters/netns.py; for `partition` and `network_loss`, "
               "and each node's link held to its instance's scaled bandwidth on the scale model)",
}


def meaning(pattern: str) -> str | None:
    for prefix, same in (("scenarios[].groups[].workload.", "workload."), ("scenarios[].workload.", "workload."),
                         ("scenarios[].groups[].steps.", "scenarios[].steps."),
                         ("scenarios[].groups[].steps", "scenarios[].steps")):
        if pattern.startswith(prefix) and pattern not in MEANINGS:
            return MEANINGS.get(same + pattern[len(prefix):])
    return MEANINGS.get(pattern)


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
    searching = next((d for d in documents if any("search" in s for s in d.get("scenarios") or ())), None)
    if searching is not None:  # a search's SLO defaults to the target's p99: a default that depends on the document
        other_target = copy.deepcopy(searching)
        other_target["target"] = {**other_target["target"], "p99_latency_ms": 250}
        branches.append(other_target)
    if local is not None:
        scaled = copy.deepcopy(local)
        scaled["scale_model"] = {name: getattr(DEFAULT_FACTORS, name) for name in ScaleFactors.field_names()}
        branches.append(scaled)
    return documents + branches


def record(documents: Iterable[Mapping[str, Any]]) -> Recorder:
    """What parsing `documents` read (valid or not: a refused document's reads count too)."""
    from sizing.campaign.parse import parse_campaign

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
    if (said := meaning(pattern)) is not None:
        schema["description"] = said
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
        if schema.get("type") == "object" and pattern not in recorder.scalars:
            schema.update(shape)
        else:  # read raw (any value), and a mapping there is read as fields: a mapping must fit them
            schema = {**{k: v for k, v in schema.items() if k != "type"},
                      "anyOf": [{"not": {"type": "object"}}, shape]}
    return schema


def _required(recorder: Recorder, pattern: str) -> bool:
    """Required in every read of its mapping."""
    visits = recorder.visits.get(_split(pattern)[0], 0)
    return bool(visits) and recorder.required.get(pattern, 0) >= visits


def _object(recorder: Recorder, pattern: str, children: dict[str, list[str]], strict: bool) -> dict[str, Any]:
    """A mapping the parser read; `strict`: with its required fields (a file that extends another gives only what
    it changes: nothing is required of it)."""
    keys = sorted(children.get(pattern, []))
    out: dict[str, Any] = {"type": "object",
                           "properties": {k: _node(recorder, f"{pattern}.{k}" if pattern else k, children, strict)
                                          for k in keys}}
    required = [k for k in keys if strict and _required(recorder, f"{pattern}.{k}" if pattern else k)]
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
    changes["properties"]["extends"] = {"type": "string", "description": MEANINGS["extends"]}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$id": SCHEMA_ID,
            "title": "rabbit-sizing campaign",
            "description": ("Generated from the spec parser (sizing/campaign/schema.py); `sizing validate` is the "
                            "judge."),
            "definitions": {"campaign": whole, "extending": changes},
            "if": {"type": "object", "required": ["extends"]}, "then": {"$ref": "#/definitions/extending"},
            "else": {"$ref": "#/definitions/campaign"}}


def schema_text(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


# ------------------------------------------------------------------------------------------ the README's reference

REFERENCE_START = "<!-- field reference: generated by scripts/regen_spec_schema.py from sizing/campaign/schema.py -->"
REFERENCE_END = "<!-- end of the field reference -->"


def _show(value: float) -> str:
    return f"{int(value):,}".replace(",", "_") if float(value).is_integer() and abs(value) < 1e18 else f"{value:g}"


def _type_and_bounds(fragment: dict[str, Any]) -> tuple[str, str]:
    if "enum" in fragment:
        return "one of " + ", ".join(f"`{v}`" for v in fragment["enum"]), ""
    kind = fragment.get("type")
    if kind in ("integer", "number"):
        low = (f"> {_show(fragment['exclusiveMinimum'])}" if "exclusiveMinimum" in fragment
               else f">= {_show(fragment['minimum'])}" if "minimum" in fragment else "")
        high = f"<= {_show(fragment['maximum'])}" if "maximum" in fragment else ""
        return kind, ", ".join(x for x in (low, high) if x) + (", finite" if kind == "number" else "")
    if kind == "string":
        if "maxLength" not in fragment:
            return "name", "ASCII letters, digits, `-`, `_`; 1-64"
        lines = "text" if "\\n" in fragment.get("pattern", "") or fragment["maxLength"] > 256 else "one line"
        return "string", f"{lines}, <= {_show(fragment['maxLength'])} chars"
    if kind == "array":
        return "list", f"{_show(fragment.get('minItems', 0))}-{_show(fragment['maxItems'])} entries"
    if kind == "object":
        return "mapping", ""
    if kind == "boolean":
        return "true/false", ""
    return "see meaning", ""


def reference_markdown(documents: Iterable[Mapping[str, Any]]) -> str:
    """The README's field reference: every field a user writes (not the repeats of a workload override), its type,
    bounds, default and meaning, as the parser reads them."""
    recorder = record(corpus(list(documents)))
    rows = ["| field | type | bounds | default | meaning |", "|---|---|---|---|---|"]
    for pattern in MEANINGS:
        if pattern != "extends" and pattern not in recorder.direct:
            continue
        fragment = recorder.fragments.get(pattern, {"type": "string", "maxLength": 256})  # extends
        kind, bounds = _type_and_bounds(fragment)
        if pattern in recorder.scalars or (not fragment and any(p.startswith(pattern + ".") for p in recorder.direct)):
            kind, bounds = "name or mapping", ""
        default = recorder.defaults.get(pattern)
        shown = ("**required**" if _required(recorder, pattern)
                 else f"`{json.dumps(default)}`" if isinstance(default, str | int | float | bool) else "")
        rows.append(f"| `{pattern}` | {kind} | {bounds} | {shown} | {MEANINGS[pattern]} |")
    return "\n".join(rows)
