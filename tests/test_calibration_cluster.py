"""The host calibration's reference measurement on a real node (issue 44; loadgen/calibrate.py), port slot 97.

Counters: the node's cgroup CPU counter (the OS's own: the node may not use more than its quota, and the measurement
must have kept it busy, or its CPU did not bind) and the broker's confirms as the generator counted them. About 45 s.
"""

from __future__ import annotations

import pytest

from adapters import envelope as env
from loadgen.calibrate import SLOT, measure
from sizing.resources.calibration import REFERENCE_NODE_CORES, SPEED_RANGE
from sizing.resources.localports import local_port_base
from tests.fixtures.cluster import busy_ports

pytestmark = [pytest.mark.cluster, pytest.mark.alone, pytest.mark.slow]


def test_the_reference_measurement_keeps_its_node_at_its_quota_and_leaves_nothing():
    lines: list[str] = []
    calibration = measure(echo=lines.append)
    used = calibration.node_cpu_s / calibration.measured_s
    print(f"{calibration.describe()}; {calibration.msg_s:,.0f} msg/s, node at {used:.3f} of {REFERENCE_NODE_CORES} "
          f"cores over {calibration.measured_s:.0f} s")
    assert calibration.problems() == []
    assert 0.8 * REFERENCE_NODE_CORES <= used <= 1.03 * REFERENCE_NODE_CORES  # the kernel holds it at its quota
    assert SPEED_RANGE[0] <= calibration.speed <= SPEED_RANGE[1]
    assert calibration.messages > 1000 and calibration.measured_s >= 15
    assert any("reference node" in line for line in lines)  # it says what it does
    # torn down: no port of its block is listening, no cgroup of its port block is left (adapters.envelope names a
    # cluster's group <owner>-p<port base>)
    base = local_port_base(SLOT)
    assert not busy_ports(base)
    cgroups = env.detect_cgroups()
    assert cgroups is not None
    left = [child.name for parent in cgroups.dirs(env.PARENT).values() if parent.is_dir()
            for child in parent.iterdir() if child.is_dir() and child.name.endswith(f"-p{base}")]
    assert left == []
