"""Where the CLI finds a running stack: the state file `make demo` writes (`.state/demo.json`). The Airflow REST
client the demo and `sizing trigger` / `sizing backfill` share is an adapter (adapters.airflowapi).

The demo's stack is a moto S3 server and an Airflow api-server on 127.0.0.1. The demo writes their
addresses and the local credentials to `<state dir>/demo.json`; the CLI applies them to its own
environment only when the environment names no S3 endpoint, bucket or credentials of its own
(`SIZING_S3_ENDPOINT`, `SIZING_S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_PROFILE`), and Airflow's address only
when `SIZING_AIRFLOW_URL` is unset. So a new shell needs nothing exported, and a user pointing the CLI at
real AWS is never redirected to the local server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from adapters.statepaths import state_paths

# Any of these in the environment means "I chose my object store": the state file is not applied.
S3_CHOICE_VARIABLES = ("SIZING_S3_ENDPOINT", "SIZING_S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_PROFILE")


@dataclass(frozen=True)
class DemoState:
    """What a new shell needs to reach the demo's stack (the credentials are the local S3 server's)."""

    s3_endpoint: str
    bucket: str
    region: str
    aws_access_key_id: str
    aws_secret_access_key: str
    airflow_url: str
    airflow_user: str
    airflow_password_file: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DemoState:
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__})

    def s3_env(self) -> dict[str, str]:
        return {"SIZING_S3_ENDPOINT": self.s3_endpoint, "SIZING_S3_BUCKET": self.bucket,
                "AWS_ACCESS_KEY_ID": self.aws_access_key_id, "AWS_SECRET_ACCESS_KEY": self.aws_secret_access_key,
                "AWS_DEFAULT_REGION": self.region}


def state_file(env: Mapping[str, str] | None = None) -> Path:
    return state_paths(env).stack_file


def write_state(state: DemoState, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_dict(), indent=2))
    tmp.chmod(0o600)  # local credentials only, but still nobody else's business
    tmp.replace(path)


def read_state(env: Mapping[str, str] | None = None) -> DemoState | None:
    path = state_file(env)
    try:
        return DemoState.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a demo state file ({err}); delete it or rerun `make demo`") from err


def apply_state(env: MutableMapping[str, str]) -> DemoState | None:
    """Fill `env` from the demo's state file where the environment says nothing; returns the state applied."""
    state = read_state(env)
    if state is None:
        return None
    if not any(env.get(name) for name in S3_CHOICE_VARIABLES):
        env.update(state.s3_env())
    if not env.get("SIZING_AIRFLOW_URL"):
        env["SIZING_AIRFLOW_URL"] = state.airflow_url
        env.setdefault("SIZING_AIRFLOW_USER", state.airflow_user)
        env.setdefault("SIZING_AIRFLOW_PASSWORD_FILE", state.airflow_password_file)
    return state
