"""What every role checks before it calls itself healthy (``/healthz``, ``common/opsserver.py``).

Each role's composition root has ``async health_reasons() -> list[str]``:
these shared reasons (its gRPC server is not SERVING, its etcd session is
lost) plus the role's own (a fenced WAL, a broken delegator, an unhealthy
cluster behind the proxy). No reason means healthy.
"""

from __future__ import annotations

from common.etcd.session import Session
from common.grpcutil import OVERALL, Health


def role_reasons(role: str, health: Health | None, session: Session | None, *, name: str = OVERALL) -> list[str]:
    """Reasons ``role`` is not serving: its health status ``name`` is not SERVING, or ``session`` is not alive."""
    reasons = []
    if health is None or not health.is_serving(name):
        reasons.append(f"{role} not serving")
    if session is not None and not session.alive:
        reasons.append(f"{role} etcd session lost (lease expired or etcd unreachable)")
    return reasons
