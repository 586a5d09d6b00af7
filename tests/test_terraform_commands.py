"""adapters/terraform.py and the Airflow TerraformHook: the commands they build, the variables they pass."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.envelope import cluster_cgroup
from adapters.management import wait_healthy
from adapters.terraform import (
    TERRAFORM_ROOT,
    LocalClusterStack,
    TerraformCommand,
    TerraformError,
    TerraformStack,
    apply_command,
    aws_stack_variables,
    destroy_command,
    init_command,
    local_stack_variables,
    network_slot,
    output_command,
    prepare_local_root,
    run,
    trial_stack_variables,
    workspace,
)
from sizing.campaign import load_campaign, parse_campaign
from sizing.planning.plan import ConfigPlan, plan_configs
from sizing.planning.runplan import config_request
from sizing.planning.trialcluster import ClusterRequest
from sizing.resources.cluster import ClusterInfo, unhealthy_nodes
from sizing.resources.localports import LOCAL_MAX_NODES
from sizing.resources.scalemodel import ClusterEnvelopes
from tests.fixtures.cluster import cluster_plan

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick():
    return load_campaign(REPO / "campaigns" / "local-quick.yaml")


def test_workspace_is_per_campaign_and_cluster(tmp_path):
    ws = workspace("local", "camp", "n3-c5.2xlarge-gp2-r1", state_root=tmp_path)
    assert ws.stack_dir == TERRAFORM_ROOT / "stacks" / "local"
    assert ws.state_dir == tmp_path.resolve() / "camp" / "n3-c5.2xlarge-gp2-r1"
    assert ws.state_path == ws.state_dir / "terraform.tfstate"
    assert ws.data_dir == ws.state_dir / ".terraform"
    assert workspace("local", "camp", "other", state_root=tmp_path).state_dir != ws.state_dir
    with pytest.raises(ValueError, match="cluster 'a/b' cannot name a state directory"):
        workspace("local", "camp", "a/b", state_root=tmp_path)
    with pytest.raises(ValueError, match="unknown Terraform target"):
        workspace("gcp", "camp", "k", state_root=tmp_path)


def test_init_command_points_the_local_backend_at_the_workspace(tmp_path):
    ws = workspace("local", "c", "k", state_root=tmp_path)
    cmd = init_command(ws)
    assert cmd.argv == ("terraform", f"-chdir={ws.stack_dir}", "init", "-input=false", "-no-color", "-reconfigure",
                        f"-backend-config=path={ws.state_path}")
    assert cmd.env["TF_DATA_DIR"] == str(ws.data_dir)
    assert cmd.env["CHECKPOINT_DISABLE"] == "1"
    s3 = init_command(ws, "tf", {"bucket": "b", "key": "p/c/k/terraform.tfstate"})
    assert s3.argv[0] == "tf"
    assert s3.argv[-2:] == ("-backend-config=bucket=b", "-backend-config=key=p/c/k/terraform.tfstate")


def test_apply_output_destroy_commands(tmp_path):
    ws = workspace("local", "c", "k", state_root=tmp_path)
    apply = apply_command(ws, var_file=ws.var_file, variables={"node_count": 3, "broker_config": {"a": "b"},
                                                                "campaign": "c"})
    assert apply.argv[:3] == ("terraform", f"-chdir={ws.stack_dir}", "apply")
    assert {"-input=false", "-no-color", "-auto-approve", f"-var-file={ws.var_file}"} <= set(apply.argv)
    assert "-var=node_count=3" in apply.argv
    assert '-var=broker_config={"a": "b"}' in apply.argv
    assert "-var=campaign=c" in apply.argv  # strings go through unquoted
    assert output_command(ws).argv == ("terraform", f"-chdir={ws.stack_dir}", "output", "-json", "-no-color")
    destroy = destroy_command(ws, var_file=ws.var_file)
    assert destroy.argv[2] == "destroy"
    assert "-auto-approve" in destroy.argv and f"-var-file={ws.var_file}" in destroy.argv
    assert all(c.env["TF_DATA_DIR"] == str(ws.data_dir) for c in (apply, destroy))


def test_local_stack_variables_come_from_the_plan_and_broker_config(quick, tmp_path):
    one, three = plan_configs(quick)[:2]
    variables = local_stack_variables(three, {"vm_memory_high_watermark.relative": 0.2, "log.console": True},
                                      tmp_path)
    assert variables == {
        "campaign": "local-quick", "config_id": "n3-c5.2xlarge-gp2", "repeat": 1, "node_count": 3,
        "port_base": 21050, "work_dir": str(tmp_path.resolve()),
        "broker_config": {"vm_memory_high_watermark.relative": "0.2", "log.console": "true"},
        "username": "guest", "password": "guest", "volume_roles": ["data"], "envelope": "",
        "python": sys.executable, "runtime": "host", "rootfs": "", "network_slot": 0, "network_mbit": None,
    }
    assert local_stack_variables(one, {}, tmp_path)["port_base"] == 21000


def test_local_stack_variables_carry_the_envelopes_under_a_cgroup_of_the_state_root(quick, tmp_path):
    three = plan_configs(quick)[1]
    work_dir = tmp_path / "state" / "local-quick" / three.cluster_key / "work"
    envelopes = config_request(quick, three).envelopes
    assert envelopes is not None  # local-quick runs on the default scale model
    sent = json.loads(local_stack_variables(three, {}, work_dir, envelopes=envelopes)["envelope"])
    # the cgroup names the state root's owner and the port block: two checkouts or two clusters never share one
    assert sent["cgroup"] == cluster_cgroup(tmp_path / "state", three.local_port_base)
    assert ClusterEnvelopes.from_dict(sent) == replace(envelopes, cgroup=sent["cgroup"])
    off = parse_campaign({**quick.raw, "scale_model": "off"}, catalog=quick.catalog)
    assert config_request(off, three).envelopes is None


def test_a_trials_nodes_get_links_of_their_envelopes_bandwidth_only_with_a_namespace_each(quick, tmp_path):
    """Issue 46: `network: namespaces` on the scale model: each node's link held to its envelope's bandwidth (the
    catalog's 2.5 Gbps for c5.2xlarge, scaled: 62.5 Mbit/s); on the loopback no slot and no link; with namespaces and
    no scale model, a namespace each and no envelope."""
    three = plan_configs(quick)[1]
    work_dir = tmp_path / "state" / "local-quick" / three.cluster_key / "work"
    namespaced = parse_campaign({**quick.raw, "network": "namespaces"}, catalog=quick.catalog)
    linked = trial_stack_variables(three, config_request(namespaced, three), work_dir)
    assert linked["network_slot"] == network_slot(three.slot) and linked["network_mbit"] == pytest.approx(62.5)
    loopback = trial_stack_variables(three, config_request(quick, three), work_dir)
    assert (loopback["network_slot"], loopback["network_mbit"]) == (0, None)
    unscaled = parse_campaign({**quick.raw, "network": "namespaces", "scale_model": "off"}, catalog=quick.catalog)
    bare = trial_stack_variables(three, config_request(unscaled, three), work_dir)
    assert bare["network_slot"] == network_slot(three.slot) and bare["network_mbit"] is None


def _no_root_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any build of the 4.0 root fails the test (scripts/rootfs.sh would run a 40 s debootstrap)."""
    import adapters.rootfs
    import adapters.terraform

    def refuse(*args, **kwargs):
        raise AssertionError("building variables built the 4.0 root")

    monkeypatch.setattr(adapters.rootfs, "_script", refuse)
    monkeypatch.setattr(adapters.rootfs, "ensure_root", refuse)
    monkeypatch.setattr(adapters.terraform, "ensure_root", refuse)


def _request(plan: ConfigPlan) -> ClusterRequest:
    return ClusterRequest(shape=plan.shape, monthly_cost=0.0, broker_config={}, volume_defaults={}, lifetime_s=60.0)


def test_local_stack_variables_of_a_4_0_config_never_build_its_root(monkeypatch, tmp_path):
    """Issue 47: building variables is pure; the root is the bring-up's step (prepare_local_root), passed in."""
    from plugins.rabbit_sizing.hooks.terraform import TerraformHook

    _no_root_build(monkeypatch)
    plan = cluster_plan(0, 1, rabbitmq_version="4.0")
    variables = local_stack_variables(plan, {}, tmp_path, rootfs=tmp_path / "root")
    assert (variables["runtime"], variables["rootfs"]) == ("chroot", str(tmp_path / "root"))
    with pytest.raises(ValueError, match="prepare its root first"):
        local_stack_variables(plan, {}, tmp_path)  # no root given: refused, not built
    request = _request(plan)
    assert TerraformHook(state_root=tmp_path).variables(plan, request, rootfs="/r")["rootfs"] == "/r"
    assert LocalClusterStack("pytest", plan.cluster_key, state_root=tmp_path).variables(
        plan, request, rootfs="/r")["rootfs"] == "/r"
    # the host runtime needs no root and prepares none
    host = cluster_plan(0, 1)
    assert local_stack_variables(host, {}, tmp_path)["rootfs"] == "" and prepare_local_root(host) is None


def test_the_bring_up_prepares_the_root_before_the_variables(monkeypatch, tmp_path):
    """The hook's and the stack's apply prepare the root as their own step, then build variables naming it."""
    import adapters.terraform
    from plugins.rabbit_sizing.hooks import terraform as hook_module
    from plugins.rabbit_sizing.hooks.terraform import TerraformHook

    _no_root_build(monkeypatch)
    prepared: list[str] = []

    def prepare(plan):
        prepared.append(plan.config_id)
        return tmp_path / "root"

    monkeypatch.setattr(adapters.terraform, "prepare_local_root", prepare)
    monkeypatch.setattr(hook_module, "prepare_local_root", prepare)
    plan = cluster_plan(0, 1, rabbitmq_version="4.0")
    request = _request(plan)
    hook = TerraformHook(state_root=tmp_path / "hook")
    hook.runner = Recorder({"cluster": {"sensitive": True, "value": CLUSTER}})
    hook.apply(plan, request)
    stack = LocalClusterStack(plan.campaign, plan.cluster_key, state_root=tmp_path / "stack",
                              runner=Recorder({"cluster": {"sensitive": True, "value": CLUSTER}}))
    stack.apply(plan, request)
    assert prepared == [plan.config_id, plan.config_id]
    for ws in (hook.stack(plan.campaign, plan.cluster_key).workspace, stack.workspace):
        assert json.loads(ws.var_file.read_text())["rootfs"] == str(tmp_path / "root")


def test_local_stack_takes_what_a_port_block_holds_and_refuses_more(tmp_path):
    """Issue 44: 7 and 9 nodes (seed 000's and 002's deciding clusters) are one port block's; 11 are not."""
    campaign = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    seven = next(p for p in plan_configs(campaign) if p.shape.nodes == 7)
    assert local_stack_variables(seven, {}, tmp_path)["node_count"] == 7
    nine = replace(seven, shape=replace(seven.shape, nodes=9))
    assert local_stack_variables(nine, {}, tmp_path)["node_count"] == 9
    eleven = replace(seven, shape=replace(seven.shape, nodes=LOCAL_MAX_NODES + 1))
    with pytest.raises(ValueError, match=f"at most {LOCAL_MAX_NODES} .its 50-port block"):
        local_stack_variables(eleven, {}, tmp_path)


def test_aws_stack_variables_fill_volume_defaults_from_the_catalog():
    campaign = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    io1 = next(p for p in plan_configs(campaign) if p.shape.volume.type == "io1")
    variables = aws_stack_variables(io1, config_request(campaign, io1), region="eu-west-1")
    (data,) = variables["volumes"]
    assert (data["role"], data["type"], data["mount_point"]) == ("data", "io1", "/var/lib/rabbitmq")
    assert data["size_gb"] == 200 and data["iops"] == 10000
    assert variables["instance_type"] == io1.shape.instance_type and variables["node_count"] == io1.shape.nodes
    assert variables["aws_region"] == "eu-west-1"
    # 600 s apply + 90000 s of load (30 runs of 1800 s, 6 profiles of 6000 s) + 300 s destroy, doubled, plus an
    # hour: 185400 s after the apply
    applied = datetime(2026, 1, 1, tzinfo=UTC)
    expires = aws_stack_variables(io1, config_request(campaign, io1), applied_at=applied)["expires_at"]
    assert expires == "2026-01-03T03:30:00Z"


def test_run_streams_lines_and_fails_clearly(caplog):
    logger = logging.getLogger("t.run")
    with caplog.at_level(logging.INFO, logger="t.run"):
        out = run(TerraformCommand(("sh", "-c", "echo progress >&2; echo '{\"a\": 1}'")), logger, capture_stdout=True)
    assert json.loads(out) == {"a": 1}
    assert "progress" in caplog.text
    with pytest.raises(TerraformError, match=r"exit 3[\s\S]*last words"):
        run(TerraformCommand(("sh", "-c", "echo first; echo last words; exit 3")), logger)


class Recorder:
    def __init__(self, outputs: dict):
        self.calls: list[str] = []
        self.outputs = outputs

    def __call__(self, command: TerraformCommand, logger=None, capture_stdout=False) -> str:
        self.calls.append(command.argv[2])
        return json.dumps(self.outputs) if capture_stdout else ""


CLUSTER = {"target": "local", "cluster_name": "c-k", "username": "guest", "password": "guest", "vhost": "/",
           "ctl_env": {}, "nodes": [{"number": 1, "name": "rabbit-21000-1@localhost", "host": "127.0.0.1",
                                     "amqp_port": 21000, "management_port": 21010}]}


def test_stack_apply_keeps_variables_for_destroy(tmp_path):
    recorder = Recorder({"cluster": {"sensitive": True, "value": CLUSTER}})
    stack = TerraformStack(workspace("local", "c", "k", state_root=tmp_path), runner=recorder)
    stack.destroy()  # never applied: nothing to do, no terraform call
    assert recorder.calls == []
    outputs = stack.apply_variables({"node_count": 1})
    assert recorder.calls == ["init", "apply", "output"]
    assert json.loads(stack.workspace.var_file.read_text()) == {"node_count": 1}
    assert ClusterInfo.from_terraform_outputs(outputs).node(1).amqp_port == 21000
    stack.destroy()
    assert recorder.calls[-2:] == ["init", "destroy"]


def test_unhealthy_nodes_and_wait_healthy_timeout():
    cluster = ClusterInfo.from_dict(CLUSTER)
    assert unhealthy_nodes(cluster, [{"name": "rabbit-21000-1@localhost", "running": True}]) == []
    assert unhealthy_nodes(cluster, [{"name": "rabbit-21000-1@localhost", "running": False}]) == [
        "rabbit-21000-1@localhost"]
    unreachable = ClusterInfo.from_dict({**CLUSTER, "nodes": [{**CLUSTER["nodes"][0], "management_port": 1}]})
    with pytest.raises(TimeoutError, match="not healthy"):
        wait_healthy(unreachable, timeout_s=0.3, interval_s=0.1)


@pytest.mark.tools
def test_real_terraform_rejects_more_local_nodes_than_a_port_block_holds(tmp_path):
    """Offline init + the module's variable validation, with the real terraform binary (no node starts)."""
    stack = TerraformStack(workspace("local", "c", "k", state_root=tmp_path))
    try:
        with pytest.raises(TerraformError, match=f"node_count must be a whole number from 1 to {LOCAL_MAX_NODES}"):
            stack.apply_variables({"campaign": "c", "config_id": "k", "node_count": LOCAL_MAX_NODES + 1,
                                   "port_base": 23000, "work_dir": str(tmp_path / "work")})
    except BaseException:
        # The count got through (the bound moved): the nodes that apply started must not outlive the test, as six
        # once did when the bound went from 5 to 10 before this test's count did.
        stack.destroy()
        raise
    assert (stack.workspace.data_dir / "terraform.tfstate").exists()  # init recorded the backend per workspace
    assert not (stack.workspace.work_dir).exists()


def test_hook_builds_the_same_commands_per_config(tmp_path):
    from plugins.rabbit_sizing.hooks.terraform import TerraformHook, aws_backend_config

    hook = TerraformHook(state_root=tmp_path)
    commands = hook.commands("camp", "n3-c5.2xlarge-gp2")
    ws = workspace("local", "camp", "n3-c5.2xlarge-gp2", state_root=tmp_path)
    assert commands["init"] == init_command(ws)
    assert commands["apply"] == apply_command(ws, var_file=ws.var_file)
    assert commands["output"] == output_command(ws)
    assert commands["destroy"] == destroy_command(ws, var_file=ws.var_file)
    assert hook.commands("camp", "other")["apply"].env["TF_DATA_DIR"] != commands["apply"].env["TF_DATA_DIR"]

    aws = TerraformHook(target="aws", state_root=tmp_path, terraform_bin="/opt/tf")
    aws.backend_settings = {"bucket": "states", "region": "us-east-1"}
    init = aws.commands("camp", "k")["init"]
    assert init.argv[0] == "/opt/tf" and "/stacks/aws" in init.argv[1]
    assert "-backend-config=key=rabbit-sizing/terraform/camp/k/terraform.tfstate" in init.argv
    assert aws_backend_config({"bucket": "b"}, "p/", "c", "k") == {"bucket": "b", "key": "p/c/k/terraform.tfstate"}


def test_hook_variables_match_the_stack(quick, tmp_path):
    from plugins.rabbit_sizing.hooks.terraform import TerraformHook

    plan = plan_configs(quick)[1]
    variables = TerraformHook(state_root=tmp_path).variables(plan, config_request(quick, plan))
    assert variables["port_base"] == plan.local_port_base
    assert variables["work_dir"] == str(tmp_path.resolve() / "local-quick" / "n3-c5.2xlarge-gp2-r1" / "work")
    assert variables["repeat"] == 1


def test_each_repeat_of_a_config_gets_its_own_state_ports_and_name(quick, tmp_path):
    from plugins.rabbit_sizing.hooks.terraform import TerraformHook

    hook = TerraformHook(state_root=tmp_path)
    first, second = (replace(plan_configs(quick)[1], repeat=r, slot=1 + 2 * (r - 1)) for r in (1, 2))
    one, two = (hook.variables(p, config_request(quick, p)) for p in (first, second))
    assert (one["repeat"], two["repeat"]) == (1, 2) and one["config_id"] == two["config_id"]
    assert one["port_base"] != two["port_base"] and one["work_dir"] != two["work_dir"]
    assert (hook.commands("local-quick", first.cluster_key)["apply"].env["TF_DATA_DIR"]
            != hook.commands("local-quick", second.cluster_key)["apply"].env["TF_DATA_DIR"])
    aws = aws_stack_variables(second, config_request(quick, second))
    assert aws["repeat"] == 2 and aws["config_id"] == "n3-c5.2xlarge-gp2"


def test_a_local_port_block_past_65535_is_refused(quick, tmp_path):
    plan = replace(plan_configs(quick)[0], slot=(65536 - 21000) // 50, repeat=4)
    with pytest.raises(ValueError, match=r"n1-c5\.2xlarge-gp2-r4 would need ports from 65500"):
        local_stack_variables(plan, {}, tmp_path)



def test_a_failed_command_leads_with_its_reason():
    from adapters.terraform import failure_reason

    script = ["module.local_cluster...: Creating...",
              "module.cluster.terraform_data.cluster_dir (local-exec): error: port 21010 (management of node 1) is in "
              "use by pid 7",
              "│ Error: local-exec provisioner error", "│ error: port 21010 (management of node 1) is in use"]
    assert failure_reason(script) == "error: port 21010 (management of node 1) is in use by pid 7"
    assert failure_reason(["│ Error: Invalid value for variable", "│ on main.tf line 3"]) == (
        "Error: Invalid value for variable")
    assert failure_reason(["plain output"]) == "see its output below"
