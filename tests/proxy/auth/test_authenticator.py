"""Tokens, the verified-credential cache and the bcrypt bound (proxy/auth/authenticator.py)."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from common.errors import NotAuthenticated
from common.passwords import hash_password
from common.rbac.catalog import SecurityState, UserRecord
from proxy.auth import authenticator as authmod
from proxy.auth.authenticator import BAD_API_KEY, BAD_FORMAT, BAD_PASSWORD, MISSING, Authenticator


class FakeStates:
    """Stands in for SecurityStateCache: a state and its listeners."""

    def __init__(self, state: SecurityState) -> None:
        self.state = state
        self._listeners: list[Callable[[SecurityState], None]] = []

    def on_change(self, listener: Callable[[SecurityState], None]) -> None:
        self._listeners.append(listener)

    def set(self, state: SecurityState) -> None:
        self.state = state
        for listener in self._listeners:
            listener(state)


def _token(raw: str) -> str:
    return base64.b64encode(raw.encode()).decode()


@pytest.fixture()
def states() -> FakeStates:
    users = {n: UserRecord(name=n, password_hash=hash_password(f"{n}-pw")) for n in ("alice", "bob")}
    return FakeStates(SecurityState(users=users))


@pytest.fixture()
def make_auth() -> Iterator[Callable[..., Authenticator]]:
    """Authenticators whose threads are stopped after the test."""
    made: list[Authenticator] = []

    def make(states: FakeStates, **kwargs: int) -> Authenticator:
        made.append(Authenticator(states, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for auth in made:
        auth.close()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = authmod.check_password

    def counted(password: str, hashed: str) -> bool:
        calls.append(1)
        return real(password, hashed)

    monkeypatch.setattr(authmod, "check_password", counted)
    return calls


@pytest.mark.parametrize(
    ("metadata", "message"),
    [(None, MISSING), ("", MISSING), ("%%%", BAD_FORMAT), (_token("no-colon-api-key"), BAD_API_KEY),
     (_token("alice:wrong"), BAD_PASSWORD), (_token("nobody:alice-pw"), BAD_PASSWORD)],
)
async def test_refusals_carry_milvus_messages(
    states: FakeStates, make_auth: Callable[..., Authenticator], metadata: str | None, message: str
) -> None:
    with pytest.raises(NotAuthenticated) as info:
        await make_auth(states).authenticate(metadata)
    assert info.value.message == message


async def test_verified_credentials_are_cached_until_the_password_changes(
    states: FakeStates, make_auth: Callable[..., Authenticator], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    auth = make_auth(states)
    for _ in range(5):
        assert await auth.authenticate(_token("alice:alice-pw")) == "alice"
    assert len(calls) == 1
    changed = replace(states.state.users["alice"], password_hash=hash_password("new-pw"))
    states.set(replace(states.state, users={**states.state.users, "alice": changed}))
    with pytest.raises(NotAuthenticated):
        await auth.authenticate(_token("alice:alice-pw"))
    assert await auth.authenticate(_token("alice:new-pw")) == "alice"
    states.set(replace(states.state, users={"bob": states.state.users["bob"]}))  # alice dropped
    with pytest.raises(NotAuthenticated):
        await auth.authenticate(_token("alice:new-pw"))


async def test_unknown_users_and_repeated_guesses_cost_no_more_bcrypt(
    states: FakeStates, make_auth: Callable[..., Authenticator], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    auth = make_auth(states)
    for _ in range(20):
        assert not await auth.verify("nobody", "x")
        assert not await auth.verify("alice", "guess")
    assert len(calls) == 1  # the one guess, checked once, then cached as failed


async def test_a_flood_of_guesses_holds_one_thread_per_user(
    states: FakeStates, make_auth: Callable[..., Authenticator], monkeypatch: pytest.MonkeyPatch
) -> None:
    running: dict[str, int] = {}
    peak: dict[str, int] = {}
    lock = threading.Lock()
    real = authmod.check_password

    def tracked(password: str, hashed: str) -> bool:
        user = password.split("-")[0]
        with lock:
            running[user] = running.get(user, 0) + 1
            peak[user] = max(peak.get(user, 0), running[user])
        try:
            return real(password, hashed)
        finally:
            with lock:
                running[user] -= 1

    monkeypatch.setattr(authmod, "check_password", tracked)
    auth = make_auth(states, max_concurrent=2)
    guesses = [auth.verify("alice", f"alice-guess{i}") for i in range(12)]
    good = auth.verify("bob", "bob-pw")
    results = await asyncio.gather(*guesses, good)
    assert results[-1] is True and not any(results[:-1])
    assert peak["alice"] == 1  # never more than one thread for the flooded user
    assert peak.get("bob") == 1
