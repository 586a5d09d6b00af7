"""Where a local cluster's ports are: its slot's port block and the per-node layout inside it, and so how many
nodes a local cluster can have (issue 44: the port block limits it, the machine's fit is sizing.resources.scalemodel's).

The Terraform local module (terraform/modules/local_cluster/main.tf) lays the ports out the same way;
tests/test_terraform_hcl.py checks that it does (one home: here)."""

from __future__ import annotations

from collections.abc import Mapping

# Every local cluster gets a block of its own (its slot's), so configs run side by side on one machine.
LOCAL_PORT_FIRST = 21000
LOCAL_PORT_BLOCK = 50
# Node n (1-based) listens on base + offset + n - 1 for each of these; each role's run of ports ends where the next
# role's begins, so the gap between offsets bounds the node count.
LOCAL_NODE_PORT_OFFSETS: Mapping[str, int] = {"amqp": 0, "management": 10, "prometheus": 20, "dist": 30}
# base+40 .. base+49: the distribution ports of the cluster's CLI calls (rabbitmqctl, rabbitmq-diagnostics). Every
# node's boot holds one at once (`rabbitmqctl wait`, nodes booting in parallel), so the node count is bounded by
# their number too. The stream plugin is not enabled; epmd (4369) is the machine's, outside every block.
LOCAL_CLI_PORTS = range(40, LOCAL_PORT_BLOCK)


def max_nodes_in_block(node_offsets: Mapping[str, int], cli_ports: range, block: int) -> int:
    """The most nodes the layout gives distinct ports inside one block: each role's run reaches the next role's
    offset (the last one the CLI ports, or the block's end), and every node's boot needs a CLI port of its own."""
    starts = sorted(node_offsets.values())
    ends = [*starts[1:], cli_ports.start if cli_ports else block]
    if starts[0] < 0 or ends[-1] > block or (cli_ports and cli_ports.stop > block):
        raise ValueError(f"port layout {dict(node_offsets)} + CLI {cli_ports} does not fit a {block}-port block")
    return min(min(end - start for start, end in zip(starts, ends, strict=True)), len(cli_ports))


LOCAL_MAX_NODES = max_nodes_in_block(LOCAL_NODE_PORT_OFFSETS, LOCAL_CLI_PORTS, LOCAL_PORT_BLOCK)


def local_port_base(slot: int) -> int:
    """The first port of a local cluster's block (its layout: above, and terraform/README.md)."""
    return LOCAL_PORT_FIRST + LOCAL_PORT_BLOCK * slot


def node_ports(base: int, node: int) -> dict[str, int]:
    """The ports of node `node` (1-based) of the cluster whose block starts at `base`."""
    if not 1 <= node <= LOCAL_MAX_NODES:
        raise ValueError(f"node {node}: a local cluster has nodes 1..{LOCAL_MAX_NODES}")
    return {role: base + offset + node - 1 for role, offset in LOCAL_NODE_PORT_OFFSETS.items()}
