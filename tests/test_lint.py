"""The tree stays ruff-clean and terraform-formatted (the same checks as `make lint`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tools  # ruff and terraform

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    ruff = Path(sys.executable).parent / "ruff"
    proc = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]


def test_terraform_is_formatted() -> None:
    proc = subprocess.run(["terraform", "fmt", "-check", "-recursive", "terraform"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode == 0, f"not formatted: {proc.stdout}"
