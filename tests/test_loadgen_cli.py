"""CLI and container: argument/environment handling, ClusterInfo input forms, the Dockerfile's contract."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from loadgen.cli import build_parser, load_cluster, main

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"target": "local", "cluster_name": "c", "nodes": [
    {"number": 1, "name": "rabbit-1@localhost", "host": "127.0.0.1", "amqp_port": 21001, "management_port": 21002}]}


def test_cluster_json_as_text_file_or_terraform_output(tmp_path):
    assert load_cluster(json.dumps(CLUSTER)).nodes[0].amqp_port == 21001
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"cluster": {"value": CLUSTER, "type": "object"}}))
    assert load_cluster(str(path)).cluster_name == "c"


def test_options_come_from_the_environment(monkeypatch):
    for key, value in {"LOADGEN_CAMPAIGN": "campaigns/local-quick.yaml", "LOADGEN_CONFIG": "n1-c5.2xlarge-gp2",
                       "LOADGEN_SCENARIO": "increasing-intensity", "LOADGEN_RUN_ID": "r1", "LOADGEN_REPEAT": "3",
                       "LOADGEN_WORKERS": "2"}.items():
        monkeypatch.setenv(key, value)
    args = build_parser().parse_args(["run"])
    assert (args.campaign, args.config, args.run_id, args.repeat, args.workers) == (
        "campaigns/local-quick.yaml", "n1-c5.2xlarge-gp2", "r1", 3, 2)


def test_bad_invocations_exit_2_before_touching_a_broker(capsys):
    assert main(["run", "--campaign", "campaigns/local-quick.yaml"]) == 2
    assert "--config" in capsys.readouterr().err
    assert main(["run", "--campaign", str(ROOT / "campaigns/local-quick.yaml"), "--config", "n9-nope",
                 "--scenario", "increasing-intensity", "--run-id", "r", "--cluster-json", json.dumps(CLUSTER)]) == 2
    assert "n9-nope" in capsys.readouterr().err


def test_module_entry_point_prints_help():
    out = subprocess.run([sys.executable, "-m", "loadgen", "run", "--help"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "--cluster-json" in out and "--no-upload" in out and "--repeat" in out


def test_dockerfile_installs_and_copies_what_the_module_imports():
    text = (ROOT / "loadgen/Dockerfile").read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    installed = set(re.findall(r"\b(pika|boto3|pyarrow|numpy|pyyaml|requests)\b", text.split("RUN pip install")[1]
                               .splitlines()[0]))
    assert installed == {"pika", "boto3", "pyarrow", "numpy", "pyyaml", "requests"}
    # The project as a package (the build context, editable: campaigns/ and catalogs/ beside the code); what the
    # context holds is .dockerignore's business, and it keeps these (tests/test_compose_stack.py installs it).
    assert "COPY . /app" in text and "pip install --no-deps -e /app" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert not {"sizing", "adapters", "loadgen", "campaigns", "catalogs"} & set(ignored)
    assert 'ENTRYPOINT ["python", "-m", "loadgen"]' in text
    # every third-party module the load generator reaches (its own modules and the core modules they
    # import, transitively) is installed in the image
    third_party = {name.split(".")[0] for name in loadgen_import_closure()} - set(sys.stdlib_module_names)
    third_party -= {"loadgen", "sizing", "adapters", "__future__"}
    allowed = {"pika", "boto3", "botocore", "pyarrow", "numpy", "yaml", "requests"}  # botocore comes with boto3
    assert third_party <= allowed, third_party - allowed


def module_imports(path: Path) -> set[str]:
    """Absolute imports of a module, by parsing it (a docstring line starting "from the" is no import)."""
    tree = ast.parse(path.read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    return names


def loadgen_import_closure() -> set[str]:
    """Every module name imported from loadgen/, following imports into loadgen, core and adapter modules."""
    todo = [p for p in ROOT.glob("loadgen/**/*.py")]
    seen_files: set[Path] = set()
    names: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen_files:
            continue
        seen_files.add(path)
        for name in module_imports(path):
            names.add(name)
            if name.split(".")[0] in ("loadgen", "sizing", "adapters"):
                base = ROOT / name.replace(".", "/")
                todo += [f for f in (base.with_suffix(".py"), base / "__init__.py") if f.exists()]
    return names
