"""Scaling out (issue 23), the parts checked without starting anything: the `existing` target's spec, what its
teardown deletes, the local target's refusal on a multi-worker executor, the aws destroy that needs nothing from
its apply's worker, S3Store.delete on a partial failure, the py-files zip, the executors' properties file.

The same paths run for real in tests/test_spark_cluster.py, tests/test_store_leases.py,
tests/test_terraform_remote_state.py and tests/test_celery_e2e.py.
"""

from __future__ import annotations

import ast
import json
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from adapters.objectstore import LocalStore, ObjectStoreError, S3Store, StoreSpec
from adapters.planning import publish_spec, spec_on_this_worker, validate_run, write_resolved_spec
from sizing.campaign import load_campaign, parse_campaign
from sizing.documents.fields import SpecError
from sizing.planning.plan import campaign_cost, plan_configs
from sizing.planning.runplan import local_target_refusal

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "campaigns" / "existing-example.yaml"


def example(**changes) -> dict:
    data = yaml.safe_load(EXAMPLE.read_text())
    for path, value in changes.items():
        node = data
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return data


def problems(data: dict) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        parse_campaign(data)
    return {p.path: p.reason for p in err.value.problems}


# ------------------------------------------------------------------------------------- existing target


def test_an_existing_cluster_spec_describes_the_running_cluster_without_credentials():
    campaign = load_campaign(EXAMPLE)
    existing = campaign.existing
    assert campaign.deployment == "existing" and existing.connection == "rabbitmq_staging"
    assert existing.vhost == "sizing" and not existing.local and existing.monthly_cost == 1120.0
    cluster = existing.cluster_info("c", node_names=["rabbit@a", "rabbit@b", "rabbit@c"])
    assert [(n.host, n.amqp_port, n.management_port, n.name) for n in cluster.nodes] == [
        ("10.0.1.11", 5672, 15672, "rabbit@a"), ("10.0.1.12", 5672, 15672, "rabbit@b"),
        ("10.0.1.13", 5672, 15672, "rabbit@c")]
    assert cluster.target == "existing" and cluster.vhost == "sizing" and cluster.password == ""
    # The config is priced at the spec's monthly price, not the catalog's (m5.xlarge is not even in it); running
    # the campaign costs nothing extra: the cluster bills whether or not it is measured.
    (plan,) = plan_configs(campaign)
    assert plan.config_id == "n3-m5.xlarge-gp3" and plan.monthly_cost == 1120.0
    assert campaign_cost(campaign).total_cost == 0.0
    (unpriced,) = plan_configs(parse_campaign(example(**{"existing.monthly_cost": None})))
    assert unpriced.monthly_cost == 0.0


def test_https_management_endpoints_are_kept():
    data = example()
    data["existing"]["nodes"] = [{"amqp": "b-1.mq.example.com:5671", "management": "https://b-1.mq.example.com:443"}]
    data["clusters"]["list"][0]["nodes"] = 1
    (node,) = parse_campaign(data).existing.cluster_info("c").nodes
    assert node.management_url == "https://b-1.mq.example.com:443" and node.amqp_port == 5671


def test_credentials_in_the_spec_are_refused_with_where_they_belong():
    data = example()
    data["existing"]["password"] = "s3cret"
    data["existing"]["nodes"][0]["username"] = "admin"
    found = problems(data)
    assert "Airflow connection" in found["existing.password"]
    assert "Airflow connection" in found["existing.nodes[0].username"]


@pytest.mark.parametrize(("change", "path", "reason"), [
    ({"existing.nodes": [{"amqp": "10.0.0.1", "management": "10.0.0.1:15672"}]}, "existing.nodes[0].amqp",
     "host:port"),
    ({"existing.nodes": [{"amqp": "amqp://10.0.0.1:5672", "management": "10.0.0.1:15672"}]},
     "existing.nodes[0].amqp", "without a scheme"),
    ({"existing.nodes": [{"amqp": "10.0.0.1:5672"}]}, "existing.nodes[0].management", "required"),
    ({"existing.connection": "bad id!"}, "existing.connection", "Airflow connection id"),
    ({"existing": None}, "existing", "required"),
    ({"broker_config": {"vm_memory_high_watermark.relative": 0.5}},
     "broker_config.vm_memory_high_watermark.relative", "keeps its own rabbitmq.conf"),
    ({"clusters": {"list": [{"nodes": 2, "instance_type": "x", "volume": "gp3"}]}}, "clusters",
     "existing.nodes names 3"),
])
def test_an_existing_spec_that_cannot_work_is_refused_at_its_field(change, path, reason):
    found = problems(example(**change))
    assert path in found and reason in found[path], found


def test_existing_is_refused_on_other_deployments():
    data = yaml.safe_load((REPO / "campaigns" / "ci-tiny.yaml").read_text())
    data["existing"] = {"nodes": [{"amqp": "h:1", "management": "h:2"}]}
    assert "only for `deployment: existing`" in problems(data)["existing"]


def test_faults_on_an_existing_cluster_need_it_declared_local_with_its_nodes_controls():
    fault = {"kind": "kill_node", "at": 0.5, "target": {"node": 1}, "heal_after_s": 5}
    data = example()
    data["scenarios"][0]["faults"] = [fault]
    assert "existing.local: true" in problems(data)["scenarios[0].faults[0]"]
    data["existing"]["local"] = True
    assert "existing.nodes[0].name" in problems(data)["scenarios[0].faults[0]"]
    data["scenarios"][0]["faults"] = [{"kind": "network_delay", "at": 0.5, "target": "all", "heal_after_s": 5,
                                       "params": {"delay_ms": 50}}]
    assert "tc netem" in problems(data)["scenarios[0].faults[0].kind"]
    # Declared local, with every node's controls: the local fault executor gets what it needs.
    data["scenarios"][0]["faults"] = [fault]
    data["existing"]["ctl_env"] = {"HOME": "/var/lib/rabbitmq"}
    for n, node in enumerate(data["existing"]["nodes"], start=1):
        node.update(name=f"rabbit{n}@localhost", pid_file=f"/run/r{n}.pid", start_cmd=["start", str(n)],
                    stop_cmd=["stop", str(n)], ctl_cmd=["rabbitmqctl", "-n", f"rabbit{n}@localhost"])
    cluster = parse_campaign(data).existing.cluster_info("c")
    assert cluster.node(2).ctl_cmd == ("rabbitmqctl", "-n", "rabbit2@localhost") and cluster.ctl_env["HOME"]
    from loadgen.faults.local import LocalFaultExecutor
    from loadgen.nemesis import default_executor

    assert isinstance(default_executor(cluster), LocalFaultExecutor)
    # Node controls on a cluster not declared local are refused (they would never be used).
    data["existing"]["local"] = False
    assert "local: true" in problems(data)["existing.nodes[0].pid_file"]


def test_one_trial_at_a_time_on_an_existing_cluster(tmp_path):
    params = {"campaign": str(EXAMPLE), "run_label": "r1", "configs": [], "scenarios": []}
    run = validate_run({**params, "max_parallel_configs": None}, tmp_path)
    assert run.max_parallel_configs == 1 and run.deployment == "existing"
    with pytest.raises(SpecError, match="must be 1 on an existing cluster"):
        validate_run({**params, "max_parallel_configs": 2}, tmp_path)


def test_teardown_deletes_exactly_what_the_campaign_declares():
    from sizing.resources.existing import POLICY_NAME, campaign_objects

    objects = campaign_objects(load_campaign(EXAMPLE))
    assert objects.queues == ("sizing-1", "sizing-2", "sizing-3", "sizing-4")
    assert objects.policies == () and objects.exchanges == ()
    # Mirrored queues get the generator's policy; groups and scenario overrides add their own queues.
    mirrored = load_campaign(REPO / "campaigns" / "mirrored-sizing-2020.yaml")
    assert campaign_objects(mirrored).policies == (POLICY_NAME,)
    groups = campaign_objects(load_campaign(REPO / "campaigns" / "disks-matter-local.yaml"))
    assert any(q.startswith("lazy-") for q in groups.queues) and len(set(groups.queues)) == len(groups.queues)


# ------------------------------------------------------------------------------------- several workers


@pytest.mark.parametrize(("setting", "refused"), [
    ("LocalExecutor", False), ("airflow.executors.local_executor.LocalExecutor", False),
    ("LocalExecutor,CeleryExecutor", False), ("CeleryExecutor", True), ("KubernetesExecutor", True),
    ("CeleryExecutor,LocalExecutor", True), ("gpu:my.module.CustomExecutor", True),
])
def test_the_local_target_is_refused_on_a_multi_worker_executor(setting, refused):
    reason = local_target_refusal("local", setting)
    assert (reason is not None) == refused
    if refused:
        assert "one host" in reason and "deployment: existing" in reason
    assert local_target_refusal("existing", setting) is None and local_target_refusal("aws", setting) is None


def test_a_worker_reads_the_resolved_spec_from_the_object_store_never_from_another_workers_disk(tmp_path):
    store = LocalStore(tmp_path / "bucket")
    campaign = load_campaign(REPO / "campaigns" / "ci-tiny.yaml")
    written = write_resolved_spec(campaign, tmp_path / "worker-a" / "specs")  # validate_spec on worker A
    assert publish_spec(written, store) == f"specs/{written.name}"
    b_env = {"SIZING_STATE_DIR": str(tmp_path / "worker-b")}
    local = spec_on_this_worker(str(written), store, b_env)  # plan_trials on worker B
    assert local == str(tmp_path / "worker-b" / "specs" / written.name) and Path(local).read_bytes() == \
        written.read_bytes()
    written.unlink()  # worker A's copy is gone (another host): B never needed it
    store.delete([f"specs/{written.name}"])
    assert spec_on_this_worker(str(written), store, b_env) == local  # B's own copy from now on
    with pytest.raises(FileNotFoundError):
        spec_on_this_worker(str(written), store, {"SIZING_STATE_DIR": str(tmp_path / "worker-c")})


# ---------------------------------------------------------------------------------------- aws target


class Recorder:
    def __init__(self) -> None:
        self.commands = []

    def __call__(self, command, logger=None, capture_stdout=False) -> str:
        self.commands.append(command)
        return "{}" if capture_stdout else ""


def test_aws_destroy_regenerates_its_variables_and_initialises_its_own_working_directory(tmp_path):
    """On another worker than its apply: no var file, no .terraform there. It still inits against the S3 backend
    (the state's key names the cluster) and destroys with the variables rebuilt from the trial."""
    from rabbit_sizing.hooks.terraform import TerraformHook

    from adapters.terraform import aws_stack_variables
    from sizing.planning.runplan import config_request

    quick = load_campaign(REPO / "campaigns" / "local-quick.yaml")
    plan = plan_configs(quick)[1]
    hook = TerraformHook(target="aws", state_root=tmp_path / "other-worker")
    hook.backend_settings = {"bucket": "states", "region": "eu-west-1"}
    hook.runner = recorder = Recorder()
    hook.destroy(plan.campaign, plan.cluster_key, plan=plan, request=config_request(quick, plan))
    init, destroy = recorder.commands
    assert init.argv[2] == "init" and destroy.argv[2] == "destroy"
    assert f"-backend-config=key=rabbit-sizing/terraform/{plan.campaign}/{plan.cluster_key}/terraform.tfstate" \
        in init.argv and "-backend-config=bucket=states" in init.argv
    ws_dir = tmp_path / "other-worker" / plan.campaign / plan.cluster_key
    assert init.env["TF_DATA_DIR"] == str(ws_dir.resolve() / ".terraform")
    var_file = ws_dir / "vars.tfvars.json"
    assert f"-var-file={var_file.resolve()}" in destroy.argv and stat.S_IMODE(var_file.stat().st_mode) == 0o600
    written = json.loads(var_file.read_text())
    expected = aws_stack_variables(plan, config_request(quick, plan))
    assert {k: v for k, v in written.items() if k != "expires_at"} == \
        {k: v for k, v in expected.items() if k != "expires_at"}
    with pytest.raises(ValueError, match="plan and cluster request"):
        hook.destroy(plan.campaign, plan.cluster_key)
    # The local target keeps its one-host behaviour: a cluster never applied here is a no-op.
    local = TerraformHook(target="local", state_root=tmp_path / "local")
    local.runner = recorder = Recorder()
    local.destroy(plan.campaign, plan.cluster_key)
    assert recorder.commands == []


def test_the_aws_backend_locks_its_state():
    import hcl2

    with (REPO / "terraform" / "stacks" / "aws" / "versions.tf").open() as handle:
        parsed = hcl2.load(handle)
    (terraform,) = parsed["terraform"]
    (backend,) = terraform["backend"]
    assert backend['"s3"']["use_lockfile"] is True
    assert terraform["required_version"].strip('"') == ">= 1.10"  # use_lockfile's first version


def test_s3_delete_raises_when_some_keys_were_not_deleted():
    """DeleteObjects answers 200 with the keys it could not delete under `Errors`: no S3 stand-in here refuses a
    delete, so the answer is stubbed (botocore's Stubber checks the request against the S3 API model)."""
    from botocore.stub import Stubber

    store = S3Store(StoreSpec("s3", "b", "http://127.0.0.1:9", "us-east-1"))
    with Stubber(store.client) as stub:
        stub.add_response("delete_objects", {"Deleted": [{"Key": "a"}]},
                          {"Bucket": "b", "Delete": {"Objects": [{"Key": "a"}, {"Key": "b"}], "Quiet": True}})
        stub.add_response("delete_objects", {"Errors": [{"Key": "b", "Code": "AccessDenied", "Message": "no"}]},
                          {"Bucket": "b", "Delete": {"Objects": [{"Key": "a"}, {"Key": "b"}], "Quiet": True}})
        store.delete(["a", "b"])  # no Errors: fine
        with pytest.raises(ObjectStoreError, match=r"1 object\(s\) not deleted: b \(AccessDenied: no\)"):
            store.delete(["a", "b"])
        stub.assert_no_pending_responses()


# --------------------------------------------------------------------------------------- Spark cluster


def _first_party_imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] in {"sizing", "adapters", "spark_jobs", "app", "loadgen",
                                                              "rabbit_sizing", "dags", "plugins"}}


def test_the_py_files_zip_holds_every_module_its_code_imports(tmp_path):
    """Closure: every first-party module any module of the zip imports is in the zip (a cluster's executors have
    nothing else), and an interpreter that cannot see the checkout imports the jobs from the zip alone, from the
    bytecode built beside each module (no worker compiles them again)."""
    from spark_jobs.lib import submit

    path = submit.py_files_zip(tmp_path / "jobs.zip")
    with zipfile.ZipFile(path) as zf:
        names = {n for n in zf.namelist() if n.endswith(".py")}
        assert {n for n in zf.namelist() if n.endswith(".pyc")} == {n + "c" for n in names}
        modules = {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names}
        missing = {(name, imported) for name in names for imported in _first_party_imports(zf.read(name).decode())
                   if imported not in modules and imported.rsplit(".", 1)[0] not in modules}
    assert missing == set()
    assert {"adapters/objectstore.py", "spark_jobs/lib/s3source.py", "sizing/contract/records.py"} <= names
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import spark_jobs.jobs.analysis, spark_jobs.lib.tableio, "
             "spark_jobs.lib.s3source, adapters.objectstore; print(adapters.objectstore.__file__)")
    out = subprocess.run([sys.executable, "-I", "-c", probe, str(path)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # imported from the zip, and from its bytecode (zipimport names the file it loaded)
    assert out.stdout.strip().startswith(str(path)) and out.stdout.strip().endswith("objectstore.pyc")


def test_executor_credentials_go_to_a_private_properties_file(tmp_path, monkeypatch):
    from rabbit_sizing.spark import executor_env, properties_text, write_executor_properties

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "se/cr+et\\x")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    env = executor_env()
    assert env == {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "se/cr+et\\x",
                   "AWS_DEFAULT_REGION": "eu-west-1"}
    path = write_executor_properties(tmp_path, env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "spark.executorEnv.AWS_SECRET_ACCESS_KEY=se/cr+et\\\\x\n" in text
    assert "spark.redaction.regex=(?i)secret|password|token|access[._]?key|credential\n" in text
    assert properties_text({"a": "x\ny"}) == "a=x\\ny\n"


def test_spark_settings_name_the_executors_interpreter_and_redact_the_key_id(monkeypatch):
    import re

    from spark_jobs.lib.settings import REDACTION_REGEX, python_conf

    monkeypatch.setenv("SIZING_SPARK_PYTHON", "/usr/local/bin/python3.11")
    conf = python_conf()
    assert conf["spark.pyspark.python"] == "/usr/local/bin/python3.11"
    assert conf["spark.pyspark.driver.python"] == sys.executable
    for key in ("spark.executorEnv.AWS_ACCESS_KEY_ID", "spark.executorEnv.AWS_SECRET_ACCESS_KEY",
                "spark.executorEnv.AWS_SESSION_TOKEN"):
        assert re.search(REDACTION_REGEX, key), key
    assert not re.search(REDACTION_REGEX, "spark.executorEnv.AWS_DEFAULT_REGION")



def test_an_existing_clusters_node_figures_are_rabbitmqs_own():
    """No node exporter on hosts that are not ours: the snapshot carries RabbitMQ's Prometheus figures (recorded
    from a 3.10 node) and leaves host CPU, disk and NIC unknown rather than zero."""
    from adapters.nodestats import ExistingNodeReader, aws_snapshot, parse_prometheus, reader_for

    (node,) = parse_campaign(example(**{"existing.nodes": [{"amqp": "10.0.0.1:5672", "management": "10.0.0.1:15672"}],
                                        "clusters": {"list": [{"nodes": 1, "instance_type": "x", "volume": "y"}]}})
                             ).existing.cluster_info("c").nodes
    reader = reader_for("existing", node, 1.0)
    assert isinstance(reader, ExistingNodeReader) and reader.url == "http://10.0.0.1:15692/metrics"
    text = (REPO / "tests" / "data" / "nodestats" / "rabbitmq_3.10_metrics.txt").read_text()
    snapshot = aws_snapshot(1.0, {}, parse_prometheus(text))
    assert snapshot.counters["cpu_user_s"] is None and snapshot.counters["disk_write_bytes"] is None
    assert snapshot.cores is None
    assert any(value is not None for key, value in snapshot.counters.items() if not key.startswith(("cpu", "disk",
                                                                                                   "nic", "machine")))
