"""The ExpiresAt tag of AWS clusters: the stack's `expires_at` variable is validated by real terraform (its
block copied into a provider-free config, which runs offline) and reaches every resource and the volumes."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import hcl2
import pytest

from adapters.terraform import TERRAFORM_ROOT
from sizing.planning.plan import expiry_tag

STACK = TERRAFORM_ROOT / "stacks" / "aws"
ENV = {"CHECKPOINT_DISABLE": "1", "PATH": "/usr/local/bin:/usr/bin:/bin"}


def variable_block(name: str) -> str:
    text = (STACK / "variables.tf").read_text()
    match = re.search(rf'^variable "{name}" \{{.*?^\}}', text, re.S | re.M)
    assert match, name
    return match.group(0)


def plan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**ENV, "TF_DATA_DIR": str(tmp_path / ".tf")}
    return subprocess.run(["terraform", f"-chdir={tmp_path}", "plan", "-input=false", "-no-color", *args],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.tools
def test_expires_at_accepts_what_python_writes_and_refuses_anything_else(tmp_path):
    (tmp_path / "main.tf").write_text(variable_block("expires_at") + '\noutput "tag" {\n  value = var.expires_at\n}\n')
    init = subprocess.run(["terraform", f"-chdir={tmp_path}", "init", "-no-color"],
                          env={**ENV, "TF_DATA_DIR": str(tmp_path / ".tf")}, capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    written = expiry_tag(datetime(2026, 1, 31, 22, 0, tzinfo=UTC), 4680.0)
    ok = plan(tmp_path, f"-var=expires_at={written}")
    assert ok.returncode == 0 and written in ok.stdout, ok.stdout + ok.stderr
    assert plan(tmp_path).returncode == 0  # null: no tag
    bad = plan(tmp_path, "-var=expires_at=tomorrow")
    assert bad.returncode != 0 and "RFC 3339 UTC time" in bad.stderr, bad.stderr


def test_expiry_tag_reaches_every_resource_and_the_volumes():
    with (STACK / "main.tf").open() as handle:
        main = hcl2.load(handle)
    local_tags = main["locals"][0]["tags"]
    assert "ExpiresAt = var.expires_at" in local_tags
    cluster = next(body for block in main["module"] for name, body in block.items() if name.strip('"') == "cluster")
    assert cluster["volume_tags"] == "${local.tags}"
    with (STACK / "versions.tf").open() as handle:
        provider = hcl2.load(handle)["provider"][0]
    aws = provider.get("aws") or provider.get('"aws"')
    assert aws["default_tags"][0]["tags"] == "${local.tags}"
    instance = (TERRAFORM_ROOT / "modules" / "aws_rabbitmq_cluster" / "main.tf").read_text()
    assert "volume_tags = merge(var.volume_tags, var.tags" in instance
