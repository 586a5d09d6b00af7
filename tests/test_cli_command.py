"""The set-up installs the project into its virtualenv (scripts/bootstrap.sh): `sizing` is a command there, runs
from any directory, and is the same program as `python -m app.cli` (issue 26)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_sizing_command_runs_from_any_directory_and_matches_the_module(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "sizing"
    assert command.is_file(), f"{command} is missing: scripts/bootstrap.sh installs the project (make setup)"
    spec = REPO / "campaigns" / "local-quick.yaml"
    by_command = subprocess.run([str(command), "plan", str(spec)], cwd=tmp_path, capture_output=True, text=True,
                                timeout=120)
    by_module = subprocess.run([sys.executable, "-m", "app.cli", "plan", str(spec)], cwd=REPO, capture_output=True,
                               text=True, timeout=120)
    assert by_command.returncode == 0, by_command.stderr
    assert by_command.stdout == by_module.stdout and "n1-c5.2xlarge-gp2" in by_command.stdout
