"""Issue 44: a local cluster's node limit follows from its port block's layout (sizing/resources/localports.py), and a
local config is refused only past that limit (the spec) or when its envelopes do not fit the machine (validation's
sizing.resources.scalemodel.fit_problems). Pure: no cluster, no machine (a Machine is given)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sizing.campaign import load_campaign, parse_campaign
from sizing.campaign.envelopes import campaign_demand
from sizing.documents.fields import SpecError
from sizing.resources.localports import (
    LOCAL_CLI_PORTS,
    LOCAL_MAX_NODES,
    LOCAL_NODE_PORT_OFFSETS,
    LOCAL_PORT_BLOCK,
    local_port_base,
    max_nodes_in_block,
    node_ports,
)
from sizing.resources.scalemodel import GIB, Machine, fit_problems

REPO = Path(__file__).resolve().parents[1]
TWO_CORES = Machine(cores=2, memory_bytes=23 * GIB)  # this machine's kind: 2 cores, 23 GiB


def test_the_block_of_50_holds_10_nodes():
    # four runs of 10 ports (AMQP, management, Prometheus, distribution), then 10 CLI ports for 10 parallel boots
    assert LOCAL_MAX_NODES == 10


@pytest.mark.parametrize(("offsets", "cli", "block", "expected"), [
    ({"a": 0, "b": 9, "c": 18, "d": 27}, range(36, 50), 50, 9),  # runs of 9, 14 CLI ports
    ({"a": 0, "b": 10, "c": 20, "d": 30}, range(40, 43), 50, 3),  # 3 CLI ports: 3 boots at once
    ({"a": 0, "b": 5}, range(12, 20), 20, 5),  # the shortest run decides
])
def test_the_limit_is_the_shortest_run_or_the_cli_ports(offsets, cli, block, expected):
    assert max_nodes_in_block(offsets, cli, block) == expected


def test_a_layout_past_its_block_is_refused():
    with pytest.raises(ValueError, match="does not fit a 50-port block"):
        max_nodes_in_block({"a": 0, "b": 10}, range(45, 55), 50)


def test_every_port_of_two_neighbouring_full_clusters_is_distinct_and_in_its_block():
    used: list[int] = []
    for slot in (0, 1):
        base = local_port_base(slot)
        cli = [base + p for p in LOCAL_CLI_PORTS]
        ports = [p for n in range(1, LOCAL_MAX_NODES + 1) for p in node_ports(base, n).values()] + cli
        assert all(base <= p < base + LOCAL_PORT_BLOCK for p in ports)
        used += ports
    assert len(used) == len(set(used)) == 2 * LOCAL_PORT_BLOCK
    assert node_ports(21000, 9) == {role: 21000 + offset + 8 for role, offset in LOCAL_NODE_PORT_OFFSETS.items()}
    with pytest.raises(ValueError, match=r"nodes 1\.\.10"):
        node_ports(21000, LOCAL_MAX_NODES + 1)


def scale_campaign(*clusters: dict, memory_mib_per_gib: float | None = None):
    """quorum-sizing-scale (0.01 cores per vCPU, a 0.6-core generator, 80 MiB per GiB) with these clusters (and
    another memory factor, if given)."""
    raw = dict(load_campaign(REPO / "campaigns" / "quorum-sizing-scale.yaml").raw)
    if memory_mib_per_gib is not None:
        raw["scale_model"] = {**raw["scale_model"], "memory_mib_per_gib": memory_mib_per_gib}
    return parse_campaign({**raw, "clusters": {"list": list(clusters)}})


def test_seed_000_and_002_deciding_clusters_are_local_configs_that_fit_two_cores():
    """7x c5.4xlarge (seed 000's 7x16) and 9x c5.2xlarge (the 9x8s): 1.12 and 0.72 cores at 0.01 per vCPU, plus the
    generator's 0.6, within the 1.75 cores a 2-core machine leaves. Memory: at quorum-sizing-scale's 80 MiB per GiB
    the seven c5.4xlarge envelopes (the idle footprint on top of each) and the generator need 20.6 GiB of the 20 left,
    so a campaign of the 7x16 takes the largest factor that fits, 72 (the idle-quarter rule holds: 160 of 1,082 MiB);
    the 9x8 fits at 80 (at 72 a c5.2xlarge's idle node would hold 0.26 of its watermark: the two need a campaign
    each)."""
    seven = scale_campaign({"nodes": 7, "instance_type": "c5.4xlarge", "volume": "gp2"}, memory_mib_per_gib=72)
    nine = scale_campaign({"nodes": 9, "instance_type": "c5.2xlarge", "volume": "gp2"})
    assert [s.nodes for s in (*seven.clusters, *nine.clusters)] == [7, 9]
    for campaign, cores in ((seven, 7 * 16 * 0.01), (nine, 9 * 8 * 0.01)):
        demand = campaign_demand(campaign, parallelism=1)
        assert demand is not None and demand.cores == pytest.approx(cores + 0.6)
        assert fit_problems(demand, TWO_CORES) == []
    too_much_memory = campaign_demand(scale_campaign({"nodes": 7, "instance_type": "c5.4xlarge", "volume": "gp2"}),
                                      parallelism=1)
    assert too_much_memory is not None and "20.6 GiB" in fit_problems(too_much_memory, TWO_CORES)[0]


def test_a_big_cluster_is_refused_by_what_limits_it_the_ports_or_the_machine():
    with pytest.raises(SpecError) as refused:
        scale_campaign({"nodes": LOCAL_MAX_NODES + 1, "instance_type": "c5.xlarge", "volume": "gp2"})
    (problem,) = [p for p in refused.value.problems if p.path == "clusters"]
    assert "50-port block holds at most 10 nodes" in problem.reason
    # 9 x c5.9xlarge at 0.01 cores per vCPU and 80 MiB per GiB: the spec takes it (the block holds 9), the machine
    # does not: 3.24 + 0.6 cores, 9 x (5,760 + 160) MiB + 2 GiB, each refusal saying which
    too_big = scale_campaign({"nodes": 9, "instance_type": "c5.9xlarge", "volume": "gp2"})
    demand = campaign_demand(too_big, parallelism=1)
    assert demand is not None
    cores, memory = fit_problems(demand, TWO_CORES)
    assert "3.84 cores and 54.0 GiB" in cores and "this machine has 2 cores" in cores
    assert "this machine has 23.0 GiB of memory" in memory
