"""Keep this host's calibration (sizing.calibration), measured by loadgen.calibrate (`sizing calibrate`).

A calibration belongs to the host, not to a checkout or a demo's state: it is kept in one file per machine
(SIZING_CALIBRATION_FILE, else /var/lib/rabbit-sizing/calibration.json; one entry per host fingerprint), so every
checkout, test session and CI run on this host shares it. `current()` measures when this host has none (or only an
old one), so a run never goes uncalibrated.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import platform
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sizing.calibration import HostCalibration, cpu_model, host_fingerprint

log = logging.getLogger("sizing.calibration")

FILE_ENV = "SIZING_CALIBRATION_FILE"
DEFAULT_FILE = Path("/var/lib/rabbit-sizing/calibration.json")


class CalibrationError(RuntimeError):
    pass


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


def stored(env: Mapping[str, str] | None = None, now: float | None = None) -> HostCalibration | None:
    """This host's stored calibration, if it has a fresh one."""
    fingerprint, _, _ = this_host()
    try:
        entries = json.loads(_store_path(env).read_text())
    except (OSError, ValueError):
        return None
    data = entries.get(fingerprint)
    if not data:
        return None
    calibration = HostCalibration.from_dict(data)
    return calibration if calibration.fresh(time.time() if now is None else now) else None


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


def current(measure: Callable[[Callable[[str], None]], HostCalibration], env: Mapping[str, str] | None = None,
            echo: Callable[[str], None] = log.info) -> HostCalibration | None:
    """This host's calibration: the stored one, or measured now (and stored) when it has none. None, said in one
    line, when it cannot be measured here (no CPU envelope to measure in): the run's envelopes are then uncalibrated,
    and its `measured_on` says so. `measure` runs the reference measurement (loadgen.calibrate.measure: it drives
    the load generator, which no adapter imports)."""
    calibration = stored(env)
    if calibration is not None:
        return calibration
    path = _store_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:  # two runs admitted at once measure once
        fcntl.flock(lock, fcntl.LOCK_EX)
        calibration = stored(env)
        if calibration is not None:
            return calibration
        echo("this host has no calibration yet: measuring it (about a minute; `sizing calibrate` does it on demand)")
        try:
            calibration = measure(echo)
        except CalibrationError as err:
            echo(f"this host cannot be calibrated ({err}): the run's envelopes are uncalibrated")
            return None
        store(calibration, env)
    echo(calibration.describe())
    return calibration


