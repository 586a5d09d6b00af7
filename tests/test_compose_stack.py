"""docker-compose.yaml and its images (issue 23, item 5). No Docker engine here, so nothing is built or started;
what can run does: the compose tool validates the file, an install of the build context shows which packages the
images get, the documented admin login is tried on a real api-server configured as the compose file configures
it. The rest (what the Dockerfiles install, the wiring the DAG reads) is checked from the files."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"sizing", "adapters", "app", "loadgen", "spark_jobs", "rabbit_sizing", "dags", "tests", "plugins"}
DIST_NAMES = {"yaml": "pyyaml"}  # import name -> the distribution pip installs


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def dockerfile(name: str) -> str:
    return (REPO / name).read_text()


def python_minor() -> str:
    """pyproject.toml's Python: requires-python = ">=3.11,<3.12" -> "3.11"."""
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    return re.search(r">=\s*(\d+\.\d+)", requires).group(1)


@pytest.mark.tools
def test_the_compose_tool_validates_the_file(tmp_path):
    """`docker compose config` where the plugin exists, else Debian's docker-compose (scripts/bootstrap.sh
    installs it): the file's schema, anchors, interpolation and service references."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        tool = ["docker", "compose"]
    elif shutil.which("docker-compose"):
        tool = ["docker-compose"]
    else:
        pytest.fail("neither `docker compose` nor `docker-compose` is installed: scripts/bootstrap.sh installs "
                    "Debian's docker-compose")
    result = subprocess.run([*tool, "-f", str(REPO / "docker-compose.yaml"), "config"], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert resolved["services"]["airflow-api-server"]["environment"]["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
    broken = (REPO / "docker-compose.yaml").read_text().replace("depends_on: [spark-master]",
                                                                "depends_on: [spark-mastr]")
    (tmp_path / "docker-compose.yaml").write_text(broken)
    assert subprocess.run([*tool, "-f", str(tmp_path / "docker-compose.yaml"), "config", "-q"], capture_output=True,
                          timeout=120, cwd=tmp_path).returncode != 0  # the tool does catch a wrong reference


def test_services_present(compose):
    assert {"postgres", "minio", "airflow-api-server", "airflow-scheduler", "airflow-dag-processor",
            "airflow-triggerer", "spark-master", "spark-worker", "rabbitmq-1", "rabbitmq-2", "rabbitmq-3",
            "loadgen"} <= set(compose["services"])


def test_images_pinned_to_explicit_tags(compose):
    for name, service in compose["services"].items():
        image = service.get("image")
        assert image, f"{name} has no image"
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned"
        if "build" in service:
            assert (REPO / service["build"]["dockerfile"]).exists(), name
    assert compose["services"]["airflow-api-server"]["build"]["dockerfile"] == "docker/airflow.Dockerfile"
    assert compose["services"]["spark-master"]["build"]["dockerfile"] == "docker/spark.Dockerfile"
    assert compose["services"]["spark-worker"]["image"] == compose["services"]["spark-master"]["image"]
    assert compose["services"]["loadgen"]["build"]["dockerfile"] == "loadgen/Dockerfile"


# ----------------------------------------------------------------------------------------- the images


def repository_packages() -> set[str]:
    """Every top-level package of the repository: what some code imports by that name."""
    found = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    return found | {p.parent.name for p in (REPO / "plugins").glob("*/__init__.py")}


def build_context(destination: Path) -> Path:
    """The files `docker build .` sends: the tracked files minus .dockerignore's patterns."""
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]

    def ignored(path: str) -> bool:
        return any(fnmatch.fnmatch(path, p.replace("**/", "*")) or fnmatch.fnmatch(path, p.replace("**/", "*") + "/*")
                   or fnmatch.fnmatch(path.split("/")[-1], p.removeprefix("**/")) for p in patterns)

    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if ignored(name) or not (REPO / name).is_file():
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return destination


@pytest.mark.tools
def test_the_images_install_every_package_of_the_repository(tmp_path):
    """What the Airflow and loadgen images run (`pip install --no-deps -e <context>`), done here with uv into an
    empty virtualenv: every top-level package of the repository must resolve from there (a package pyproject.toml
    forgot would not), and into the copy, not into this checkout."""
    for name in ("docker/airflow.Dockerfile", "loadgen/Dockerfile"):
        text = dockerfile(name)
        assert re.search(r"^COPY (--chown=\S+ )?\. (/opt/rabbit-sizing|/app)$", text, re.M), name
        assert re.search(r"pip install (--no-cache-dir )?--no-deps -e (/opt/rabbit-sizing|/app)", text), name
        assert not re.search(r"^COPY (--chown=\S+ )?(sizing|adapters|spark_jobs|loadgen)\b", text, re.M), name
    context = build_context(tmp_path / "context")
    assert not (context / "tests").exists() and not (context / ".venv").exists()
    venv = tmp_path / "venv"
    subprocess.run(["uv", "venv", "-q", str(venv), "--python", sys.executable], check=True, timeout=120)
    install = subprocess.run(["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--no-deps",
                              "-e", str(context)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    probe = ("import importlib.util, json, sys; "
             "print(json.dumps({m: (importlib.util.find_spec(m) or None) and importlib.util.find_spec(m).origin "
             "for m in sys.argv[1:]}))")
    expected = repository_packages()
    out = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", probe, *sorted(expected)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=True)
    origins = json.loads(out.stdout)
    assert {m for m, origin in origins.items() if origin is None} == set()
    assert all(origin.startswith(str(context)) for origin in origins.values()), origins
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert {p.rstrip("*") for p in declared["include"]} == expected


def _imports(path: Path, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in FIRST_PARTY and n != "__future__"}


def _pip_packages(text: str) -> tuple[set[str], bool]:
    """The packages a Dockerfile's `pip install -c /tmp/lock.txt ...` line installs, and whether it uses -c."""
    line = next(line for line in text.splitlines() if "pip install" in line and "-c /tmp/lock.txt" in line)
    words = line.split("pip install", 1)[1].split("&&")[0].split()
    return {w for w in words if not w.startswith("-") and w != "/tmp/lock.txt"}, "-c" in words


def test_the_spark_image_runs_the_drivers_python_with_what_executors_import():
    from spark_jobs.lib.submit import PACKAGES

    text = dockerfile("docker/spark.Dockerfile")
    minor = python_minor()
    assert re.search(rf"^FROM python:{re.escape(minor)}-slim", text, re.M)
    assert f"sys.version_info[:2] == ({minor.replace('.', ', ')})" in text
    assert f"SPARK_HOME=/usr/local/lib/python{minor}/site-packages/pyspark" in text
    # The Airflow image (the driver) runs the same minor version.
    assert re.search(rf"^FROM apache/airflow:\S+-python{re.escape(minor)}$", dockerfile("docker/airflow.Dockerfile"),
                     re.M)
    installed, constrained = _pip_packages(text)
    assert constrained  # -c requirements/lock.txt: the versions the tests ran with, pyspark's included
    needed = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            needed |= _imports(path, module_level_only=True)
    needed |= {"boto3"}  # the data source's S3 client (adapters.objectstore imports it where it is used)
    needed -= {"great_expectations"}  # the GX gates run on the driver (the Airflow image)
    assert {DIST_NAMES.get(n, n) for n in needed} <= installed, needed


def test_the_loadgen_image_installs_what_the_generator_imports():
    installed, constrained = _pip_packages(dockerfile("loadgen/Dockerfile"))
    assert constrained
    needed = set()
    for path in [*(REPO / "loadgen").rglob("*.py"), *(REPO / "sizing").rglob("*.py")]:
        needed |= _imports(path, module_level_only=False)
    needed -= {"botocore"}  # comes with boto3
    assert {DIST_NAMES.get(n, n) for n in needed} <= installed, needed


def test_terraform_comes_from_hashicorps_release_archive_with_its_checksum():
    text = dockerfile("docker/airflow.Dockerfile")
    version = re.search(r"^ARG TERRAFORM_VERSION=(\d+)\.(\d+)\.(\d+)$", text, re.M)
    assert version and (int(version[1]), int(version[2])) >= (1, 10)  # the aws stack's use_lockfile
    sums = dict(re.findall(r"^ARG TERRAFORM_SHA256_(AMD64|ARM64)=([0-9a-f]+)$", text, re.M))
    assert set(sums) == {"AMD64", "ARM64"} and all(len(v) == 64 for v in sums.values())
    assert "https://releases.hashicorp.com/terraform/${TERRAFORM_VERSION}/terraform_${TERRAFORM_VERSION}_linux_" \
           "${TARGETARCH}.zip" in text
    assert 'sha256sum -c -' in text and text.index("sha256sum -c -") < text.index("extract('terraform'")


# --------------------------------------------------------------------------------------------- wiring


def test_airflow_wiring_matches_what_the_dag_reads(compose):
    from rabbit_sizing.operators.loadgen import AWS_CONN_ID

    from dags.sizing_campaign import SPARK_CONN_ID
    from sizing.campaign import load_campaign

    services = compose["services"]
    airflow = [s for n, s in services.items() if n.startswith("airflow-")]
    assert {s["command"] if isinstance(s["command"], str) else "init" for s in airflow} == {
        "api-server", "scheduler", "dag-processor", "triggerer", "init"}
    for service in airflow:
        env = service["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
        assert "@postgres:" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        # DAGs and plugins are the image's installed project (no bind mount that could drift from it)
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/rabbit-sizing/dags"
        assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/rabbit-sizing/plugins"
        assert not any(v.startswith(("./dags", "./plugins")) for v in service["volumes"])
        assert "PYTHONPATH" not in env  # the packages are installed
        spark = json.loads(env[f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}"])
        assert spark["conn_type"] == "spark" and spark["host"] == "spark://spark-master" and spark["port"] == 7077
        aws = json.loads(env[f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}"])
        assert aws["extra"]["endpoint_url"] == env["SIZING_S3_ENDPOINT"] == "http://minio:9000"
        assert (aws["login"], aws["password"]) == (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"])
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://airflow-api-server:8080")
        assert env["SIZING_SPARK_PYTHON"] == "/usr/local/bin/python"  # the Spark image's interpreter
    minio = services["minio"]["environment"]
    first = airflow[0]["environment"]
    assert (minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"]) == (first["AWS_ACCESS_KEY_ID"],
                                                                         first["AWS_SECRET_ACCESS_KEY"])
    assert first["SIZING_S3_BUCKET"] in " ".join(services["minio-init"]["entrypoint"])
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    assert not any(k.startswith("AWS_") for k in services["spark-worker"].get("environment", {}))  # from the job
    # The compose campaign measures the compose RabbitMQ nodes with the connection the compose file defines.
    campaign = load_campaign(REPO / "campaigns" / "compose-existing.yaml")
    conn = json.loads(first[f"AIRFLOW_CONN_{campaign.existing.connection.upper()}"])
    assert [n.amqp.host for n in campaign.existing.nodes] == ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]
    assert conn["login"] == services["rabbitmq-1"]["environment"]["RABBITMQ_DEFAULT_USER"]


def test_rabbitmq_nodes_cluster(compose):
    nodes = [compose["services"][f"rabbitmq-{i}"] for i in (1, 2, 3)]
    assert len({n["environment"]["RABBITMQ_ERLANG_COOKIE"] for n in nodes}) == 1
    assert [n["hostname"] for n in nodes] == ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]
    conf = (REPO / "docker/rabbitmq/rabbitmq.conf").read_text()
    for i in (1, 2, 3):
        assert f"rabbit@rabbitmq-{i}" in conf
    from sizing.resources.cluster import ClusterInfo

    cluster = ClusterInfo.from_json((REPO / "docker/cluster-compose.json").read_text())
    assert [n.host for n in cluster.nodes] == ["rabbitmq-1", "rabbitmq-2", "rabbitmq-3"]


API_PORT = 21000 + 50 * 73  # slot 73


@pytest.mark.airflow
def test_the_documented_admin_login_works_on_an_api_server_set_up_as_compose_sets_it_up(compose, tmp_path):
    """airflow-init's own command writes the passwords file (with /opt/airflow/auth under a temporary directory);
    an api-server with the compose file's auth settings then accepts admin / admin, the header's login, and
    refuses another password."""
    import requests

    header = (REPO / "docker-compose.yaml").read_text().split("\nx-airflow", 1)[0]
    assert "log in as admin with the\n# password in AIRFLOW_ADMIN_PASSWORD (default: admin)" in header
    init, api = compose["services"]["airflow-init"], compose["services"]["airflow-api-server"]
    auth_dir = tmp_path / "auth"
    auth_dir.mkdir()
    assert "airflow-auth:/opt/airflow/auth" in init["volumes"] and "airflow-auth:/opt/airflow/auth" in api["volumes"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update({k: str(v).replace("/opt/airflow/auth", str(auth_dir)) for k, v in api["environment"].items()
                if k.startswith("AIRFLOW__CORE__SIMPLE_AUTH") or k.startswith("AIRFLOW__API_AUTH")})
    env.update({"AIRFLOW_HOME": str(tmp_path / "home"), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path}/airflow.db",
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path / "dags"),
                "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(API_PORT)})
    script = init["command"][-1].replace("/opt/airflow/auth", str(auth_dir))
    subprocess.run(["bash", "-c", script], env=env, check=True, capture_output=True, timeout=300)
    assert json.loads((auth_dir / "passwords.json").read_text()) == {"admin": "admin"}
    server = subprocess.Popen([str(Path(sys.executable).parent / "airflow"), "api-server"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{API_PORT}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"{url}/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "api-server did not come up"
            time.sleep(1)
        good = requests.post(f"{url}/auth/token", json={"username": "admin", "password": "admin"}, timeout=10)
        bad = requests.post(f"{url}/auth/token", json={"username": "admin", "password": "nope"}, timeout=10)
        assert good.status_code == 201 or good.status_code == 200, good.text
        assert good.json()["access_token"] and bad.status_code == 401
    finally:
        from adapters.procs import stop_process_group

        stop_process_group(server.pid, grace_s=10)
