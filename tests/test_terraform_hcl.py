"""Static checks of terraform/: formatting, module layout, and that the stacks agree with the Python side
(variables adapters/terraform.py passes, the `cluster` output ClusterInfo reads). The aws stack cannot be
initialised here (no provider registry), so these parse its HCL instead."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import hcl2
import pytest
import yaml

from adapters import nodestats
from adapters.terraform import TERRAFORM_ROOT, aws_stack_variables, local_stack_variables
from sizing.cluster import ClusterInfo, NodeInfo
from sizing.plan import plan_configs
from sizing.spec import load_campaign

REPO = Path(__file__).resolve().parents[1]
MODULES = ["local_cluster", "aws_network", "aws_rabbitmq_cluster"]
STACKS = ["local", "aws"]


def load(path: Path) -> dict:
    with path.open() as handle:
        return hcl2.load(handle)


def blocks(parsed: dict, kind: str) -> dict[str, dict]:
    """{name: body} of `variable "name" {...}`-style blocks (hcl2 keeps the quotes in names)."""
    return {name.strip('"'): body for block in parsed.get(kind, []) for name, body in block.items()}


def variables(directory: Path) -> dict[str, dict]:
    return blocks(load(directory / "variables.tf"), "variable")


def required(declared: dict[str, dict]) -> set[str]:
    return {name for name, body in declared.items() if "default" not in body}


def cluster_output(module: str) -> dict:
    return blocks(load(TERRAFORM_ROOT / "modules" / module / "outputs.tf"), "output")["cluster"]["value"]


def node_keys(cluster_value: dict) -> list[str]:
    """Keys of the object built per node in the `nodes` for-expression."""
    inner = re.search(r":\s*\{(.*)\}\s*\]", cluster_value["nodes"], re.S)
    assert inner, cluster_value["nodes"]
    return re.findall(r"(?:^|,)\s*(\w+)\s*=", inner.group(1))


def test_terraform_fmt_check():
    result = subprocess.run(["terraform", "fmt", "-check", "-recursive", str(TERRAFORM_ROOT)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("directory", [f"modules/{m}" for m in MODULES] + [f"stacks/{s}" for s in STACKS])
def test_layout(directory):
    for name in ("variables.tf", "main.tf", "outputs.tf", "versions.tf"):
        assert (TERRAFORM_ROOT / directory / name).is_file(), f"{directory}/{name}"


def test_local_stack_validates_offline(tmp_path):
    env = {"TF_DATA_DIR": str(tmp_path), "CHECKPOINT_DISABLE": "1", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    chdir = f"-chdir={TERRAFORM_ROOT / 'stacks' / 'local'}"
    init = subprocess.run(["terraform", chdir, "init", "-backend=false", "-no-color"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stdout + init.stderr
    validate = subprocess.run(["terraform", chdir, "validate", "-json"], env=env, capture_output=True, text=True,
                              timeout=60)
    assert json.loads(validate.stdout)["valid"], validate.stdout


@pytest.mark.parametrize("module", ["local_cluster", "aws_rabbitmq_cluster"])
def test_cluster_output_matches_cluster_info(module):
    value = cluster_output(module)
    top = {f.name for f in dataclasses.fields(ClusterInfo)}
    assert set(value) == top
    assert node_keys(value) == [f.name for f in dataclasses.fields(NodeInfo)]
    assert value["target"] == ('"local"' if module == "local_cluster" else '"aws"')


def test_stacks_pass_their_cluster_output_through():
    for stack in STACKS:
        outputs = blocks(load(TERRAFORM_ROOT / "stacks" / stack / "outputs.tf"), "output")
        assert outputs["cluster"]["value"] == "${module.cluster.cluster}"
        assert {"amqp_uris", "management_urls", "node_names"} <= set(outputs)


def test_stack_variables_match_what_python_passes(tmp_path):
    quick = load_campaign(REPO / "campaigns" / "local-quick.yaml")
    local = set(local_stack_variables(plan_configs(quick)[1], {}, tmp_path))
    declared = variables(TERRAFORM_ROOT / "stacks" / "local")
    assert local <= set(declared), local - set(declared)
    assert required(declared) <= local

    quorum = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    aws = set(aws_stack_variables(plan_configs(quorum)[0], quorum))
    declared = variables(TERRAFORM_ROOT / "stacks" / "aws")
    assert aws <= set(declared), aws - set(declared)
    assert required(declared) <= aws


@pytest.mark.parametrize("stack", STACKS)
def test_module_calls_match_module_variables(stack):
    for call_name, call in blocks(load(TERRAFORM_ROOT / "stacks" / stack / "main.tf"), "module").items():
        source = (TERRAFORM_ROOT / "stacks" / stack / call["source"].strip('"')).resolve()
        declared = variables(source)
        passed = {key for key in call if key not in ("source", "__is_block__")}
        assert passed <= set(declared), f"{call_name}: unknown {passed - set(declared)}"
        assert required(declared) <= passed, f"{call_name}: missing {required(declared) - passed}"


def test_broker_ports_open_only_to_the_load_generator_group():
    text = (TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "main.tf").read_text()
    sg = text[text.index('resource "aws_security_group" "rabbitmq"'):text.index('data "aws_iam_policy_document"')]
    assert "0.0.0.0/0" not in sg.split("egress")[0], "no ingress from anywhere"
    client_rule = sg[sg.index('dynamic "ingress"'):sg.index("ingress {")]
    assert "security_groups = var.client_security_group_ids" in client_rule
    assert re.search(r"amqp\s*=\s*local\.ports\.amqp\s+management", client_rule)
    # the node sampler scrapes node-exporter on the port adapters.nodestats reads (from the generator only)
    assert re.search(r"node_exporter\s*=\s*local\.ports\.node_exporter", client_rule)
    assert re.search(rf"node_exporter = {nodestats.NODE_EXPORTER_PORT}\b", text)
    assert sg.count("self        = true") == 2  # clustering ports only among the nodes
    assert "AmazonSSMManagedInstanceCore" in text


def test_cloud_init_renders_to_valid_yaml(tmp_path):
    """Render the template with the real terraform (templatefile needs no provider) and parse the YAML."""
    template = TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "templates" / "cloud-init.yaml.tftpl"
    nodes = "[for i in range(3) : {number = i + 1, hostname = \"rabbit${i + 1}\", ip = \"10.42.1.${11 + i}\"}]"
    expr = (f'templatefile("{template}", {{hostname = "rabbit1", node_number = 1, node_count = 3, nodes = {nodes}, '
            'cluster_name = "c", erlang_cookie = "COOKIE", username = "u", password = "p", '
            'extra_conf = ["vm_memory_high_watermark.relative = 0.4"]})')
    result = subprocess.run(["terraform", f"-chdir={tmp_path}", "console"], input=expr + "\n", capture_output=True,
                            text=True, timeout=60, env={"CHECKPOINT_DISABLE": "1", "PATH": "/usr/local/bin:/usr/bin"})
    assert result.returncode == 0, result.stderr
    rendered = result.stdout.strip()
    rendered = rendered[rendered.index("<<EOT") + 5:rendered.rindex("EOT")].strip("\n")
    doc = yaml.safe_load(rendered)
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    conf = files["/etc/rabbitmq/rabbitmq.conf"]
    assert "cluster_formation.classic_config.nodes.3 = rabbit@rabbit3" in conf
    assert "vm_memory_high_watermark.relative = 0.4" in conf
    assert "10.42.1.13 rabbit3" in files["/etc/hosts"]
    assert "await_online_nodes 3" in doc["runcmd"][0]
    assert re.search(r"apt-get install .*prometheus-node-exporter", doc["runcmd"][0])
    # the sampler finds the data volume's device through this mount point
    assert f"{nodestats.RABBITMQ_DATA_MOUNT} ext4" in doc["runcmd"][0]
