"""The demo's one-line reason for a failed task, from Airflow 3's structured task log (entries as the REST API
returns them; these are trimmed from a real failed `report` task): the exception lives in `error_detail`, the
entry's `event` only says "Task failed with exception", and the last event is an `::endgroup::` marker."""

from __future__ import annotations

from app.demo import log_lines, pick_reason

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
