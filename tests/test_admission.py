"""One admission pipeline (issue 47 item 2): sizing.planning.admission.admit over hand-built machine facts (no machine),
and the CLI's `sizing validate` and the DAG's validate_spec (adapters.planning.validate_run, the function the task
calls) saying the same problems, warnings and notes in the same words."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from adapters.calibration import stored
from adapters.planning import validate_run
from sizing.campaign import deep_merge, load_campaign, parse_campaign, read_campaign_yaml
from sizing.documents.fields import SpecError
from sizing.planning.admission import MachineFacts, admit
from sizing.planning.runparams import RunParams
from sizing.resources.scalemodel import GIB, Machine

REPO = Path(__file__).resolve().parents[1]
CAMPAIGNS = REPO / "campaigns"
QUICK = load_campaign(CAMPAIGNS / "local-quick.yaml")
# one config, one repeat, 8 steady seconds a step: admitted with the too-short note
RTT = load_campaign(CAMPAIGNS / "flow-control-rtt-local.yaml")
ROOMY = MachineFacts(installed="3.10.8", machine=Machine(cores=64.0, memory_bytes=256 * GIB),
                     support="scale model enforced: cpu, memory and disk envelopes")


def pinned(version: str):
    raw = deep_merge(read_campaign_yaml(CAMPAIGNS / "local-quick.yaml"), {"clusters": {"list": [
        {"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2", "rabbitmq_version": version}]}})
    return parse_campaign(raw, source="test")


def test_an_admitted_campaign_carries_its_notes_and_what_its_envelopes_hold_here():
    admission = admit(RTT, ROOMY)
    assert admission.problems == () and admission.refusal("x") is None and admission.warnings == ()
    [note] = admission.notes
    assert note.path == "scenarios.qq-inflight-rtt20.steps.duration_s"
    assert admission.remarks() == [f"note: {note}"]
    assert admission.scale[0].startswith("scale model (the default model): 1 vCPU = 0.025 reference cores "
                                         "(uncalibrated host)")
    assert "at its peak 1.40 cores and 7.4 GiB" in admission.scale[0]
    assert admission.scale[1] == ROOMY.support


def test_warnings_come_before_notes_in_the_words_every_caller_prints():
    aws = load_campaign(CAMPAIGNS / "quorum-sizing-2020.yaml")
    admission = admit(aws, MachineFacts())  # a cloud campaign needs nothing of this machine
    assert admission.problems == () and admission.scale == ()
    assert admission.remarks() == [f"warning: {w}" for w in aws.warnings]
    assert admission.remarks()[0].startswith("warning: workload.queues.arguments.x-max-in-memory-length: ")


def test_a_machine_too_small_for_the_envelopes_refuses_with_the_sums():
    small = MachineFacts(machine=Machine(cores=1.0, memory_bytes=64 * GIB))
    admission = admit(RTT, small)
    [problem] = admission.problems
    assert problem.path == "scale_model" and "1.40 cores" in problem.reason and "has 1 cores" in problem.reason
    err = admission.refusal("spec.yaml")
    assert isinstance(err, SpecError) and str(err).startswith("spec.yaml is invalid (1 problem(s)):")
    assert admission.notes  # still said to a caller that shows them: the refusal is what stops it


def test_the_version_policy_is_over_the_facts_alone():
    assert admit(pinned("3.10"), ROOMY).problems == ()
    [other] = admit(pinned("3.13"), ROOMY).problems
    assert other.path == "clusters.list[0].rabbitmq_version"
    assert "asks for RabbitMQ 3.13, but the local target runs the installed 3.10.8" in other.reason
    [none] = admit(pinned("3.10"), MachineFacts(machine=ROOMY.machine)).problems
    assert none.reason.endswith("but no rabbitmq-server is installed here")
    # 4.0 runs in the chroot runtime: refused only where the root cannot be made, or is another 4.0 release
    assert admit(pinned("4.0"), ROOMY).problems == ()
    [missing] = admit(pinned("4.0"), MachineFacts(installed="3.10.8", chroot_missing="needs root")).problems
    assert missing.reason.endswith("asks for RabbitMQ 4.0: needs root")
    [built] = admit(pinned("4.0.99"), MachineFacts(installed="3.10.8", chroot_version="4.0.5")).problems
    assert "the local 4.0 runtime runs Debian 13's release (4.0.5)" in built.reason


def test_namespaces_are_refused_where_the_machine_cannot_build_them_and_say_what_is_missing():
    namespaced = parse_campaign(deep_merge(read_campaign_yaml(CAMPAIGNS / "local-quick.yaml"),
                                           {"network": "namespaces"}), source="test")
    assert admit(namespaced, ROOMY).problems == ()
    missing = "no private network for the nodes: not root; no `nft` (apt-get install nftables)"
    [problem] = admit(namespaced, MachineFacts(installed="3.10.8", network_missing=missing)).problems
    assert problem.path == "network" and problem.reason.startswith(missing + "; use `network: loopback`")


def test_the_hosts_calibration_is_applied_and_the_fit_is_checked_on_it():
    slow = admit(RTT, MachineFacts(machine=Machine(cores=2.0, memory_bytes=64 * GIB), host_speed=0.5))
    assert slow.campaign.scale_model.host_speed == 0.5
    assert "host calibration: 1 core here = 0.50 reference cores" in slow.scale[0]
    [problem] = slow.problems  # half as fast a core: the node needs twice the cores, 0.4 -> 0.8 (+ 1 generator)
    assert "1.80 cores" in problem.reason
    assert admit(RTT, MachineFacts(host_speed=None)).campaign is RTT
    aws = load_campaign(CAMPAIGNS / "quorum-sizing-2020.yaml")
    assert admit(aws, MachineFacts(host_speed=2.0)).campaign is aws  # no envelopes: nothing to calibrate


def test_a_runs_params_are_admitted_with_the_campaign_every_problem_at_once():
    params = RunParams(campaign="campaigns/ci-tiny.yaml", run_label="r1", configs=("n9-x",), baseline_run="r1")
    ci = load_campaign(CAMPAIGNS / "ci-tiny.yaml")
    admission = admit(ci, ROOMY, params)
    assert [p.path for p in admission.problems] == ["params.configs", "params.baseline_run"]
    # the run's own max_parallel_configs puts more envelopes up at once than the budget's (2)
    tight = MachineFacts(machine=Machine(cores=2.0, memory_bytes=64 * GIB))
    assert admit(ci, tight).problems == ()
    wide = admit(ci, tight, RunParams(campaign="campaigns/ci-tiny.yaml", max_parallel_configs=4))
    assert {p.path for p in wide.problems} == {"params.max_parallel_configs"}


@pytest.fixture
def refused_spec(tmp_path: Path) -> Path:
    """The note's campaign with a refused input: its one config asks for a RabbitMQ this machine does not run."""
    raw = yaml.safe_load((CAMPAIGNS / "flow-control-rtt-local.yaml").read_text())
    raw["clusters"]["list"][0]["rabbitmq_version"] = "3.13"
    spec = tmp_path / "refused.yaml"
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    return spec


@pytest.mark.parametrize("spec", ["flow-control-rtt-local.yaml", "quorum-sizing-2020.yaml"])
def test_the_cli_and_the_dag_say_the_same_notes_and_warnings(spec, tmp_path, capsys):
    from app.cli import main

    path = str(CAMPAIGNS / spec)
    assert main(["validate", path]) == 0
    out, err = capsys.readouterr()
    said: list[str] = []
    # the DAG's host: this host's calibration as validate reads it (stored: the DAG measures only a host without one)
    validate_run({"campaign": path, "run_label": "r1"}, tmp_path, say=said.append, host=stored)
    assert err.splitlines() == said[:len(err.splitlines())] and err  # a note (rtt), a warning (quorum)
    assert [line.strip() for line in out.splitlines()[1:]] == said[len(err.splitlines()):]


def test_the_cli_and_the_dag_refuse_the_same_input_in_the_same_words(refused_spec, tmp_path, capsys):
    from app.cli import main

    assert main(["validate", str(refused_spec)]) == 2
    err = capsys.readouterr().err
    with pytest.raises(SpecError) as refused:
        validate_run({"campaign": str(refused_spec), "run_label": "r1"}, tmp_path / "specs", say=print)
    assert err == f"{refused.value}\n"
    assert "clusters.list[0].rabbitmq_version: config n1-c5.4xlarge-io1-rmq3.13 asks for RabbitMQ 3.13" in err
    assert not (tmp_path / "specs").exists()  # nothing written


def test_sizing_trigger_says_the_notes_the_dag_will_say_before_it_triggers(monkeypatch, tmp_path, capsys):
    from adapters.airflowapi import AirflowClient
    from app import cli

    sent: list[dict] = []
    monkeypatch.setattr(AirflowClient, "__init__", lambda self, login: None)  # no Airflow here
    monkeypatch.setattr(AirflowClient, "trigger", lambda self, dag_id, conf: sent.append(dict(conf)) or "manual_1")
    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path))  # no demo state file to read
    monkeypatch.setenv("SIZING_AIRFLOW_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SIZING_AIRFLOW_PASSWORD", "x")
    path = str(CAMPAIGNS / "flow-control-rtt-local.yaml")
    assert cli.main(["trigger", "--campaign", path, "--run-label", "r1"]) == 0
    said: list[str] = []
    validate_run({"campaign": path, "run_label": "r1"}, tmp_path / "specs", say=said.append)
    assert sent and capsys.readouterr().err.splitlines() == [line for line in said if line.startswith("note: ")]
