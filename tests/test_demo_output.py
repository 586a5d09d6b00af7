"""What the demo prints. A failed task's one-line reason, from Airflow 3's structured task log (entries as the
REST API returns them; these are trimmed from a real failed `report` task): the exception lives in
`error_detail`, the entry's `event` only says "Task failed with exception", and the last event is an
`::endgroup::` marker. A client-settings campaign's per-step table, from phase_summary rows as given."""

from __future__ import annotations

import pandas as pd

from app.demo import client_settings_table, log_lines, pick_reason

LOG = [
    {"event": "::group::Pre Execute", "logger": "task"},
    {"event": "::endgroup::", "logger": "task"},
    {"event": "Found credentials in environment variables.", "logger": "botocore.credentials"},
    {"level": "error", "event": "Task failed with exception", "logger": "task",
     "error_detail": [{"exc_type": "AttributeError", "exc_value": "'Scenario' object has no attribute 'isolated_from'",
                       "exc_notes": [], "syntax_error": None, "is_cause": False, "frames": []}]},
    {"event": "::group::Post Execute", "logger": "task"},
    {"event": "::endgroup::", "logger": "task"},
]


def test_the_reason_is_the_exception_not_the_last_log_marker() -> None:
    assert pick_reason(log_lines(LOG)) == "AttributeError: 'Scenario' object has no attribute 'isolated_from'"
    # plain-text logs (Airflow 2 style) still read line by line
    assert pick_reason(log_lines("start\nValueError: bad input\nend")) == "ValueError: bad input"


def test_client_setting_steps_print_in_run_order_with_their_latency_basis() -> None:
    # known answers: the ndq-10q-multiack-local demo's row (no confirms: 0 confirmed/s) and two in-flight steps
    summary = pd.DataFrame([
        {"config_id": "n1", "scenario": "inflight", "phase_name": "confirms_in_flight=200", "start_s": 10.0,
         "publish_rate": 15187.0, "confirm_rate": 15187.0, "consume_rate": 15182.0, "e2e_p99_ms": 45.7,
         "latency_basis": "sent", "valid": True},
        {"config_id": "n1", "scenario": "inflight", "phase_name": "confirms_in_flight=1", "start_s": 0.0,
         "publish_rate": 649.0, "confirm_rate": 649.0, "consume_rate": 649.0, "e2e_p99_ms": 9.0,
         "latency_basis": "sent", "valid": True},
        {"config_id": "n1", "scenario": "max-throughput", "phase_name": "rate=max", "start_s": 0.0,
         "publish_rate": 16949.2, "confirm_rate": 0.0, "consume_rate": 8787.3, "e2e_p99_ms": 11881.5,
         "latency_basis": "sent", "valid": False},
        {"config_id": "n1", "scenario": "capacity", "phase_name": "rate-1000", "start_s": 0.0,
         "publish_rate": 1000.0, "confirm_rate": 1000.0, "consume_rate": 1000.0, "e2e_p99_ms": 5.0,
         "latency_basis": "intended", "valid": True}])
    lines = client_settings_table(summary, ["inflight", "max-throughput"]).splitlines()
    assert lines[0].split() == ["scenario", "step", "published/s", "confirmed/s", "consumed/s", "e2e", "p99", "ms",
                                "latency", "from", "kept", "up"]
    assert [line.split()[1] for line in lines[1:]] == ["confirms_in_flight=1", "confirms_in_flight=200", "rate=max"]
    assert lines[3].split()[2:] == ["16,949.2", "0.0", "8,787.3", "11,881.5", "sent", "False"]
