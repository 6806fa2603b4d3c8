"""The proxy's component state (proxy/component.py): its legal transitions."""

from __future__ import annotations

from proxy.component import NOT_REGISTERED_ID, ProxyComponent, ProxyState


def test_initializing_until_registered_then_healthy_and_stopping_is_final() -> None:
    c = ProxyComponent()
    assert (c.node_id, c.state) == (NOT_REGISTERED_ID, ProxyState.INITIALIZING)
    c.registered(7)
    assert (c.node_id, c.state) == (7, ProxyState.HEALTHY)
    c.registered(9)  # registered again after a lost lease: the new id
    assert (c.node_id, c.state) == (9, ProxyState.HEALTHY)
    c.stopping()
    c.registered(11)  # a late registration does not revive a stopping proxy
    assert (c.node_id, c.state) == (9, ProxyState.STOPPING)
