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

from adapters import nodestats, terraformdocs
from adapters.terraform import TERRAFORM_ROOT, aws_stack_variables, local_stack_variables
from sizing.campaign import load_campaign, parse_campaign
from sizing.planning.plan import plan_configs
from sizing.planning.runplan import config_request
from sizing.resources.cluster import ClusterInfo, NodeInfo
from sizing.resources.disks import FILESYSTEMS, VOLUME_ROLES
from sizing.resources.localports import LOCAL_CLI_PORTS, LOCAL_MAX_NODES, LOCAL_NODE_PORT_OFFSETS

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


@pytest.mark.tools
def test_terraform_fmt_check():
    result = subprocess.run(["terraform", "fmt", "-check", "-recursive", str(TERRAFORM_ROOT)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("directory", [f"modules/{m}" for m in MODULES] + [f"stacks/{s}" for s in STACKS])
def test_layout(directory):
    for name in ("variables.tf", "main.tf", "outputs.tf", "versions.tf", "README.md"):
        assert (TERRAFORM_ROOT / directory / name).is_file(), f"{directory}/{name}"


@pytest.mark.parametrize("directory", [f"modules/{m}" for m in MODULES] + [f"stacks/{s}" for s in STACKS])
def test_every_variable_has_a_description_and_a_type_and_every_output_a_description(directory):
    # what `terraform-docs` and a caller's editor show; the README tables of each module and stack repeat them
    undocumented = [f"variable {name}: no {key}" for name, body in variables(TERRAFORM_ROOT / directory).items()
                    for key in ("description", "type") if key not in body]
    outputs = blocks(load(TERRAFORM_ROOT / directory / "outputs.tf"), "output")
    undocumented += [f"output {name}: no description" for name, body in outputs.items() if "description" not in body]
    assert undocumented == [], f"{directory}: {undocumented}"


def test_the_lists_above_name_every_module_and_stack():
    assert [p.relative_to(TERRAFORM_ROOT).as_posix() for p in terraformdocs.directories()] == sorted(
        [f"modules/{m}" for m in MODULES] + [f"stacks/{s}" for s in STACKS])


@pytest.mark.parametrize("directory", terraformdocs.directories(),
                         ids=lambda p: p.relative_to(TERRAFORM_ROOT).as_posix())
def test_each_readme_tables_the_inputs_and_outputs_as_the_hcl_states_them(directory):
    assert terraformdocs.tables(directory) in (directory / "README.md").read_text(), \
        f"{directory}/README.md is stale: regenerate it with python -m adapters.terraformdocs"


@pytest.mark.tools
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
    first = plan_configs(quorum)[0]
    aws = set(aws_stack_variables(first, config_request(quorum, first)))
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


TEMPLATE = TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "templates" / "cloud-init.yaml.tftpl"
AWS_MAIN = TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "main.tf"


def unquote(value):
    """python-hcl2 keeps the quotes of string literals inside lists and maps."""
    if isinstance(value, str):
        return value.strip('"')
    if isinstance(value, list):
        return [unquote(v) for v in value]
    if isinstance(value, dict):
        return {k: unquote(v) for k, v in value.items()}
    return value


def templatefile_keys() -> set[str]:
    """The keys main.tf passes to templatefile() for the cloud-init user_data."""
    instance = next(b['"aws_instance"'] for b in load(AWS_MAIN)["resource"] if '"aws_instance"' in b)
    call = instance['"node"']["user_data"]
    return set(re.findall(r"[{,]\s*(\w+)\s*=", call[call.index("{"):]))


def render_cloud_init(tmp_path: Path, stack_variables: dict, node_number: int = 1) -> dict:
    """The template rendered by the real terraform (templatefile needs no provider), with the values main.tf
    passes: volumes and filesystem straight from the aws stack variables Python builds, role_dirs from main.tf."""
    role_dirs = unquote(load(AWS_MAIN)["locals"][0]["role_dirs"])
    n = stack_variables["node_count"]
    values = {
        "hostname": f"rabbit{node_number}", "node_number": node_number, "node_count": n,
        "nodes": [{"number": i + 1, "hostname": f"rabbit{i + 1}", "ip": f"10.42.1.{11 + i}"} for i in range(n)],
        "cluster_name": "c", "erlang_cookie": "COOKIE", "username": "u", "password": "p",
        "extra_conf": [f"{k} = {v}" for k, v in sorted(stack_variables["broker_config"].items())]
        or ["vm_memory_high_watermark.relative = 0.4"],
        "volumes": stack_variables["volumes"], "filesystem": stack_variables["filesystem"], "role_dirs": role_dirs,
        # main.tf passes "" for a null version (Debian's own rabbitmq-server)
        "rmq_package": stack_variables["rabbitmq_package"] or "",
        "erlang_series": stack_variables["erlang_series"] or "",
    }
    assert set(values) == templatefile_keys(), "the test passes what main.tf passes"
    (tmp_path / "values.json").write_text(json.dumps(values))
    expr = f'templatefile("{TEMPLATE}", jsondecode(file("values.json")))'
    result = subprocess.run(["terraform", f"-chdir={tmp_path}", "console"], input=expr + "\n", capture_output=True,
                            text=True, timeout=60, env={"CHECKPOINT_DISABLE": "1", "PATH": "/usr/local/bin:/usr/bin"})
    assert result.returncode == 0, result.stderr
    rendered = result.stdout.strip()
    rendered = rendered[rendered.index("<<EOT") + 5:rendered.rindex("EOT")].strip("\n")
    return yaml.safe_load(rendered)


@pytest.mark.tools
def test_cloud_init_renders_to_valid_yaml(tmp_path):
    quorum = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    config = next(p for p in plan_configs(quorum) if p.shape.nodes == 3)
    doc = render_cloud_init(tmp_path, aws_stack_variables(config, config_request(quorum, config)))
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    conf = files["/etc/rabbitmq/rabbitmq.conf"]
    assert "cluster_formation.classic_config.nodes.3 = rabbit@rabbit3" in conf
    assert "10.42.1.13 rabbit3" in files["/etc/hosts"]
    assert "await_online_nodes 3" in doc["runcmd"][0]
    assert re.search(r"apt-get install .*prometheus-node-exporter", doc["runcmd"][0])
    # the sampler finds the data volume's device through this mount point
    assert f"LABEL=rmq-data {nodestats.RABBITMQ_DATA_MOUNT} " in doc["runcmd"][0]
    # One volume: everything on it, the quorum dirs left to RabbitMQ's default (under the Mnesia dir)
    env = files["/etc/rabbitmq/rabbitmq-env.conf"]
    assert "RABBITMQ_MNESIA_BASE=/var/lib/rabbitmq/mnesia" in env and "RABBITMQ_LOG_BASE=/var/lib/rabbitmq/log" in env
    assert "QUORUM_DIR" not in env and "wal_data_dir" not in files["/etc/rabbitmq/advanced.config"]
    assert doc["runcmd"][0].count("mkfs.") == 1


@pytest.mark.tools
def test_cloud_init_of_a_three_volume_node_mounts_and_points_rabbitmq_at_each(tmp_path):
    """Seed 001's rabbitmq16 (data/logs, segments, WAL on their own st1 drives), node 2 of 3, xfs: the mounts,
    the filesystem and the RabbitMQ directories all come from the stack variables Python builds."""
    st1 = {"type": "st1", "size_gb": 1000}
    spec = {
        "name": "disks", "deployment": "aws", "catalog": "aws-us-east-1-2020",
        "target": {"rate": 1000, "p99_latency_ms": 500},
        "workload": {"queues": {"count": 1, "type": "quorum"}, "message": {"size_bytes": 1024},
                     "publishers": {"count": 1, "confirms_in_flight": 10}, "consumers": {"count": 1, "prefetch": 10}},
        "clusters": {"list": [{"nodes": 3, "instance_type": "c4.4xlarge", "filesystem": "xfs", "volumes": [
            {"role": "data", **st1}, {"role": "segments", **st1}, {"role": "wal", **st1}]}]},
        "scenarios": [{"name": "steps", "steps": {"rates": [1000], "duration_s": 60}}],
    }
    campaign = parse_campaign(spec)
    (config,) = plan_configs(campaign)
    variables = aws_stack_variables(config, config_request(campaign, config))
    assert [(v["role"], v["device_name"], v["mount_point"], v["size_gb"]) for v in variables["volumes"]] == [
        ("data", "/dev/sdf", "/var/lib/rabbitmq", 1000), ("wal", "/dev/sdh", "/var/lib/rabbitmq-wal", 1000),
        ("segments", "/dev/sdi", "/var/lib/rabbitmq-segments", 1000)]
    doc = render_cloud_init(tmp_path, variables, node_number=2)
    script = doc["runcmd"][0]
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    for role, device, mount in [("data", "/dev/sdf", "/var/lib/rabbitmq"), ("wal", "/dev/sdh", "/var/lib/rabbitmq-wal"),
                                ("segments", "/dev/sdi", "/var/lib/rabbitmq-segments")]:
        assert f"dev=$(find_device {device})" in script
        assert f'mkfs.xfs -q -L rmq-{role} "$dev"' in script
        assert f"LABEL=rmq-{role} {mount} xfs defaults,noatime 0 2" in script
        assert f"mount {mount}\n" in script and f"chown -R rabbitmq:rabbitmq {mount}\n" in script
    assert script.count("mkfs.xfs") == 3 and "mkfs.ext4" not in script
    # volumes are mounted before RabbitMQ is installed (its package starts the broker on the default dirs)
    assert script.rindex("mount /var/lib/rabbitmq-segments") < script.index("apt-get install -y -q rabbitmq-server")
    assert "mkdir -p /var/lib/rabbitmq-wal/wal" in script and "mkdir -p /var/lib/rabbitmq-segments/quorum" in script
    env = files["/etc/rabbitmq/rabbitmq-env.conf"].splitlines()
    assert env == ["NODENAME=rabbit@rabbit2", "RABBITMQ_MNESIA_BASE=/var/lib/rabbitmq/mnesia",
                   "RABBITMQ_LOG_BASE=/var/lib/rabbitmq/log", "RABBITMQ_QUORUM_DIR=/var/lib/rabbitmq-segments/quorum"]
    advanced = "".join(files["/etc/rabbitmq/advanced.config"].split())
    assert advanced == '[{ra,[{wal_data_dir,"/var/lib/rabbitmq-wal/wal"}]}].'
    assert "await_online_nodes" not in script  # node 2 does not create the user


def test_python_and_terraform_agree_on_roles_and_filesystems():
    """The roles and filesystems the Terraform variables accept are sizing.resources.disks' (one home, checked here)."""
    for module, name in [("aws_rabbitmq_cluster", "volumes"), ("local_cluster", "volume_roles")]:
        text = (TERRAFORM_ROOT / "modules" / module / "variables.tf").read_text()
        block = text[text.index(f'variable "{name}"'):]
        roles = re.search(r'contains\(\[("data", "logs", "wal", "segments")\]', block)
        assert roles and tuple(r.strip('"') for r in roles.group(1).split(", ")) == VOLUME_ROLES
    text = (TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "variables.tf").read_text()
    assert 'contains(["ext4", "xfs"], var.filesystem)' in text and FILESYSTEMS == ("ext4", "xfs")
    assert set(unquote(load(AWS_MAIN)["locals"][0]["role_dirs"])) == set(VOLUME_ROLES)


@pytest.mark.tools
def test_cloud_init_installs_the_rabbitmq_version_a_config_asks_for(tmp_path):
    """Issue 24: `rabbitmq_versions` is a matrix dimension on aws. Each config's cloud-init installs its version from
    Team RabbitMQ's apt repositories with the Erlang series sizing.resources.versions pins for it; a config without one
    keeps Debian's rabbitmq-server (3.10), as before."""
    spec = {
        "name": "versions", "deployment": "aws", "catalog": "aws-us-east-1-2020",
        "target": {"rate": 1000, "p99_latency_ms": 500},
        "workload": {"queues": {"count": 1, "type": "quorum"}, "message": {"size_bytes": 1024},
                     "publishers": {"count": 1, "confirms_in_flight": 10}, "consumers": {"count": 1, "prefetch": 10}},
        "clusters": {"matrix": {"nodes": [3], "instance_types": ["c5.2xlarge"], "volumes": ["gp2"],
                                "rabbitmq_versions": ["3.12.13", "3.13"]}},
        "scenarios": [{"name": "steps", "steps": {"rates": [1000], "duration_s": 60}}],
    }
    campaign = parse_campaign(spec)
    plans = plan_configs(campaign)
    assert [p.config_id for p in plans] == ["n3-c5.2xlarge-gp2-rmq3.12.13", "n3-c5.2xlarge-gp2-rmq3.13"]
    pinned, series = (aws_stack_variables(p, config_request(campaign, p)) for p in plans)
    assert (pinned["rabbitmq_package"], pinned["erlang_series"]) == ("3.12.13-1", "26")
    assert (series["rabbitmq_package"], series["erlang_series"]) == ("3.13.*", "26")
    script = render_cloud_init(tmp_path, pinned)["runcmd"][0]
    assert "https://ppa1.rabbitmq.com/rabbitmq/rabbitmq-server/deb/debian bookworm main" in script
    assert "https://ppa1.rabbitmq.com/rabbitmq/rabbitmq-erlang/deb/debian bookworm main" in script
    assert "Package: erlang*\nPin: version 1:26.*\nPin-Priority: 1000\n" in script
    assert "apt-get install -y -q rabbitmq-server=3.12.13-1 prometheus-node-exporter" in script
    # the repositories are in place before the install, the volumes mounted before it
    assert script.index("sources.list.d/rabbitmq.list") < script.index("rabbitmq-server=3.12.13-1")
    assert script.index("mount /var/lib/rabbitmq") < script.index("rabbitmq-server=3.12.13-1")
    seed = load_campaign(REPO / "campaigns" / "quorum-sizing-2020.yaml")
    debian = render_cloud_init(tmp_path, aws_stack_variables(plan_configs(seed)[0], config_request(seed, plan_configs(
        seed)[0])))["runcmd"][0]
    assert "ppa1.rabbitmq.com" not in debian and "apt-get install -y -q rabbitmq-server prometheus" in debian
    # 4.1, 4.2 (4.2.9 and later need Erlang 27) and 4.3 (needs 27) get Erlang 27; 4.0 keeps 26, which all its
    # releases support (27 only from 4.0.4)
    newer = parse_campaign({**spec, "clusters": {"matrix": {**spec["clusters"]["matrix"],
                                                             "rabbitmq_versions": ["4.0", "4.1", "4.2.9", "4.3"]}}})
    pins = {p.shape.rabbitmq_version: aws_stack_variables(p, config_request(newer, p))
            for p in plan_configs(newer)}
    assert {v: (x["rabbitmq_package"], x["erlang_series"]) for v, x in pins.items()} == {
        "4.0": ("4.0.*", "26"), "4.1": ("4.1.*", "27"), "4.2.9": ("4.2.9-1", "27"), "4.3": ("4.3.*", "27")}
    assert "Package: erlang*\nPin: version 1:27.*\n" in render_cloud_init(tmp_path, pins["4.3"])["runcmd"][0]
    # the module refuses a package string sizing.resources.versions would never build
    text = (TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "variables.tf").read_text()
    assert 'regex("^[0-9]+\\\\.[0-9]+(\\\\.[0-9]+-1|\\\\.\\\\*)$", var.rabbitmq_package)' in text


def test_local_module_lays_out_the_port_block_as_sizing_localports_does():
    """Issue 44: the port layout's home is sizing.resources.localports (the node limit follows from it); the local
    module's copy in main.tf and its node_count bound are checked against it here."""
    module = TERRAFORM_ROOT / "modules" / "local_cluster"
    nodes_locals = load(module / "main.tf")["locals"][0]
    roles = {"amqp": "amqp_port", "management": "management_port", "prometheus": "prometheus_port",
             "dist": "dist_port"}
    offsets = {}
    for role, key in roles.items():
        found = re.search(rf"\b{key} = var\.port_base(?: \+ (\d+))? \+ i\b", nodes_locals["nodes"])
        assert found, f"{key} in {nodes_locals['nodes']}"
        offsets[role] = int(found.group(1) or 0)
    assert offsets == dict(LOCAL_NODE_PORT_OFFSETS)
    ctl = {key: int(re.fullmatch(r"\$\{var\.port_base \+ (\d+)\}", value).group(1))
           for key, value in nodes_locals["ctl_ports"].items()}
    assert range(ctl["min"], ctl["max"] + 1) == LOCAL_CLI_PORTS
    condition = variables(module)["node_count"]["validation"][0]["condition"]
    assert f"var.node_count <= {LOCAL_MAX_NODES} " in condition
