"""Volume and instance limits at each volume's own size (sizing.resources.catalog.volume_limits), against AWS's 2020
figures worked out by hand from the rules the catalog file quotes."""

from __future__ import annotations

import pytest

from sizing.resources.catalog import MIB, load_catalog, resource_limits, volume_limits
from sizing.resources.cost import Volume

MB_PER_MIB = MIB / 1e6


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("aws-us-east-1-2020")


@pytest.mark.parametrize(("volume", "size", "iops", "want_iops", "want_mib_s"), [
    ("gp2", 1000, None, 3000, 250),  # 3 IOPS per GiB; 250 MiB/s from 334 GiB
    ("gp2", 100, None, 300, 128),  # 128 MiB/s up to 170 GiB
    ("gp2", 20, None, 100, 128),  # at least 100 IOPS
    ("gp2", 6000, None, 16000, 250),  # at most 16000 IOPS
    ("st1", 1000, None, 500, 40 * 1000 / 1024),  # seed 001's 1 TB HDD: 40 MiB/s per TiB of baseline
    ("st1", 7000, None, 500, 40 * 7000 / 1024),  # seed 000's 7000 GB st1: 273 MiB/s, not 1 TB's
    ("st1", 16000, None, 500, 500),  # at most 500 MiB/s
    ("io1", 200, None, 10000, 500),  # the catalog's 10000 provisioned IOPS: 2500 MiB/s of 256 KiB capped at 500
    ("io1", 200, 1000, 1000, 250),  # 1000 IOPS x 256 KiB
])
def test_volume_limits_scale_with_size_and_provisioning(catalog, volume, size, iops, want_iops, want_mib_s) -> None:
    limits = volume_limits(catalog.volumes[volume], size, iops)
    assert limits.iops == pytest.approx(want_iops)
    assert limits.mb_s == pytest.approx(want_mib_s * MB_PER_MIB)


def test_a_node_has_each_volumes_limits_and_its_instances_ebs_ceiling(catalog) -> None:
    # seed 001's rabbitmq13: 3 x c4.4xlarge, data and WAL each on a 1 TB st1
    limits = resource_limits(catalog, "c4.4xlarge", {"data": Volume("st1", 1000), "wal": Volume("st1", 1000)})
    assert set(limits.roles) == {"data", "wal"}
    assert limits.roles["wal"].mb_s == pytest.approx(40 * 1000 / 1024 * MB_PER_MIB)
    assert (limits.ebs_mb_s, limits.ebs_iops, limits.network_mbit_s) == (250.0, 16000.0, 5000.0)
    # c5.2xlarge: 2300 Mbit/s of EBS baseline = 287.5 MB/s
    assert resource_limits(catalog, "c5.2xlarge", {"data": Volume("gp2")}).ebs_mb_s == pytest.approx(287.5)
