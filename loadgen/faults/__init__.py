"""Fault executors behind the nemesis: how each fault kind is carried out on a given target.

`local`: signals to node PIDs and `rabbitmqctl` on this machine. `ssm`: the same kinds on EC2 nodes through
SSM Run Command, plus `tc netem` network faults. Command construction (`commands`) is pure; running is not.
"""

from loadgen.faults.base import FaultError, FaultExecutor, NodeProbe

__all__ = ["FaultError", "FaultExecutor", "NodeProbe"]
