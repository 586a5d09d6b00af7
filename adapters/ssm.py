"""AWS Systems Manager Run Command (edge module; boto3/botocore imported where used): the one place an SSM client
is made, and the one AWS error the fault executor must read (an invocation not registered yet). What runs on a node
and how it is polled stay in loadgen.faults.ssm, which receives the client (tests hand it a stubbed one)."""

from __future__ import annotations

from typing import Any


def ssm_client() -> Any:  # -> botocore SSM client
    """An SSM client of the environment's region and credentials (as boto3 resolves them: AWS_DEFAULT_REGION,
    profile, instance role); the load generator runs beside the aws target's nodes, so the defaults are theirs."""
    import boto3

    return boto3.client("ssm")


def command_invocation(ssm: Any, command_id: str, instance_id: str) -> dict[str, Any] | None:
    """`get_command_invocation` of one command on one instance; None while SSM has not registered it (right after
    send_command it may not exist yet). Any other AWS error is raised."""
    from botocore.exceptions import ClientError

    try:
        return ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") == "InvocationDoesNotExist":
            return None
        raise
