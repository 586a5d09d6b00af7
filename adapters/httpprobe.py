"""Plain HTTP probes of the services the apps start on 127.0.0.1 (the demo's S3 server and its SeaweedFS master,
Airflow's api-server): does it answer, what does a JSON endpoint say. The apps talk HTTP only through adapters
(import contract apps-no-raw-http), so the one HTTP client library stays at the edge."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests

# What a failed request raises (refused, timed out, an error status after raise_for_status): callers catch this name.
HttpError = requests.RequestException


def status(url: str, timeout_s: float = 2.0) -> int | None:
    """The HTTP status `url` answers with; None when nothing answers (refused, timed out, reset)."""
    try:
        return requests.get(url, timeout=timeout_s).status_code
    except requests.RequestException:
        return None


def wait_answering(url: str, timeout_s: float, what: str, poll_s: float = 0.5) -> None:
    """Until `url` answers without a server error (< 500); TimeoutError naming `what` otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = status(url)
        if code is not None and code < 500:
            return
        time.sleep(poll_s)
    raise TimeoutError(f"{what} did not answer at {url} within {timeout_s:.0f}s")


def get_json(url: str, params: Mapping[str, Any] | None = None, timeout_s: float = 5.0) -> Any:
    """GET `url` and decode its JSON body (raises HttpError, or ValueError for a body that is no JSON)."""
    return requests.get(url, params=dict(params or {}), timeout=timeout_s).json()
