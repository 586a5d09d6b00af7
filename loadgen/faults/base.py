"""The narrow interface between the nemesis (when) and an executor (how)."""

from __future__ import annotations

from typing import Any, Protocol

from sizing.planning.timeline import FaultEvent
from sizing.resources.cluster import NodeInfo

# Faults that undo themselves inside `inject` (the nemesis emits start and heal around one call).
SELF_HEALING = ("rolling_restart",)


class FaultError(RuntimeError):
    """A fault could not be injected or healed; the message says why (it lands in a fault_error event)."""


class FaultExecutor(Protocol):
    def inject(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        """Break `node` (None for cluster-wide kinds) and return what was done (JSON-able detail)."""
        ...

    def heal(self, fault: FaultEvent, node: NodeInfo | None) -> dict[str, Any]:
        """Undo `inject`; idempotent (healing a healthy node is a no-op that says so)."""
        ...


class NodeProbe(Protocol):
    """What the nemesis and the executors ask the cluster (the management API in practice)."""

    def queue_leader(self, queue: str) -> str: ...

    def node_running(self, name: str) -> bool: ...
