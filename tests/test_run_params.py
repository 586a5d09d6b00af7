"""One params contract for a sizing_campaign run (sizing.planning.runparams): the JSON schemas Airflow validates, the
core's checks and the CLI's options are derived from one declaration, and these tests fail when they part.

The DAG's side (its `Param`s are exactly the declared ones) is test_dag_sizing_campaign.py::test_params_are_typed.
Independent counters: jsonschema (the validator Airflow's Param.resolve calls) judges every sample value against
each schema; the CLI side is read back through argparse from an argv written out by hand.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from app.cli import build_parser
from sizing.campaign import load_campaign
from sizing.documents.fields import Problem
from sizing.planning.runparams import RUN_PARAMS, RunParams
from sizing.planning.runplan import run_problems

# Values every kind of param may be sent (JSON, as a conf or the UI sends it): valid and not.
SAMPLES = [None, "", "r1", "a/b", "x" * 64, "x" * 65, "campaigns/local-quick.yaml", "name: x\nrepeats: 1\n", 0, 1, 4,
           100, 101, -1, 2.5, True, [], ["n1-c5.2xlarge-gp2"], ["a", 3], {"a": 1}]


@pytest.mark.parametrize("param", RUN_PARAMS, ids=lambda p: p.name)
def test_each_params_schema_and_check_give_the_same_verdicts(param):
    """What Airflow accepts at trigger time is what the task and the CLI accept: one rule, two forms."""
    for value in SAMPLES:
        by_schema = jsonschema.Draft202012Validator(param.schema()).is_valid(value)
        assert by_schema == (param.problem(value) is None), (param.name, value, param.problem(value))
    assert param.problem(param.default) is None  # the default is a valid value


def test_a_conf_round_trips_and_is_json():
    params = RunParams(campaign="campaigns/ci-tiny.yaml", configs=("n1-c5.4xlarge-gp2",), scenarios=("steady",),
                       run_label="r2", max_parallel_configs=2, baseline_run="r1")
    conf = params.to_dict()
    assert list(conf) == [p.name for p in RUN_PARAMS]
    assert RunParams.from_dict(json.loads(json.dumps(conf))) == params
    assert RunParams.from_dict({}) == RunParams()  # every param has a default: a conf may leave any out
    # A null list (the UI's empty field) is "all"; keys beyond the contract are Airflow's, not ours.
    assert RunParams.from_dict({"configs": None, "other": 1}).configs == ()


def test_the_cli_can_send_every_param_the_dag_takes():
    argv = ["trigger", "--campaign", "campaigns/ci-tiny.yaml", "--config", "n1-c5.4xlarge-gp2", "--config", "n3",
            "--scenario", "steady", "--run-label", "r2", "--max-parallel-configs", "2", "--baseline-run", "r1"]
    expected = RunParams(campaign="campaigns/ci-tiny.yaml", configs=("n1-c5.4xlarge-gp2", "n3"),
                         scenarios=("steady",), run_label="r2", max_parallel_configs=2, baseline_run="r1")
    assert {f for f in expected.to_dict() if expected.to_dict()[f] != RunParams().to_dict()[f]} == \
        {p.name for p in RUN_PARAMS}  # the argv above sets every param (a new one fails here until it is added)
    args = build_parser().parse_args(argv)
    assert RunParams.from_dict(vars(args)) == expected
    # Left out, each option is the DAG's default.
    assert RunParams.from_dict(vars(build_parser().parse_args(["trigger"]))) == RunParams()


@pytest.mark.parametrize(("option", "value", "reason"), [
    ("--run-label", "a/b", "must be 1-64 ASCII letters"), ("--baseline-run", "x" * 65, "must be 1-64 ASCII letters"),
    ("--max-parallel-configs", "0", "must be >= 1"), ("--max-parallel-configs", "two", "must be an integer"),
    ("--campaign", "", "must be a spec path")])
def test_the_cli_refuses_a_bad_value_with_the_params_own_reason(capsys, option, value, reason):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["trigger", option, value])
    assert exit_.value.code == 2 and reason in capsys.readouterr().err


def test_backfill_needs_the_configs_and_the_run_label(capsys):
    for argv in (["backfill", "--run-label", "r1"], ["backfill", "--config", "n1"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
    assert "required" in capsys.readouterr().err


def test_every_param_with_a_bad_value_is_one_problem_at_its_path():
    """Bad values for all params at once: every one is reported, in declaration order."""
    campaign = load_campaign("campaigns/local-quick.yaml")
    bad = RunParams.from_dict({"campaign": 3, "configs": "n1", "scenarios": ["nope"], "run_label": "a/b",
                               "max_parallel_configs": 0, "baseline_run": "x/y"})
    problems = run_problems(bad, campaign)
    assert [p.path for p in problems] == [f"params.{p.name}" for p in RUN_PARAMS]
    assert problems[2] == Problem("params.scenarios", "unknown scenario 'nope'; campaign local-quick has: "
                                                      + ", ".join(sorted(s.name for s in campaign.scenarios)))
    assert run_problems(RunParams(), campaign) == []
    same = run_problems(RunParams(run_label="r1", baseline_run="r1"), campaign)
    assert [p.reason for p in same] == ["is the run label itself ('r1'): a run is compared with another run"]


def test_sizing_trigger_sends_the_baseline_as_a_conf_the_dags_params_accept(monkeypatch, tmp_path, capsys):
    """`sizing trigger ... --baseline-run r0`: the conf it posts (the REST client stands in, recording it) carries
    the baseline, and each of its values passes the schema of the DAG param it names (jsonschema, as at trigger)."""
    from adapters.airflowapi import AirflowClient
    from app import cli

    sent: list[dict] = []
    monkeypatch.setattr(AirflowClient, "__init__", lambda self, login: None)  # no login: no Airflow here
    monkeypatch.setattr(AirflowClient, "trigger", lambda self, dag_id, conf: sent.append(dict(conf)) or "manual_1")
    monkeypatch.setenv("SIZING_STATE_DIR", str(tmp_path))  # no demo state file to read
    monkeypatch.setenv("SIZING_AIRFLOW_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SIZING_AIRFLOW_PASSWORD", "x")
    assert cli.main(["trigger", "--run-label", "r1", "--baseline-run", "r0", "--config", "n1-c5.2xlarge-gp2"]) == 0
    (conf,) = sent
    assert conf["baseline_run"] == "r0" and conf["configs"] == ["n1-c5.2xlarge-gp2"] and conf["run_label"] == "r1"
    schemas = {p.name: p.schema() for p in RUN_PARAMS}
    assert set(conf) == set(schemas)
    assert all(jsonschema.Draft202012Validator(schemas[k]).is_valid(v) for k, v in conf.items())
    assert '"baseline_run": "r0"' in capsys.readouterr().out
    # refused before Airflow is asked: an unknown config, and a baseline that is the run itself
    assert cli.main(["trigger", "--run-label", "r1", "--baseline-run", "r1", "--config", "n9-x"]) == 1
    assert len(sent) == 1
    err = capsys.readouterr().err
    assert "params.configs: unknown config 'n9-x'" in err and "params.baseline_run: is the run label itself" in err
