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
from sizing.resources.scalemodel import FITTED_MODEL, MODEL_MACHINE, OWN_MODEL, fit_problems

REPO = Path(__file__).resolve().parents[1]
TWO_CORES = MODEL_MACHINE  # this machine's kind: 2 cores, 23.5 GiB


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


def scale_campaign(*clusters: dict, **factors: float):
    """quorum-sizing-scale (a 0.6-core generator; the model factors by the one rule unless `factors` give them) with
    these clusters."""
    raw = dict(load_campaign(REPO / "campaigns" / "quorum-sizing-scale.yaml").raw)
    raw["scale_model"] = {**raw["scale_model"], **factors}
    return parse_campaign({**raw, "clusters": {"list": list(clusters)}})


def test_seed_000_and_002_deciding_clusters_are_local_configs_that_fit_two_cores():
    """7x c5.4xlarge (seed 000's 7x16) and 9x c5.2xlarge (the 9x8s) as campaigns of their own: the one rule
    (sizing.resources.scalemodel.fitted_factors) gives each the largest factors on the grid at which it and the 0.6-core
    generator fit the model machine's 1.75 cores and 19.5 GiB. Known answers, by hand: CPU (1.75 - 0.6) / 112 vCPUs =
    0.0103 -> 0.01 and / 72 = 0.0160 -> 0.0155; memory (23.5 - 4 reserved GiB = 19,968 MiB - 2,048 - 7 x 160 MiB idle) /
    (7 x 32 GiB) = 75.0 -> 72 and (19,968 - 2,048 - 9 x 160) / (9 x 16) = 114.4 -> 112 MiB per GiB."""
    seven = scale_campaign({"nodes": 7, "instance_type": "c5.4xlarge", "volume": "gp2"})
    nine = scale_campaign({"nodes": 9, "instance_type": "c5.2xlarge", "volume": "gp2"})
    assert [s.nodes for s in (*seven.clusters, *nine.clusters)] == [7, 9]
    for campaign, cpu, memory, vcpus in ((seven, 0.01, 72, 7 * 16), (nine, 0.0155, 112, 9 * 8)):
        assert campaign.scale_model.rule == FITTED_MODEL
        assert (campaign.scale_model.cpu_cores_per_vcpu, campaign.scale_model.memory_mib_per_gib) == (cpu, memory)
        demand = campaign_demand(campaign, parallelism=1)
        assert demand is not None and demand.cores == pytest.approx(vcpus * cpu + 0.6)
        assert fit_problems(demand, TWO_CORES) == []
    # one grid step more would not fit: the largest that fits, not merely one that does
    larger = scale_campaign({"nodes": 7, "instance_type": "c5.4xlarge", "volume": "gp2"}, memory_mib_per_gib=80)
    too_much_memory = campaign_demand(larger, parallelism=1)
    assert larger.scale_model.rule == OWN_MODEL
    assert too_much_memory is not None and "20.6 GiB" in fit_problems(too_much_memory, TWO_CORES)[0]


def test_a_big_cluster_is_refused_by_what_limits_it_the_ports_or_the_machine():
    with pytest.raises(SpecError) as refused:
        scale_campaign({"nodes": LOCAL_MAX_NODES + 1, "instance_type": "c5.xlarge", "volume": "gp2"})
    (problem,) = [p for p in refused.value.problems if p.path == "clusters"]
    assert "50-port block holds at most 10 nodes" in problem.reason
    # 9 x c5.9xlarge on the campaign's own factors, 0.01 cores per vCPU and 80 MiB per GiB (a what-if): the spec takes
    # it (the block holds 9), the machine does not: 3.24 + 0.6 cores, 9 x (5,760 + 160) MiB + 2 GiB, each refusal
    # saying which. On the one rule it would be fitted instead.
    too_big = scale_campaign({"nodes": 9, "instance_type": "c5.9xlarge", "volume": "gp2"}, cpu_cores_per_vcpu=0.01,
                             memory_mib_per_gib=80)
    demand = campaign_demand(too_big, parallelism=1)
    assert demand is not None
    cores, memory = fit_problems(demand, TWO_CORES)
    assert "3.84 cores and 54.0 GiB" in cores and "this machine has 2 cores" in cores
    assert "this machine has 23.5 GiB of memory" in memory
