"""Every CLI command against an unreachable stack and a missing campaign/run/config: a non-zero exit, one
line on stderr, no traceback. Each command runs as a new user would type it: a subprocess with a clean
environment (no AWS_*, SIZING_* or AIRFLOW_* variables except SIZING_STATE_DIR, which says where the demo's
state file is), finding the stack through the state file the demo writes (app.stackstate).

The missing-run cases check the message against what the test put in the store (known answer).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.stackstate import DemoState, write_state
from sizing.contract.layout import report_key, table_prefix
from sizing.resources.localports import LOCAL_PORT_BLOCK, LOCAL_PORT_FIRST

REPO_ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE = LOCAL_PORT_FIRST + LOCAL_PORT_BLOCK * 40  # slot 40 is this test's: nothing listens on its block


def run_cli(state_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(state_dir), "LANG": "C.UTF-8", "SIZING_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_failure(result: subprocess.CompletedProcess, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def state(tmp_path: Path, s3_endpoint: str, bucket: str, airflow_url: str) -> Path:
    (tmp_path / "passwords.json").write_text('{"admin": "admin"}')
    write_state(DemoState(s3_endpoint, bucket, "us-east-1", "testing", "testing", airflow_url, "admin",
                          str(tmp_path / "passwords.json")), tmp_path / "demo.json")
    return tmp_path


COMMANDS = [
    ("runs",),
    ("report", "--campaign", "local-quick", "--run-id", "demo", "-o", "report.html"),
    ("query", "--campaign", "local-quick", "SELECT * FROM leaderboards"),
    ("trigger", "--campaign", "campaigns/local-quick.yaml", "--run-label", "r1"),
    ("backfill", "--campaign", "campaigns/local-quick.yaml", "--config", "n1-c5.2xlarge-gp2", "--run-label", "r1"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_unreachable_stack_is_one_line(tmp_path, command):
    s = state(tmp_path, f"http://127.0.0.1:{UNREACHABLE}", "rabbit-sizing", f"http://127.0.0.1:{UNREACHABLE + 1}")
    airflow = command[0] in ("trigger", "backfill")
    port = UNREACHABLE + 1 if airflow else UNREACHABLE
    assert_one_line_failure(run_cli(s, *command), "cannot reach", "Airflow" if airflow else "S3 endpoint", str(port))


def test_no_stack_at_all_says_how_to_get_one(tmp_path):
    for command in COMMANDS:
        line = assert_one_line_failure(run_cli(tmp_path, *command))
        assert "make demo" in line


@pytest.fixture
def stored(s3, tmp_path):
    """A store holding campaign local-quick's leaderboards and the report of run 'demo' only."""
    import pyarrow as pa

    from adapters.objectstore import StoreSpec

    store = StoreSpec("s3", s3.bucket, s3.endpoint_url).open()
    store.put_parquet(table_prefix("leaderboards", "local-quick") + "part-0.parquet",
                      pa.table({"config_id": ["n1"], "rank_at_target": [1]}))
    store.put(report_key("local-quick", "demo"), b"<html>report</html>")
    return state(tmp_path, s3.endpoint_url, s3.bucket, f"http://127.0.0.1:{UNREACHABLE + 1}")


def test_missing_run_lists_the_runs_that_exist(stored):
    line = assert_one_line_failure(run_cli(stored, "report", "--campaign", "local-quick", "--run-id", "nope"),
                                   "'nope'")
    assert line.endswith("(runs of local-quick with a report: demo)")


@pytest.mark.parametrize("command", [("report", "--campaign", "nosuch", "--run-id", "demo"),
                                     ("query", "--campaign", "nosuch", "SELECT * FROM leaderboards")],
                         ids=["report", "query"])
def test_missing_campaign_lists_the_campaigns_that_exist(stored, command):
    assert_one_line_failure(run_cli(stored, *command), "'nosuch'", "local-quick (runs with a report: demo)")


def test_backfill_of_an_unknown_config_lists_the_configs(stored):
    assert_one_line_failure(run_cli(stored, "backfill", "--config", "n9-x", "--run-label", "r1"),
                            "params.configs: unknown config 'n9-x'; campaign local-quick has:")


def test_the_found_report_is_fetched_and_runs_are_listed(stored, tmp_path):
    out = tmp_path / "r.html"
    fetched = run_cli(stored, "report", "--campaign", "local-quick", "--run-id", "demo", "-o", str(out))
    assert fetched.returncode == 0, fetched.stderr
    assert out.read_bytes() == b"<html>report</html>"
    listed = run_cli(stored, "runs")
    assert "local-quick: runs with a report: demo" in listed.stdout


def test_debug_shows_the_traceback(tmp_path):
    result = run_cli(tmp_path, "--debug", "runs")
    assert result.returncode != 0 and "Traceback" in result.stderr and "NoCredentialsError" in result.stderr


@pytest.mark.spark
def test_a_query_prints_its_answer_only_and_a_wrong_one_is_one_line_with_sparks_suggestions(stored):
    """Issue 25, item 5. Known answer: the one leaderboard row the fixture stored. Spark's own log lands in the file
    --debug names (the JVM's and log4j's lines there prove the session really ran)."""
    sql = "SELECT config_id, rank_at_target FROM leaderboards"
    ok = run_cli(stored, "query", "--campaign", "local-quick", sql)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert ok.stdout.splitlines() == ["config_id  rank_at_target", "       n1               1", "(1 rows)"], ok.stdout
    log = stored / "logs" / "query.log"
    assert log.stat().st_size > 0  # Spark said something, and it went here

    wrong = run_cli(stored, "query", "--campaign", "local-quick", "SELECT confg_id FROM leaderboards")
    line = assert_one_line_failure(wrong, "query failed", "`confg_id`", "Did you mean one of the following?",
                                   "`config_id`")
    assert "SQLSTATE" not in line and wrong.stdout == ""

    debug = run_cli(stored, "--debug", "query", "--campaign", "local-quick", sql)
    assert debug.returncode == 0 and debug.stderr.strip() == f"sizing query: Spark's and the JVM's log: {log}"
    assert debug.stdout == ok.stdout


def test_a_reader_that_goes_away_is_no_internal_error(tmp_path):
    # `sizing validate ... | head`: the pipe's reader closes before the command writes (closed here at once, while
    # the interpreter starts): exit 141 (128 + SIGPIPE) and nothing on stderr, not "internal error ... (a bug)"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "SIZING_STATE_DIR": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "app.cli", "validate", "campaigns/local-quick.yaml"],
                               cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=120), stderr) == (141, "")
