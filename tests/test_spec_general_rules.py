"""Issue 34: the general input rules, each checked with the inputs that slipped through before (the issue's list).

Every case is a shipped campaign with one edit; the expected field path and words come from the rule, so a rule
that stops holding fails here. The file cases go through the real loader (a temporary directory), the command-line
cases through the CLI's own parser.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import main
from sizing.campaign import load_campaign, parse_campaign
from sizing.documents.fields import SpecError
from sizing.documents.yamlload import MAX_DEPTH, MAX_NODES, load_yaml

ROOT = Path(__file__).resolve().parent.parent


def shipped(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "campaigns" / f"{name}.yaml").read_text())


def problems_of(spec: Any) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    return {p.path: p.reason for p in err.value.problems}


def edited(name: str, edit) -> dict[str, Any]:
    spec = copy.deepcopy(shipped(name))
    edit(spec)
    return spec


def _backlog_tolerance(spec):
    backlog = next(s for s in spec["scenarios"] if "publish_rate" in s and not s.get("faults"))
    backlog["publish_tolerance_s"] = float("nan")


def _first_search(spec) -> dict[str, Any]:
    return next(s for s in spec["scenarios"] if "search" in s)["search"]


CASES = [
    # (id, campaign, edit, path, words): numbers are finite
    ("nan-publish-tolerance", "adverse-local", _backlog_tolerance, None, "finite"),
    ("nan-search-start-rate", "local-search", lambda s: _first_search(s).update(start_rate=float("nan")),
     "scenarios[0].search.start_rate", "finite"),
    ("nan-step-duration", "local-quick", lambda s: s["scenarios"][0]["steps"].update(duration_s=float("nan")),
     "scenarios[0].steps.duration_s", "finite"),
    ("nan-target-rate", "local-quick", lambda s: s["target"].update(rate=float("nan")), "target.rate", "finite"),
    ("inf-search-upper-rate", "local-search", lambda s: _first_search(s).update(upper_rate=float("inf")),
     "scenarios[0].search.upper_rate", "finite"),
    ("nan-queue-argument", "local-quick",
     lambda s: s["workload"]["queues"]["arguments"].update({"x-anything": float("-inf")}),
     "workload.queues.arguments.x-anything", "finite"),
    # patterns match the whole value
    ("version-newline", "disks-matter-2020",
     lambda s: s["clusters"]["list"][0].update(rabbitmq_version="3.12.13\n"), "clusters.list[0].rabbitmq_version",
     "RabbitMQ version"),
    ("connection-newline", "existing-example", lambda s: s["existing"].update(connection="rabbitmq_staging\n"),
     "existing.connection", "control characters"),
    ("endpoint-newline", "existing-example", lambda s: s["existing"]["nodes"][0].update(amqp="10.0.0.11:5672\n"),
     "existing.nodes[0].amqp", "host:port"),
    ("unicode-digit-name", "local-quick", lambda s: s.update(name="quick\u0663"), "name", "ASCII"),
    ("name-too-long", "local-quick", lambda s: s.update(name="a" * 65), "name", "at most 64"),
    ("scenario-name-newline", "local-quick", lambda s: s["scenarios"][0].update(name="steps\n"),
     "scenarios[0].name", "ASCII"),
    ("queue-pattern-stray-field", "local-quick", lambda s: s["workload"]["queues"].update(name_pattern="q-{n}-{x}"),
     "workload.queues.name_pattern", "one format field"),
    ("queue-pattern-huge-width", "local-quick",
     lambda s: s["workload"]["queues"].update(name_pattern="q-{n:>999999999}"), "workload.queues.name_pattern",
     "one format field"),
    ("queue-pattern-unbalanced", "local-quick", lambda s: s["workload"]["queues"].update(name_pattern="q-{n}}{"),
     "workload.queues.name_pattern", "literal brace"),
    # upper bounds
    ("prometheus-port", "existing-example", lambda s: s["existing"]["nodes"][0].update(prometheus_port=99999),
     "existing.nodes[0].prometheus_port", "<= 65535"),
    ("repeats-float", "local-quick", lambda s: s.update(repeats=1e30), "repeats", "integer"),
    ("repeats-huge", "local-quick", lambda s: s.update(repeats=10**30), "repeats", "<= 100"),
    ("io1-iops-above-catalog", "disks-matter-2020",
     lambda s: s["clusters"]["list"][0]["volumes"][0].update(iops=100_000),
     "clusters.list[0].volumes[0].iops", "<= 64000"),
    ("queue-count-huge", "local-quick", lambda s: s["workload"]["queues"].update(count=10**12),
     "workload.queues.count", "<= 100000"),
    ("prefetch-above-amqp-short", "local-quick", lambda s: s["workload"]["consumers"].update(prefetch=70_000),
     "workload.consumers.prefetch", "<= 65535"),
    ("broker-config-huge", "local-quick", lambda s: s.update(broker_config={"channel_max": 10**30}),
     "broker_config.channel_max", "<= 9223372036854775807"),
    ("description-too-long", "local-quick", lambda s: s.update(description="x" * 5000), "description", "at most"),
    # fields read but never checked, or silently ignored
    ("group-max-rate-without-max", "disks-matter-local", None, None, "max_rate"),
    ("fault-param-unknown", "local-quick",
     lambda s: s["scenarios"][1]["faults"][0].update(params={"bomb": [1, 2]}), "scenarios[1].faults[0].params",
     "takes no params"),
]


def _group_max_rate(spec):
    for scenario in spec["scenarios"]:
        for group in scenario.get("groups") or ():
            if "rate" in group and group["rate"] != "max":
                group["max_rate"] = "fast"
                return
    raise AssertionError("no group with a held numeric rate in the campaign")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_each_rule_refuses_the_input_that_slipped_through(case):
    _id, name, edit, path, words = case
    spec = edited(name, edit or _group_max_rate)
    found = problems_of(spec)
    if path is None:
        matching = [p for p, reason in found.items() if words in p + reason]
    else:
        assert path in found, found
        matching = [path] if words in found[path] else []
    assert matching, found


def test_network_fault_params_are_typed_and_bounded():
    spec = shipped("local-quick")
    spec["deployment"] = "aws"
    fault = {"kind": "network_delay", "at": 0.5, "heal_after_s": 5, "params": {"delay_ms": 50, "jiter_ms": 5}}
    spec["scenarios"][1]["faults"] = [fault]
    found = problems_of(spec)
    assert "is not a known field" in found["scenarios[1].faults[0].params.jiter_ms"]
    fault["params"] = {"delay_ms": "50ms", "interface": "eth0; reboot"}
    found = problems_of(spec)
    assert "must be a number" in found["scenarios[1].faults[0].params.delay_ms"]
    assert "interface name" in found["scenarios[1].faults[0].params.interface"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(path: Path) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_campaign(path)
    assert str(path.name) in err.value.source or str(path) in str(err.value)
    return [str(p) for p in err.value.problems]


def test_yaml_is_bounded_before_anything_reads_it(tmp_path):
    quick = (ROOT / "campaigns" / "local-quick.yaml").read_text()
    dup = refused(write(tmp_path, "dup.yaml", quick + "repeats: 2\nrepeats: 3\n"))
    assert dup == [f"repeats: is given twice (lines {quick.count(chr(10)) + 1} and {quick.count(chr(10)) + 2}); "
                   "YAML would keep the last one silently"]
    nested = refused(write(tmp_path, "deep.yaml", "name: x\nworkload: " + "[" * 5000 + "]" * 5000 + "\n"))
    assert len(nested) == 1 and f"nests deeper than {MAX_DEPTH} levels" in nested[0]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True))
    assert f"more than {MAX_NODES} values" in refused(write(tmp_path, "bomb.yaml", bomb))[0]
    assert "refers to itself" in refused(write(tmp_path, "loop.yaml", "name: &a [*a]\n"))[0]
    syntax = refused(write(tmp_path, "syntax.yaml", "name: [x\nrepeats: 2\n"))
    assert syntax[0].startswith("<root>: is not valid YAML at line 2")
    (tmp_path / "binary.yaml").write_bytes(b"name: \xff\xfe\n")
    assert "not UTF-8" in refused(tmp_path / "binary.yaml")[0]
    assert "not a regular file" in refused(tmp_path)[0]


def test_extends_parents_are_checked_with_their_file_named(tmp_path):
    write(tmp_path, "parent.yaml", "- a list\n- not a campaign\n")
    child = write(tmp_path, "child.yaml", "extends: parent.yaml\nname: child\n")
    assert "holds a list, not a campaign mapping" in refused(child)[0]
    write(tmp_path, "bad-parent.yaml", "name: x\nname: y\n")
    with pytest.raises(SpecError) as err:
        load_campaign(write(tmp_path, "child2.yaml", "extends: bad-parent.yaml\n"))
    assert err.value.source.endswith("bad-parent.yaml") and err.value.paths() == ["name"]


def test_an_error_inside_a_catalog_keeps_the_catalogs_field_path(tmp_path):
    catalog = yaml.safe_load((ROOT / "catalogs" / "aws-us-east-1-2020.yaml").read_text())
    catalog["instances"]["c5.2xlarge"]["vcpus"] = -2
    path = tmp_path / "cat.yaml"
    path.write_text(yaml.safe_dump(catalog))
    spec = shipped("local-quick")
    spec["catalog"] = str(path)
    reason = problems_of(spec)["catalog"]
    assert str(path) in reason and "instances.c5.2xlarge.vcpus: must be >= 1, got -2" in reason
    path.write_text("name: [unclosed\n")
    assert "is not valid YAML at line 2" in problems_of(spec)["catalog"]


def test_inline_yaml_goes_through_the_same_loader():
    with pytest.raises(SpecError) as err:
        load_yaml("a: 1\na: 2\n", "inline campaign")
    assert err.value.paths() == ["a"]


@pytest.mark.parametrize("argv, words", [
    (["plan", "campaigns/local-quick.yaml", "--parallelism", "-1"], "--parallelism: must be >= 1, got -1"),
    (["plan", "campaigns/local-quick.yaml", "--parallelism", "0"], "--parallelism: must be >= 1, got 0"),
    (["plan", "campaigns/local-quick.yaml", "--parallelism", "1e9"], "--parallelism: must be an integer"),
    (["trigger", "--max-parallel-configs", "0"], "--max-parallel-configs: must be >= 1, got 0"),
    (["demo", "--timeout", "nan"], "--timeout: must be a finite number"),
    (["query", "--campaign", "c", "--limit", "0", "SELECT 1"], "--limit: must be >= 1"),
], ids=["parallelism-negative", "parallelism-zero", "parallelism-float", "max-parallel-zero", "timeout-nan",
        "limit-zero"])
def test_command_line_numbers_are_typed_and_bounded_by_the_parser(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and words in capsys.readouterr().err


def test_validate_a_directory_or_a_bad_file_is_exit_2_without_traceback(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not a regular file" in err
    assert main(["plan", str(write(tmp_path, "deep.yaml", "a: " + "[" * 3000 + "]" * 3000))]) == 2
    assert "nests deeper" in capsys.readouterr().err


def test_what_a_campaign_would_build_is_bounded_before_it_is_built():
    """A matrix multiplies its lists and a search's ladder climbs by `growth`: both are bounded before either is
    expanded (a 1000^4 matrix or a 1.0000001 growth would hang `plan`)."""
    spec = shipped("local-search")
    _first_search(spec).update(start_rate=1e-6, growth=1.0000001)
    assert "more than 200 rungs" in problems_of(spec)["scenarios[0].search.growth"]
    spec = shipped("local-quick")
    spec["deployment"] = "aws"
    spec["clusters"] = {"matrix": {"nodes": list(range(1, 101)), "instance_types": ["c5.2xlarge"] * 20,
                                   "volumes": ["gp2"] * 20}}
    assert "makes 40000 configs" in problems_of(spec)["clusters.matrix"]
