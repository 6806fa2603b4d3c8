"""RestartBackoff: at once, then doubling while the child keeps exiting, at once again after a stable run."""

from __future__ import annotations

from common.restarts import RestartBackoff


def test_restarts_back_off_while_the_child_keeps_exiting_and_forgive_a_stable_run() -> None:
    b = RestartBackoff(initial=0.5, maximum=8.0, stable_seconds=30.0)
    now = 100.0
    b.started(now)
    waits = []
    for _ in range(7):
        now += 1.0  # it exits a second after each start
        at = b.exited(now)
        waits.append(at - now)
        now = at
        b.started(now)
    assert waits == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0] and b.restarts == 7
    now += 31.0  # ran long enough
    assert b.exited(now) == now
