"""The state order and the worker's step decision, without I/O."""

from __future__ import annotations

import pytest

from streamingnode.walmanager.state import INITIAL, Step, WALState, next_step

T, F = True, False


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ((1, T), (1, F)),  # closing a term
        ((1, F), (2, T)),  # opening a newer term
        ((1, T), (2, T)),  # moving to a newer term
        ((1, T), (2, F)),  # removed at a newer term
        ((-1, F), (0, T)),  # the initial state is before everything
        ((-1, F), (0, F)),
    ],
)
def test_legal_transitions_go_forward(earlier: tuple[int, bool], later: tuple[int, bool]) -> None:
    a, b = WALState(*earlier), WALState(*later)
    assert a.before(b)
    assert not b.before(a)


@pytest.mark.parametrize(
    ("state", "older"),
    [
        ((1, F), (1, T)),  # a term given up is never reopened
        ((2, T), (1, T)),  # terms never go back
        ((2, F), (1, F)),
        ((2, T), (1, F)),
    ],
)
def test_illegal_transitions_are_backwards(state: tuple[int, bool], older: tuple[int, bool]) -> None:
    assert WALState(*older).before(WALState(*state))
    assert not WALState(*state).before(WALState(*older))


def test_order_ignores_the_error_and_equality_does_not() -> None:
    failed = WALState(3, False, "disk full")
    assert failed.same_position(WALState(3, False))
    assert not failed.before(WALState(3, False)) and not WALState(3, False).before(failed)
    assert failed != WALState(3, False)
    assert WALState(3, True).order_key() < failed.order_key()


def test_initial_state_and_rendering() -> None:
    assert WALState(-1, False) == INITIAL
    assert str(WALState(2, True)) == "(2, T)"
    assert str(WALState(2, False, "boom")) == "(2, F, boom)"


@pytest.mark.parametrize(
    ("current", "expected", "wal_open", "step"),
    [
        (INITIAL, INITIAL, F, Step.WAIT),
        (WALState(1, T), WALState(1, T), T, Step.WAIT),
        (WALState(1, F), WALState(1, T), F, Step.WAIT),  # (1,F) -> (1,T) is never taken
        (WALState(2, T), WALState(1, T), T, Step.WAIT),
        (WALState(3, F, "boom"), WALState(3, F), F, Step.WAIT),  # a failed open counts as removed
        (INITIAL, WALState(1, T), F, Step.OPEN),
        (INITIAL, WALState(1, F), F, Step.MARK_REMOVED),
        (WALState(1, T), WALState(1, F), T, Step.CLOSE),
        (WALState(1, T), WALState(2, T), T, Step.CLOSE),  # close first, then open in a later step
        (WALState(1, F), WALState(2, T), F, Step.OPEN),
        (WALState(1, F, "boom"), WALState(2, T), F, Step.OPEN),
        (WALState(1, F), WALState(4, F), F, Step.MARK_REMOVED),
    ],
)
def test_next_step(current: WALState, expected: WALState, wal_open: bool, step: Step) -> None:
    assert next_step(current, expected, wal_open=wal_open) is step
