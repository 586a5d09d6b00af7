"""Pure pieces of the orchestration: spec parameter, planning with filters and slot offset, leases,
the load-generator command and what the ECS task would be sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rabbit_sizing.hooks.loadgen import LoadgenRun, ecs_overrides, local_command

from adapters.leases import LeaseBoard
from adapters.planning import load_spec_param, slot_offset, validate_run
from sizing.campaign import load_campaign
from sizing.contract.raw_layout import manifest_key, raw_run_prefix
from sizing.documents.fields import SpecError
from sizing.planning.plan import Trial
from sizing.planning.runplan import (
    CampaignRun,
    complete_configs,
    config_partitions,
    failed_tasks,
    owner_id,
    plan_run_trials,
    run_keys,
    stale_repeat_keys,
)

PARAMS = {"campaign": "campaigns/local-quick.yaml", "configs": [], "scenarios": [], "run_label": "r1",
          "max_parallel_configs": None}


def test_validate_run_defaults_to_one_cluster_at_a_time_locally(tmp_path: Path):
    run = validate_run(PARAMS, tmp_path)
    assert run.campaign == "local-quick" and run.deployment == "local" and run.max_parallel_configs == 1
    assert Path(run.spec_path).parent == tmp_path and Path(run.spec_path).read_text().startswith("name: local-quick")
    assert CampaignRun.from_dict(run.to_dict()) == run


def test_validate_run_reports_every_param_problem_at_once(tmp_path: Path):
    bad = {**PARAMS, "configs": ["n9-nope-gp2"], "scenarios": ["nope"], "run_label": "a/b", "max_parallel_configs": 0,
           "baseline_run": "x/y"}
    with pytest.raises(SpecError) as err:
        validate_run(bad, tmp_path)
    assert err.value.paths() == ["params.configs", "params.scenarios", "params.run_label",
                                 "params.max_parallel_configs", "params.baseline_run"]
    assert "n1-c5.2xlarge-gp2" in str(err.value)  # names the configs that do exist
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_campaign_param_that_names_no_spec_is_refused_with_the_other_param_problems(tmp_path: Path):
    with pytest.raises(SpecError) as err:
        validate_run({**PARAMS, "campaign": 3, "run_label": "a/b"}, tmp_path)
    assert err.value.paths() == ["params.campaign", "params.run_label"]


def test_validate_run_passes_on_the_specs_warnings_from_its_one_parse(tmp_path: Path):
    said: list[str] = []
    validate_run({**PARAMS, "campaign": "campaigns/quorum-sizing-2020.yaml"}, tmp_path, say=said.append)
    # the seed study's known warning (tests/test_version_rules.py): 3.10 ignores x-max-in-memory-length
    assert [line.split(": ")[1] for line in said] == ["workload.queues.arguments.x-max-in-memory-length"]
    assert said[0].startswith("warning: ")
    said.clear()
    validate_run(PARAMS, tmp_path, say=said.append)
    assert not any(line.startswith(("warning:", "note:")) for line in said)  # local-quick has none
    # what its envelopes hold here, as `sizing validate` says
    assert said and said[0].startswith("scale model (the default model):")


def test_a_baseline_run_travels_with_the_run_and_is_never_the_run_itself(tmp_path: Path):
    run = validate_run({**PARAMS, "baseline_run": "r0"}, tmp_path)
    assert run.baseline_run == "r0" and CampaignRun.from_dict(run.to_dict()) == run
    with pytest.raises(SpecError, match=r"params\.baseline_run: is the run label itself"):
        validate_run({**PARAMS, "baseline_run": PARAMS["run_label"]}, tmp_path)


def test_a_local_spec_asking_for_another_rabbitmq_version_is_refused(tmp_path: Path):
    """The local target runs the installed rabbitmq-server (read from its release directory, no node started):
    asking for another version fails validation naming the field, before anything runs."""
    from adapters.installed import installed_rabbitmq_version

    installed = installed_rabbitmq_version()
    assert installed and installed.count(".") == 2  # Debian 12's 3.10.8 on this machine
    other = "3.13" if not installed.startswith("3.13") else "3.12"
    spec = "extends: local-quick.yaml\nname: pinned\nclusters:\n  list:\n" \
           "    - {{nodes: 1, instance_type: c5.2xlarge, volume: gp2, rabbitmq_version: '{}'}}\n"
    with pytest.raises(SpecError) as err:
        validate_run({**PARAMS, "campaign": spec.format(other)}, tmp_path)
    assert err.value.paths() == ["clusters.list[0].rabbitmq_version"]
    assert f"asks for RabbitMQ {other}, but the local target runs the installed {installed}" in str(err.value)
    assert list(tmp_path.iterdir()) == []  # nothing written
    # the installed version itself (or its series) is accepted, and names the config
    for version in (installed, ".".join(installed.split(".")[:2])):
        run = validate_run({**PARAMS, "campaign": spec.format(version), "configs": []}, tmp_path)
        assert load_spec_param(spec.format(version)).clusters[0].config_id == f"n1-c5.2xlarge-gp2-rmq{version}"
        assert run.campaign == "pinned"
    # 4.0 runs in the chroot runtime's root (not built by validation); a 4.0 release other than the root's is refused
    run = validate_run({**PARAMS, "campaign": spec.format("4.0"), "configs": []}, tmp_path)
    assert load_spec_param(spec.format("4.0")).clusters[0].config_id == "n1-c5.2xlarge-gp2-rmq4.0"
    with pytest.raises(SpecError, match=r"asks for RabbitMQ 4\.0\.99, but the local 4\.0 runtime runs Debian 13's"):
        validate_run({**PARAMS, "campaign": spec.format("4.0.99")}, tmp_path)


def test_invalid_spec_names_the_field(tmp_path: Path):
    inline = "name: x\ndeployment: local\ncatalog: aws-us-east-1-2020\n"
    with pytest.raises(SpecError) as err:
        validate_run({**PARAMS, "campaign": inline}, tmp_path)
    assert "target" in " ".join(err.value.paths())
    with pytest.raises(SpecError, match="does not exist"):
        load_spec_param("campaigns/none.yaml")


def test_inline_spec_with_extends_resolves_against_campaigns(tmp_path: Path):
    campaign = load_spec_param("extends: local-quick.yaml\nname: inline-quick\nrepeats: 2\n")
    quick = load_spec_param("campaigns/local-quick.yaml")
    assert campaign.name == "inline-quick" and campaign.repeats == 2 and campaign.clusters == quick.clusters


def test_plan_filters_and_shifts_slots(tmp_path: Path):
    run = validate_run({**PARAMS, "configs": ["n3-c5.2xlarge-gp2"], "scenarios": ["broker-kill"]}, tmp_path)
    (config,) = plan_run_trials(run, load_campaign(run.spec_path), offset=30)
    # Slot = position in the full campaign (1) + offset: a backfill of one config reuses its ports.
    assert config.slot == 31 and config.local_port_base == 21000 + 50 * 31
    assert config.repeat == 1 and config.cluster_key == "n3-c5.2xlarge-gp2-r1"
    assert config.scenarios == ("broker-kill",) and config.run_label == "r1"
    assert config.max_parallel_configs == 1 and config.deployment == "local"
    # What travels through XCom: JSON, with the derived names the UI labels and templates use.
    as_json = json.loads(json.dumps(config.to_dict()))
    assert as_json["cluster_key"] == "n3-c5.2xlarge-gp2-r1" and as_json["local_port_base"] == 21000 + 50 * 31
    assert Trial.from_dict(as_json) == config
    assert [raw_run_prefix(k) for k in run_keys(config)] == [
        "raw/campaign=local-quick/config=n3-c5.2xlarge-gp2/scenario=broker-kill/run=r1/repeat=1/"]
    assert config_partitions("local-quick", "n3-c5.2xlarge-gp2") == [
        "raw/campaign=local-quick/config=n3-c5.2xlarge-gp2/",
        "tables/phase_summary/campaign=local-quick/config=n3-c5.2xlarge-gp2/",
        # issue 35: the per-second series and the run's events are the config's too
        *(f"tables/{t}/campaign=local-quick/config=n3-c5.2xlarge-gp2/"
          for t in ("client_series", "broker_series", "node_series", "run_events"))]


def test_every_repeat_is_a_trial_on_its_own_cluster(tmp_path: Path):
    run = validate_run({**PARAMS, "campaign": "campaigns/ci-tiny.yaml"}, tmp_path)  # 2 configs x 3 repeats
    trials = plan_run_trials(run, load_campaign(run.spec_path), offset=30)
    # Repeat-major: every config's repeat 1 first, so drift over the session spreads over all configs.
    assert [(t.config_id[3:], t.repeat) for t in trials] == [
        ("c5.2xlarge-gp2", 1), ("c5.4xlarge-gp2", 1), ("c5.2xlarge-gp2", 2), ("c5.4xlarge-gp2", 2),
        ("c5.2xlarge-gp2", 3), ("c5.4xlarge-gp2", 3)]
    # Each trial has its own port block, cluster key (Terraform state, cluster name) and lease owner.
    assert [t.slot for t in trials] == [30, 31, 32, 33, 34, 35]
    assert len({t.cluster_key for t in trials}) == 6
    assert len({owner_id("d", "run", t.cluster_key) for t in trials}) == 6
    # A trial's load runs are its own repeat of every scenario, and only those.
    assert [(k.scenario, k.repeat) for k in run_keys(trials[3])] == [("steps", 2)]
    assert [raw_run_prefix(k) for k in run_keys(trials[3])] == [
        "raw/campaign=ci-tiny/config=n1-c5.4xlarge-gp2/scenario=steps/run=r1/repeat=2/"]
    # Backfill of one config: all its repeats, on the same ports as in the full plan.
    backfill = validate_run({**PARAMS, "campaign": "campaigns/ci-tiny.yaml", "configs": ["n1-c5.4xlarge-gp2"]},
                            tmp_path)
    trials = plan_run_trials(backfill, load_campaign(backfill.spec_path), offset=30)
    assert [(t.repeat, t.slot) for t in trials] == [(1, 31), (2, 33), (3, 35)]


def test_only_configs_with_every_repeat_landed_are_analysed(tmp_path: Path):
    run = validate_run({**PARAMS, "campaign": "campaigns/ci-tiny.yaml"}, tmp_path)
    trials = plan_run_trials(run, load_campaign(run.spec_path))
    landed = {manifest_key(k) for t in trials for k in run_keys(t)}
    everything = complete_configs(trials, landed.__contains__)
    assert [c.config_id for c in everything] == ["n1-c5.2xlarge-gp2", "n1-c5.4xlarge-gp2"]  # once each
    # Repeat 2 of the second config failed: that config is left out, the first is still analysed.
    lost = manifest_key(run_keys(trials[3])[0])
    partial = complete_configs(trials, (landed - {lost}).__contains__)
    assert [c.config_id for c in partial] == ["n1-c5.2xlarge-gp2"]
    assert complete_configs(trials, lambda key: False) == []


def test_a_rerun_with_fewer_repeats_drops_the_repeats_it_no_longer_makes(tmp_path: Path):
    run = validate_run({**PARAMS, "campaign": "campaigns/ci-tiny.yaml"}, tmp_path)  # 3 repeats of "steps"
    trial = plan_run_trials(run, load_campaign(run.spec_path))[0]
    config = "raw/campaign=ci-tiny/config=n1-c5.2xlarge-gp2/"
    keys = [f"{config}scenario=steps/run=r1/repeat={r}/{part}" for r in (1, 3, 4, 12)
            for part in ("manifest.json", "phases/part-0.parquet")]
    keys += [f"{config}scenario=steps/run=older/repeat=5/manifest.json",  # another run label: not this run's
             f"{config}scenario=gone/run=r1/repeat=5/manifest.json",  # a scenario this run does not make
             "raw/campaign=ci-tiny/config=n1-c5.4xlarge-gp2/scenario=steps/run=r1/repeat=4/manifest.json"]
    assert stale_repeat_keys(trial, keys) == keys[4:8]  # repeats 4 and 12 of this config and label
    assert stale_repeat_keys(trial, keys[:4]) == []


def test_failed_tasks_are_what_fails_the_run():
    states = {"cluster.terraform_apply_0": "success", "cluster.run_scenarios_1": "failed",
              "cluster.upload_1": "upstream_failed", "cluster.terraform_destroy_1": "success",
              "cluster.wait_for_slot_2": None}
    assert failed_tasks(states) == ["cluster.run_scenarios_1", "cluster.upload_1"]
    assert failed_tasks({"cluster.upload_0": "success"}) == []


def test_slot_offset_from_env():
    assert slot_offset({}) == 0 and slot_offset({"SIZING_SLOT_OFFSET": "30"}) == 30
    with pytest.raises(ValueError):
        slot_offset({"SIZING_SLOT_OFFSET": "-1"})


def test_leases_bound_clusters_across_owners(tmp_path: Path):
    board = LeaseBoard(tmp_path)
    a = board.try_acquire("run/a", 1)
    assert a is not None and a.slot == 0
    assert board.try_acquire("run/b", 1) is None  # slot busy
    assert board.try_acquire("run/a", 1) == a  # re-entrant (sensor retried)
    assert board.try_acquire("run/b", 2).slot == 1  # a run allowing 2 clusters gets the second slot
    assert board.release("run/a") and not board.release("run/a")
    assert board.holders() == {1: "run/b"}
    assert board.clear() == 1 and board.holders() == {}


RUN = LoadgenRun(spec_path="/s/local-quick-abc.yaml", config_id="n1-c5.2xlarge-gp2", scenario="broker-kill",
                 run_id="r1", repeat=2, cluster_json="/s/cluster.json", workers=2)


def test_local_command():
    assert local_command(RUN, python="/py") == [
        "/py", "-m", "loadgen", "run", "--campaign", "/s/local-quick-abc.yaml", "--config", "n1-c5.2xlarge-gp2",
        "--scenario", "broker-kill", "--run-id", "r1", "--repeat", "2", "--cluster-json", "/s/cluster.json",
        "--workers", "2"]


def test_ecs_overrides_carry_command_and_env_but_no_keys():
    env = {"SIZING_S3_BUCKET": "b", "AWS_DEFAULT_REGION": "us-east-1", "AWS_SECRET_ACCESS_KEY": "secret"}
    overrides = ecs_overrides(RUN, "loadgen", env, cpu=4096, memory_mb=8192)
    (container,) = overrides["containerOverrides"]
    assert container["name"] == "loadgen" and container["cpu"] == 4096 and container["memory"] == 8192
    assert container["command"][:4] == ["python", "-m", "loadgen", "run"]
    assert container["command"][container["command"].index("--scenario") + 1] == "broker-kill"
    assert {e["name"] for e in container["environment"]} == {"SIZING_S3_BUCKET", "AWS_DEFAULT_REGION"}


def test_ecs_run_task_operator_is_what_the_aws_target_sends():
    from rabbit_sizing.operators.loadgen import EcsSettings, ecs_run_task_operator

    settings = EcsSettings.from_env({"SIZING_ECS_CLUSTER": "sizing", "SIZING_ECS_TASK_DEFINITION": "loadgen:3",
                                     "SIZING_ECS_SUBNETS": "subnet-1, subnet-2", "SIZING_ECS_SECURITY_GROUPS": "sg-1",
                                     "SIZING_ECS_LOG_GROUP": "/sizing/loadgen"})
    op = ecs_run_task_operator(RUN, settings, {"SIZING_S3_BUCKET": "b"}, task_id="t")
    assert type(op).__name__ == "EcsRunTaskOperator"
    assert op.cluster == "sizing" and op.task_definition == "loadgen:3" and op.launch_type == "FARGATE"
    assert op.network_configuration["awsvpcConfiguration"]["subnets"] == ["subnet-1", "subnet-2"]
    assert op.overrides["containerOverrides"][0]["command"][-4:] == ["--cluster-json", "/s/cluster.json",
                                                                      "--workers", "2"]
    assert op.awslogs_group == "/sizing/loadgen" and op.wait_for_completion is True
    with pytest.raises(ValueError, match="SIZING_ECS_CLUSTER"):
        EcsSettings.from_env({})


def test_cluster_health_verdict_from_one_management_answer():
    from sizing.resources.cluster import ClusterInfo, Health, NodeInfo
    from sizing.resources.cluster import assess_health as assess

    cluster = ClusterInfo("local", "t", tuple(
        NodeInfo(i, f"rabbit-{i}@localhost", "127.0.0.1", 22000 + 10 * i, 22001 + 10 * i) for i in (1, 2, 3)))
    assert not assess(cluster, None, True).healthy
    two = [{"name": "rabbit-1@localhost", "running": True}, {"name": "rabbit-2@localhost", "running": True},
           {"name": "rabbit-3@localhost", "running": False}]
    verdict = assess(cluster, two, True)
    assert not verdict.healthy and verdict.reason == "2/3 nodes running; waiting for ['rabbit-3@localhost']"
    three = [{**n, "running": True} for n in two]
    assert assess(cluster, three, False) == Health(False, "a resource alarm is raised")
    assert assess(cluster, three, True).healthy


def test_a_run_putting_more_envelopes_up_at_once_than_fit_the_machine_is_refused(tmp_path: Path, monkeypatch):
    """The campaign's own budget runs one config at a time and fits a 2-core machine (1.08 + 0.6 cores); the run's
    max_parallel_configs of 2 puts the two largest configs (both 3x c5.9xlarge) and two generators up at once
    (3.47 cores, 38.7 GiB: 6 x 36 vCPUs x 0.0105 + 2 x 0.6 cores, the factor the one rule fits to one config up at
    a time; 6 x (72 GiB x 80 MiB + 160 MiB idle) + 2 x 2 GiB), which do not (1.75 cores and 20 GiB
    are left beside what the machine keeps for the rest). Known answer: the machine is fixed at 2 cores and 24 GiB,
    whatever this host has."""
    import adapters.envelope
    from sizing.resources.scalemodel import GIB, Machine

    monkeypatch.setattr(adapters.envelope, "machine", lambda: Machine(cores=2.0, memory_bytes=24 * GIB))
    scale = {**PARAMS, "campaign": "campaigns/quorum-sizing-scale.yaml"}
    assert validate_run({**scale, "max_parallel_configs": 1}, tmp_path).max_parallel_configs == 1
    with pytest.raises(SpecError) as err:
        validate_run({**scale, "max_parallel_configs": 2}, tmp_path / "refused")
    assert err.value.paths() == ["params.max_parallel_configs"] * 2  # cores, then memory
    assert "3.47 cores and 38.7 GiB" in str(err.value) and "n3-c5.9xlarge-io1 + n3-c5.9xlarge-gp2" in str(err.value)
    assert not (tmp_path / "refused").exists()  # nothing written
    # a run of one config is one cluster up at a time, whatever its max_parallel_configs
    one = validate_run({**scale, "max_parallel_configs": 2, "configs": ["n3-c5.9xlarge-io1"]}, tmp_path / "one")
    assert one.max_parallel_configs == 2 and one.configs == ("n3-c5.9xlarge-io1",)


@pytest.mark.parametrize("spec", ["local-quick.yaml", "quorum-sizing-2020.yaml", "existing-example.yaml"])
def test_a_trial_carries_what_its_cluster_tasks_need_so_none_reads_the_spec(spec, tmp_path: Path):
    """Issue 35: the cluster tasks work from the trial alone (as XCom carries it), the spec file gone. What they get
    is what re-planning from the spec gave (the removed plan_and_campaign: plan_configs with the trial's slot and
    repeat, and the campaign), for each target: local (its scale model's envelopes), aws (the Terraform variables,
    catalog volume defaults and expiry lifetime included) and existing (the running cluster, the objects teardown
    deletes)."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from rabbit_sizing.sensors.cluster import slot_wait_bound_s

    from adapters.terraform import aws_stack_variables, local_stack_variables
    from sizing.campaign.envelopes import config_envelopes
    from sizing.planning.plan import campaign_cost, plan_configs, trial_lifetime_s
    from sizing.resources.existing import campaign_objects

    copy = tmp_path / spec
    copy.write_text((Path("campaigns") / spec).read_text())
    campaign = load_campaign(copy)
    run = CampaignRun(campaign.name, str(copy), campaign.spec_hash, campaign.deployment, "r1", (), (), 2)
    planned = plan_run_trials(run, campaign, offset=7)
    copy.unlink()  # what a worker that never saw the spec has
    for trial in (Trial.from_dict(json.loads(json.dumps(t.to_dict()))) for t in planned):
        (config,) = plan_configs(campaign, [trial.config_id])
        assert trial.config_plan == replace(config, slot=trial.slot, repeat=trial.repeat)
        assert trial.cluster.broker_config == campaign.broker_config
        assert trial.cluster.envelopes == config_envelopes(campaign, config.shape)
        assert trial.cluster.lifetime_s == trial_lifetime_s(campaign)
        assert slot_wait_bound_s(trial) == max(1800.0, 2 * campaign_cost(campaign, 2).wall_s + 600)
        if campaign.deployment == "aws":
            from sizing.planning.runplan import config_request

            applied = datetime(2026, 1, 1, tzinfo=UTC)
            old = aws_stack_variables(trial.config_plan, config_request(campaign, config), applied_at=applied)
            assert aws_stack_variables(trial.config_plan, trial.cluster, applied_at=applied) == old
        if campaign.deployment == "local":
            assert local_stack_variables(trial.config_plan, trial.cluster.broker_config, tmp_path / "a" / "b" / "c",
                                         envelopes=trial.cluster.envelopes)["port_base"] == trial.local_port_base
        if campaign.deployment == "existing":
            assert trial.cluster.existing == campaign.existing
            assert trial.cluster.objects == campaign_objects(campaign) and trial.cluster.objects.queues
        else:
            assert trial.cluster.existing is None and trial.cluster.objects is None
    if spec == "quorum-sizing-2020.yaml":  # the catalog's io1 default (seed catalog): 200 GB at 10000 IOPS
        io1 = next(t for t in planned if t.cluster.shape.volume.type == "io1")
        assert io1.cluster.volume_defaults["io1"].size_gb == 200 and io1.cluster.volume_defaults["io1"].iops == 10000

