"""The proxy's own component state, as Milvus's ``GetComponentStates`` and ``CheckHealth`` report it.

Owned by the composition root (``server.py``), read by the health RPCs
(``health.py``). Legal transitions: INITIALIZING -> HEALTHY (its session is
registered: it has a node id and serves) -> STOPPING (``stop()`` began; final).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# Milvus's common.NotRegisteredID: the node id a component reports before its session exists.
NOT_REGISTERED_ID = -1


class ProxyState(Enum):
    INITIALIZING = "Initializing"  # serving gRPC, session not registered yet
    HEALTHY = "Healthy"
    STOPPING = "Stopping"


@dataclass(slots=True)
class ProxyComponent:
    node_id: int = NOT_REGISTERED_ID
    state: ProxyState = ProxyState.INITIALIZING

    def registered(self, node_id: int) -> None:
        """The session is registered (again, after a lost lease) under ``node_id``: healthy, unless stopping."""
        if self.state is not ProxyState.STOPPING:
            self.node_id, self.state = node_id, ProxyState.HEALTHY

    def stopping(self) -> None:
        self.state = ProxyState.STOPPING
