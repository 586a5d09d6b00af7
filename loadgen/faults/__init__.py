"""Fault executors behind the nemesis: how each fault kind is carried out on a given target.

`local`: signals to node PIDs and `rabbitmqctl` on this machine. `ssm`: the same kinds on EC2 nodes through
SSM Run Command, plus `tc netem` network faults. `proxy`: `client_latency` on any target, the delays of the latency
proxies the runner puts between its workers and the nodes (adapters.latencyproxy). The interface is `base`
(FaultExecutor, NodeProbe); command construction (`commands`) is pure, running is not; `probe` asks the management
API read-only questions.
"""

from loadgen.faults.base import FaultError, FaultExecutor, NodeProbe

__all__ = ["FaultError", "FaultExecutor", "NodeProbe"]
