"""The aws stack's state survives any worker: real Terraform, the aws stack's own `backend "s3"` block, and a real
S3 endpoint (moto's server) holding the state and its lock file.

The aws provider cannot be downloaded here, so the resources are a `terraform_data` stand-in (with a destroy-time
provisioner: proof the destroy found them); the backend block is read from terraform/stacks/aws/versions.tf, and
the commands are the ones TerraformHook builds. Worker A applies; worker B, with an empty state directory of its
own, destroys with variables regenerated from the trial; worker C finds the state locked and stops.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.terraform import TerraformError
from sizing.campaign import load_campaign
from sizing.planning.plan import plan_configs
from sizing.planning.runplan import config_request

REPO = Path(__file__).resolve().parents[1]

STAND_IN = """
variable "campaign" {
  type = string
}
variable "config_id" {
  type = string
}
variable "marker" {
  type = string
}
resource "terraform_data" "cluster" {
  input = "${var.campaign}/${var.config_id}"
  provisioner "local-exec" {
    when    = destroy
    command = "echo destroyed ${self.output} > ${self.triggers_replace}"
  }
  triggers_replace = var.marker
}
"""


def aws_backend_block() -> str:
    text = (REPO / "terraform" / "stacks" / "aws" / "versions.tf").read_text()
    match = re.search(r'^  backend "s3" \{.*?^  \}', text, re.S | re.M)
    assert match, "terraform/stacks/aws/versions.tf has no backend \"s3\" block"
    return match.group(0)


@pytest.fixture
def stand_in_root(tmp_path: Path) -> Path:
    """A terraform root whose `stacks/aws` is the aws stack's backend with stand-in resources."""
    stack = tmp_path / "terraform" / "stacks" / "aws"
    stack.mkdir(parents=True)
    (stack / "versions.tf").write_text("terraform {\n" + aws_backend_block() + "\n}\n")
    (stack / "main.tf").write_text(STAND_IN)
    return tmp_path / "terraform"


def hook_on(worker: Path, root: Path, s3, marker: Path):
    """TerraformHook of one worker: its own state root, the shared S3 backend (what `terraform_default` holds)."""
    from rabbit_sizing.hooks.terraform import TerraformHook

    hook = TerraformHook(target="aws", state_root=worker, terraform_root=root)
    hook.backend_settings = {
        "bucket": s3.bucket, "region": s3.region, "endpoints": f'{{s3="{s3.endpoint_url}"}}',
        "use_path_style": "true", "skip_credentials_validation": "true", "skip_requesting_account_id": "true",
        "skip_metadata_api_check": "true", "skip_region_validation": "true"}
    # The stand-in declares three variables; the aws stack's others are accepted and ignored (a warning).
    hook.variables = lambda plan, campaign: {"campaign": plan.campaign, "config_id": plan.config_id,
                                             "marker": str(marker)}
    return hook


def test_a_destroy_on_another_worker_finds_the_cluster_and_a_held_lock_stops_a_third(tmp_path, stand_in_root, s3):
    quick = load_campaign(REPO / "campaigns" / "local-quick.yaml")
    plan = replace(plan_configs(quick)[0], repeat=2)
    marker = tmp_path / "destroyed.txt"
    state_key = f"rabbit-sizing/terraform/{plan.campaign}/{plan.cluster_key}/terraform.tfstate"

    a = hook_on(tmp_path / "worker-a", stand_in_root, s3, marker)
    a.stack(plan.campaign, plan.cluster_key).apply_variables(a.variables(plan, config_request(quick, plan)))
    client = s3.client()
    state = json.loads(client.get_object(Bucket=s3.bucket, Key=state_key)["Body"].read())
    assert [r["type"] for r in state["resources"]] == ["terraform_data"]  # the state is in S3, not on A's disk

    # A third worker finds the state locked (an apply or destroy in progress elsewhere) and changes nothing.
    client.put_object(Bucket=s3.bucket, Key=state_key + ".tflock",
                      Body=json.dumps({"ID": "x", "Operation": "OperationTypeApply", "Who": "worker-a"}).encode())
    c = hook_on(tmp_path / "worker-c", stand_in_root, s3, marker)
    with pytest.raises(TerraformError, match="state lock"):
        c.destroy(plan.campaign, plan.cluster_key, plan=plan, request=config_request(quick, plan))
    assert not marker.exists()
    client.delete_object(Bucket=s3.bucket, Key=state_key + ".tflock")

    b_dir = tmp_path / "worker-b"
    assert not b_dir.exists()
    b = hook_on(b_dir, stand_in_root, s3, marker)
    b.destroy(plan.campaign, plan.cluster_key, plan=plan, request=config_request(quick, plan))
    assert marker.read_text().strip() == f"destroyed {plan.campaign}/{plan.config_id}"
    state = json.loads(client.get_object(Bucket=s3.bucket, Key=state_key)["Body"].read())
    assert state["resources"] == []
    # B initialised its own working directory (its .terraform) and wrote the variables it regenerated.
    ws = b_dir / plan.campaign / plan.cluster_key
    assert (ws / ".terraform" / "terraform.tfstate").exists()
    assert json.loads((ws / "vars.tfvars.json").read_text())["config_id"] == plan.config_id
    # No lock is left behind (without use_lockfile the held lock above would have been ignored).
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket).get("Contents", [])]
    assert state_key + ".tflock" not in keys
