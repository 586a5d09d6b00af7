"""Specs checked against the RabbitMQ version each config runs (sizing/campaign/versionrules.py), before anything runs.
What the brokers really do with each value: tests/test_version_rules_broker.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.report.sections.header import spec_warnings
from sizing.campaign import deep_merge, load_campaign, parse_campaign, read_campaign_yaml
from sizing.campaign.versionrules import version_findings
from sizing.documents.fields import SpecError

CAMPAIGNS = Path(__file__).resolve().parents[1] / "campaigns"


def campaign(queues: dict[str, Any], versions: list[str] | None, base: str = "local-quick.yaml", **extra: Any):
    data = read_campaign_yaml(CAMPAIGNS / base)
    matrix: dict[str, Any] = {"nodes": [3], "instance_types": ["c5.2xlarge"], "volumes": ["gp2"]}
    if versions is not None:
        matrix["rabbitmq_versions"] = versions
    data = deep_merge(data, {"workload": {"queues": queues}, **extra})
    data["clusters"] = {"matrix": matrix}
    return parse_campaign(data, source="test")


def test_mirrored_queues_are_refused_on_4_0_naming_the_version_and_quorum_queues():
    mirrored = {"type": "mirrored", "policy": {"ha-mode": "exactly", "ha-params": 2}, "arguments": {}}
    assert campaign(mirrored, ["3.13"]).warnings == ()  # 3.x still has classic mirroring
    with pytest.raises(SpecError) as err:
        campaign(mirrored, ["3.10", "4.0"])
    (problem,) = err.value.problems
    assert problem.path == "workload.queues.type"
    assert "RabbitMQ 4.0 (config n3-c5.2xlarge-gp2-rmq4.0) has no classic mirrored queues" in problem.reason
    assert "use quorum queues, their 4.x equivalent" in problem.reason


def test_the_mirrored_study_is_refused_on_4_0_and_runs_on_its_own_version():
    data = read_campaign_yaml(CAMPAIGNS / "mirrored-sizing-2020.yaml")
    assert load_campaign(CAMPAIGNS / "mirrored-sizing-2020.yaml").warnings == ()
    for entry in data["clusters"]["list"]:
        entry["rabbitmq_version"] = "4.2"
    with pytest.raises(SpecError, match=r"RabbitMQ 4\.2 \(every config\) has no classic mirrored queues"):
        parse_campaign(data, source="mirrored on 4.2")


def test_ha_policy_keys_on_another_type_are_refused_on_4_0():
    # the 3.10 rule already refuses ha-* keys on a non-mirrored type; the version rule says why on 4.0 itself
    errors, _ = version_findings_for({"type": "classic", "policy": {"ha-mode": "all"}, "arguments": {}}, "4.0")
    assert [p.path for p in errors] == ["workload.queues.policy"]
    assert "refuses ha-* policy keys" in errors[0].reason


def version_findings_for(queues: dict[str, Any], version: str):
    """(errors, warnings) of local-quick's workload with these queue settings, on one version."""
    workload = load_campaign(CAMPAIGNS / "local-quick.yaml").workload
    workload = replace(workload, queues=replace(workload.queues, type=queues["type"], policy=queues.get("policy"),
                                                arguments=queues.get("arguments", {}),
                                                durable=queues.get("durable", True)))
    found = version_findings([("workload", workload)], {version: ["c1"]})
    return list(found.errors), list(found.warnings)


@pytest.mark.parametrize(("arguments", "warned_from"), [
    ({"x-queue-mode": "lazy"}, "3.12"),
    ({"x-queue-version": 1}, "4.0"),
])
def test_classic_arguments_a_version_ignores_are_warnings_from_that_version_on(arguments, warned_from):
    queues = {"type": "classic", "arguments": arguments}
    for version in ("3.10", "3.11", "3.12", "3.13", "4.0", "4.2"):
        errors, warnings = version_findings_for(queues, version)
        assert errors == []
        expected = 1 if tuple(map(int, version.split("."))) >= tuple(map(int, warned_from.split("."))) else 0
        assert len(warnings) == expected, (version, warnings)
    [warning] = version_findings_for(queues, "4.0")[1]
    assert warning.path == f"workload.queues.arguments.{next(iter(arguments))}" and "RabbitMQ 4.0" in warning.reason
    assert version_findings_for({"type": "classic", "arguments": {"x-queue-version": 2}}, "4.0") == ([], [])


def test_x_max_in_memory_length_is_a_warning_on_every_version_and_the_studies_get_it():
    for version in ("3.10", "4.0"):
        errors, warnings = version_findings_for(
            {"type": "quorum", "arguments": {"x-max-in-memory-length": 0, "x-max-in-memory-bytes": 0}}, version)
        assert errors == [] and [w.path.rsplit(".", 1)[1] for w in warnings] == [
            "x-max-in-memory-length", "x-max-in-memory-bytes"]
    study = load_campaign(CAMPAIGNS / "quorum-sizing-2020.yaml")
    assert [w.path for w in study.warnings] == ["workload.queues.arguments.x-max-in-memory-length"]
    assert "RabbitMQ 3.10 (every config) accepts x-max-in-memory-length and ignores it" in study.warnings[0].reason


def test_transient_queues_are_allowed_with_the_deprecation_on_4_0_and_refused_from_4_3():
    transient = {"type": "classic", "durable": False, "arguments": {}}
    assert version_findings_for(transient, "3.13") == ([], [])
    errors, [warning] = version_findings_for(transient, "4.0")
    assert errors == [] and "deprecated feature (transient_nonexcl_queues" in warning.reason
    [error], warnings = version_findings_for(transient, "4.3")
    assert warnings == [] and error.path == "workload.queues.durable" and "rejects transient" in error.reason


def test_a_matrix_of_versions_warns_for_the_configs_of_the_version_that_ignores_it():
    data = read_campaign_yaml(CAMPAIGNS / "local-quick.yaml")
    data["workload"]["queues"].update(type="classic", arguments={"x-queue-mode": "lazy"})
    data["clusters"] = {"matrix": {"nodes": [3], "instance_types": ["c5.2xlarge"], "volumes": ["gp2"],
                                   "rabbitmq_versions": ["3.10", "4.0"]}}
    lazy = parse_campaign(data, source="test")
    [warning] = lazy.warnings
    assert "RabbitMQ 4.0 (config n3-c5.2xlarge-gp2-rmq4.0) accepts x-queue-mode and ignores it" in warning.reason
    # ... and the report says it beside the figures
    html = "".join(str(part) for part in spec_warnings(lazy.warnings))
    assert "Spec settings the broker ignored" in html and "x-queue-mode" in html
    assert spec_warnings(()) == []


def test_the_upgrade_campaign_compares_4_0_against_3_10_on_one_quorum_workload():
    upgrade = load_campaign(CAMPAIGNS / "upgrade-local.yaml")
    assert [(s.config_id, s.rabbitmq_version) for s in upgrade.clusters] == [
        ("n3-c5.2xlarge-gp2-rmq3.10", "3.10"), ("n3-c5.2xlarge-gp2-rmq4.0", "4.0")]
    assert upgrade.purpose == "compare" and upgrade.comparison is not None
    assert upgrade.workload.queues.type == "quorum" and upgrade.warnings == ()
    assert [s.name for s in upgrade.scenarios] == ["capacity-search", "backlog", "restart-backlog"]
    # the same campaign on mirrored queues is refused for its 4.0 config, naming quorum queues
    data = read_campaign_yaml(CAMPAIGNS / "upgrade-local.yaml")
    data["workload"]["queues"] = {"count": 4, "type": "mirrored", "policy": {"ha-mode": "all"}}
    with pytest.raises(SpecError, match=r"RabbitMQ 4\.0 \(config n3-c5\.2xlarge-gp2-rmq4\.0\) has no classic mirrored"):
        parse_campaign(data, source="mirrored upgrade")


def test_the_rules_read_a_version_with_sizing_versions_parser_a_release_as_its_series():
    """One version parser (sizing.resources.versions.version_key): versionrules keeps none of its own, and a release
    (`3.11.9`, `3.12.13`) is judged as its series."""
    import ast

    import sizing.campaign.versionrules as versionrules

    tree = ast.parse(Path(versionrules.__file__).read_text())
    assert not [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                and "split" in ast.unparse(node) and "version" in ast.unparse(node.args)]
    lazy = {"type": "classic", "arguments": {"x-queue-mode": "lazy"}}
    assert version_findings_for(lazy, "3.11.9") == ([], [])
    assert len(version_findings_for(lazy, "3.12.13")[1]) == 1
    assert len(version_findings_for(lazy, "3.12")[1]) == 1
