"""Keep this host's calibration (sizing.resources.calibration), measured by loadgen.calibrate (`sizing calibrate`).

A calibration belongs to the host, not to a checkout or a demo's state: it is kept in one file per machine
(SIZING_CALIBRATION_FILE, else /var/lib/rabbit-sizing/calibration.json; one entry per host fingerprint), so
every checkout, test session and CI run on this host shares it. `current()` measures when this host has none (or only an
old one), so a run never goes uncalibrated.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from adapters.filelock import held
from sizing.resources.calibration import MAX_AGE_S, HostCalibration, cpu_model, host_fingerprint

log = logging.getLogger("sizing.resources.calibration")

FILE_ENV = "SIZING_CALIBRATION_FILE"
DEFAULT_FILE = Path("/var/lib/rabbit-sizing/calibration.json")


REPO_ROOT = Path(__file__).resolve().parents[1]
MEASURE_TIMEOUT_S = 600


class CalibrationError(RuntimeError):
    pass


def measure_command(python: str = sys.executable) -> list[str]:
    """The reference measurement is the load generator's own command (loadgen.calibrate): no adapter imports it."""
    return [python, "-m", "loadgen", "calibrate"]


def measure_by_command(echo: Callable[[str], None] = log.info) -> HostCalibration:
    """Run `measure_command` (it stores what it measured) and return this host's calibration as stored."""
    try:
        proc = subprocess.run(measure_command(), capture_output=True, text=True, timeout=MEASURE_TIMEOUT_S,
                              cwd=REPO_ROOT, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CalibrationError(f"{' '.join(measure_command())}: {err}") from err
    for line in proc.stdout.splitlines():
        echo(line)
    if proc.returncode != 0:
        raise CalibrationError(proc.stderr.strip()[-500:] or f"{' '.join(measure_command())} exited {proc.returncode}")
    calibration = stored()
    if calibration is None:
        raise CalibrationError(f"{' '.join(measure_command())} stored no calibration for this host")
    return calibration


def this_host() -> tuple[str, str, int]:
    """(fingerprint, CPU model, cores) of the machine this process runs on."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    boot_id = ""
    with contextlib.suppress(OSError):
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cores = os.cpu_count() or 1
    return host_fingerprint(cpuinfo, cores, platform.release(), boot_id), cpu_model(cpuinfo), cores


def _store_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get(FILE_ENV) or DEFAULT_FILE)


def stored(env: Mapping[str, str] | None = None, now: float | None = None,
           any_age: bool = False) -> HostCalibration | None:
    """This host's stored calibration, if it has a fresh one (`any_age`: however old)."""
    fingerprint, _, _ = this_host()
    try:
        entries = json.loads(_store_path(env).read_text())
    except (OSError, ValueError):
        return None
    data = entries.get(fingerprint)
    if not data:
        return None
    calibration = HostCalibration.from_dict(data)
    return calibration if any_age or calibration.fresh(time.time() if now is None else now) else None


def store(calibration: HostCalibration, env: Mapping[str, str] | None = None) -> Path:
    path = _store_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        entries = {}
    entries[calibration.fingerprint] = calibration.to_dict()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=2, sort_keys=True))
    tmp.replace(path)
    return path


def _age(calibration: HostCalibration | None) -> str:
    if calibration is None:
        return "missing"
    return f"{(time.time() - calibration.measured_at) / 60:,.0f} min old (kept {MAX_AGE_S / 60:,.0f} min)"


def current(measure: Callable[[Callable[[str], None]], HostCalibration], env: Mapping[str, str] | None = None,
            echo: Callable[[str], None] = log.info) -> HostCalibration | None:
    """This host's calibration: the stored one, or measured now (and stored) when it has none. None, said in one
    line, when it cannot be measured here (no CPU envelope to measure in): the run's envelopes are then uncalibrated,
    and its `measured_on` says so. `measure` runs the reference measurement (`measure_by_command`: the load
    generator's own command; tests pass their own)."""
    calibration = stored(env)
    if calibration is not None:
        return calibration
    path = _store_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    with held(path.with_name(f"{path.name}.lock")):  # two runs admitted at once measure once
        calibration = stored(env)
        if calibration is not None:
            return calibration
        older = stored(env, any_age=True)
        echo(f"this host's calibration is {_age(older)}: measuring it (about a minute; `sizing calibrate` does it "
             f"on demand)")
        try:
            calibration = measure(echo)
        except CalibrationError as err:
            if older is None:
                echo(f"this host cannot be calibrated ({err}): the run's envelopes are uncalibrated")
                return None
            # A busy machine is refused as a measurement; an old figure of this host is nearer than none.
            echo(f"this host cannot be calibrated now ({err}): the run keeps the calibration {_age(older)}")
            return older
        store(calibration, env)
    echo(calibration.describe())
    return calibration


