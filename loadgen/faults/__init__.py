"""Fault executors behind the nemesis: how each fault kind is carried out on a given target.

`local`: signals to node PIDs and `rabbitmqctl` on this machine. `ssm`: the same kinds on EC2 nodes through
SSM Run Command, plus `tc netem` network faults. The interface is `base` (FaultExecutor, NodeProbe); command
construction (`commands`) is pure, running is not; `probe` asks the management API read-only questions.
"""

from loadgen.faults.base import FaultError, FaultExecutor, NodeProbe

__all__ = ["FaultError", "FaultExecutor", "NodeProbe"]
