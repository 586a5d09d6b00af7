"""The cost model against seed 000's leaderboards ("cost per 1000 messages per month").

Seed prices: c5.2xlarge $0.34/h, c5.4xlarge $0.68/h, c5.9xlarge $1.53/h, 720 h/month; per node one
io1 volume ($725/month), gp2 ($100/month) or st1 ($315/month). Where our figure, rounded to the dollar,
differs from the seed's printed one, the seed's arithmetic is wrong and the test pins the correct value.
"""

from __future__ import annotations

import pytest

from sizing.catalog import load_catalog
from sizing.cost import Volume, cluster_monthly_cost, cost_per_1000_msgs, volume_monthly_cost

SHAPES = {"3x36": (3, "c5.9xlarge"), "3x16": (3, "c5.4xlarge"), "5x16": (5, "c5.4xlarge"),
          "7x16": (7, "c5.4xlarge"), "5x8": (5, "c5.2xlarge"), "7x8": (7, "c5.2xlarge"), "9x8": (9, "c5.2xlarge")}

# (volume, shape, top rate in k msg/s as printed, seed's printed $/1000 msg/s/month at that rate)
SEED_TOP_THROUGHPUT = [
    ("io1", "5x8", 50, 97), ("io1", "3x16", 37, 98), ("io1", "5x16", 53, 115), ("io1", "7x8", 54, 126),
    ("io1", "3x36", 40, 137), ("io1", "9x8", 63, 139), ("io1", "7x16", 65, 142),
    ("gp2", "5x8", 42, 41), ("gp2", "7x8", 54, 45), ("gp2", "9x8", 66, 47), ("gp2", "3x16", 36, 49),
    ("gp2", "5x16", 54, 55), ("gp2", "7x16", 67, 72), ("gp2", "3x36", 37, 97),
    ("st1", "5x16", 54, 74), ("st1", "5x8", 37, 76), ("st1", "7x8", 50, 78), ("st1", "9x8", 62, 81),
    ("st1", "3x16", 27, 89), ("st1", "7x16", 67, 94), ("st1", "3x36", 32, 132),
]

# The seed's slips, with the correct figure: monthly cost / (rate / 1000), rounded to the dollar.
SEED_SLIPS = {
    # 7x16 io1: $8502.20/month / 65 = $130.80. The printed $142 is the cost at 60k msg/s (its top
    # *matched* rate), not at the 65k top throughput the same line prints.
    ("io1", "7x16"): 131,
    # 7x16 gp2: $4127.20 / 67 = $61.60; the printed $72 matches no rate the seed reports for it.
    ("gp2", "7x16"): 62,
    # 7x16 st1: $5632.20 / 67 = $84.06; the printed $94 is again the cost at 60k msg/s.
    ("st1", "7x16"): 84,
    # 3x36 st1: $4249.80 / 32 = $132.81, which rounds to $133; the seed truncated to $132.
    ("st1", "3x36"): 133,
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("aws-us-east-1-2020")


def test_volume_prices_match_the_seed(catalog) -> None:
    assert volume_monthly_cost(catalog.volumes["io1"], Volume("io1")) == 725
    assert volume_monthly_cost(catalog.volumes["gp2"], Volume("gp2")) == pytest.approx(100)
    assert volume_monthly_cost(catalog.volumes["st1"], Volume("st1")) == pytest.approx(315)


def test_monthly_cluster_cost(catalog) -> None:
    # 5 x (0.34 $/h x 720 h + $725) = 5 x 969.80
    assert cluster_monthly_cost(catalog, 5, "c5.2xlarge", Volume("io1")) == pytest.approx(4849.0)
    assert cluster_monthly_cost(catalog, 3, "c5.9xlarge", Volume("gp2")) == pytest.approx(3604.8)


@pytest.mark.parametrize(("volume", "shape", "rate_k", "printed"), SEED_TOP_THROUGHPUT,
                         ids=[f"{v}-{s}" for v, s, _, _ in SEED_TOP_THROUGHPUT])
def test_seed_000_cost_at_top_throughput(catalog, volume: str, shape: str, rate_k: int, printed: int) -> None:
    nodes, instance = SHAPES[shape]
    cost = cost_per_1000_msgs(cluster_monthly_cost(catalog, nodes, instance, Volume(volume)), rate_k * 1000)
    expected = SEED_SLIPS.get((volume, shape), printed)
    assert round(cost) == expected
    assert (round(cost) != printed) == ((volume, shape) in SEED_SLIPS)


def test_seed_leaderboard_order_is_reproduced_where_the_seed_is_right(catalog) -> None:
    for volume in ("io1", "gp2", "st1"):
        rows = [r for r in SEED_TOP_THROUGHPUT if r[0] == volume]
        costs = {s: cost_per_1000_msgs(cluster_monthly_cost(catalog, *SHAPES[s], Volume(volume)), k * 1000)
                 for _, s, k, _ in rows}
        seed_order = [s for _, s, _, _ in rows if (volume, s) not in SEED_SLIPS]
        ours = [s for s in sorted(costs, key=costs.get) if (volume, s) not in SEED_SLIPS]
        assert ours == seed_order, volume


def test_cost_at_the_30k_target_exposes_the_seed_dividing_by_45k(catalog) -> None:
    # Seed 000 prints $135 for io1 5x16 "at a target of 30k msg/s": that is $6073 / 45, not / 30.
    monthly = cluster_monthly_cost(catalog, 5, "c5.4xlarge", Volume("io1"))
    assert round(cost_per_1000_msgs(monthly, 30_000)) == 202
    assert round(cost_per_1000_msgs(monthly, 45_000)) == 135


def test_gp3_is_priced_by_component_above_its_free_baseline(catalog) -> None:
    gp3 = catalog.volumes["gp3"]
    assert volume_monthly_cost(gp3, Volume("gp3")) == pytest.approx(80.0)  # 1000 GB x $0.08
    assert volume_monthly_cost(gp3, Volume("gp3", iops=6000, throughput_mbps=250)) == pytest.approx(
        80.0 + 3000 * 0.005 + 125 * 0.04)


def test_flat_priced_volume_scales_with_size(catalog) -> None:
    assert volume_monthly_cost(catalog.volumes["io1"], Volume("io1", size_gb=400)) == pytest.approx(1450)


def test_cost_needs_a_positive_rate() -> None:
    with pytest.raises(ValueError, match="rate must be positive"):
        cost_per_1000_msgs(1000.0, 0)
