"""Who is calling: the ``authorization`` metadata pymilvus sends, checked against bcrypt hashes.

pymilvus sends ``authorization: base64("user:password")`` (from ``token="user:password"`` or
``user=..., password=...``). A token without ``:`` is an API key, which Strata does not issue.

Cost and fairness. bcrypt takes tens of milliseconds of CPU per check, by design, so:

* a verified (user, password) is cached for ``ttl`` seconds, keyed by an HMAC of the password
  under a key made at start (the password itself is kept nowhere) and by the stored hash, so a
  password change or a dropped user (a new state, see ``state.py``) ends it at once;
* a failed check is cached too (``negative_ttl``), so repeating one wrong password costs one
  bcrypt per period, not one per call;
* bcrypt runs in the authenticator's own ``max_concurrent`` threads (not the event loop's default
  executor, which the proxy's reductions use), and one at a time per user: a flood of guesses
  against one user waits on that user's turn and never holds more than one thread, so clients
  whose credentials are cached are not slowed and other users still get their turn;
* malformed tokens and unknown users are refused without any bcrypt.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import hashlib
import hmac
import os
import time
from dataclasses import dataclass

import structlog

from common.errors import NotAuthenticated
from common.passwords import check_password, hash_password
from common.rbac.catalog import SecurityState
from proxy.auth.state import SecurityStateCache

VERIFIED_TTL_SECONDS = 30.0
FAILED_TTL_SECONDS = 5.0
MAX_CONCURRENT_HASHES = 2
MAX_CACHE_ENTRIES = 10_000

# Milvus's answers (proxy/authentication_interceptor.go), as gRPC UNAUTHENTICATED.
MISSING = "missing authorization in header"
BAD_FORMAT = "invalid token format"
BAD_API_KEY = "auth check failure, please check api key is correct"
BAD_PASSWORD = "auth check failure, please check username and password are correct"


@dataclass(frozen=True, slots=True)
class _Verdict:
    stored_hash: str
    ok: bool
    expires: float


def parse_token(authorization: str | None) -> tuple[str, str]:
    """``(user, password)`` from the metadata value; raises ``NotAuthenticated`` with Milvus's message."""
    if not authorization:
        raise NotAuthenticated(MISSING)
    try:
        raw = base64.b64decode(authorization, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise NotAuthenticated(BAD_FORMAT) from None
    user, sep, password = raw.partition(":")
    if not sep:
        raise NotAuthenticated(BAD_API_KEY)
    return user, password


def decode_password(raw: str) -> str:
    """A password as pymilvus puts it in a request (base64); raises ``ValueError``."""
    return base64.b64decode(raw, validate=True).decode()


class Authenticator:
    def __init__(
        self,
        states: SecurityStateCache,
        *,
        ttl: float = VERIFIED_TTL_SECONDS,
        negative_ttl: float = FAILED_TTL_SECONDS,
        max_concurrent: int = MAX_CONCURRENT_HASHES,
    ) -> None:
        self._states = states
        self._ttl = ttl
        self._negative_ttl = negative_ttl
        self._key = os.urandom(32)
        self._cache: dict[tuple[str, bytes], _Verdict] = {}
        self._threads = concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="bcrypt")
        self._per_user: dict[str, asyncio.Lock] = {}
        self._log = structlog.get_logger().bind(component="authenticator")
        states.on_change(self._forget_stale)

    async def authenticate(self, authorization: str | None) -> str:
        """The user the metadata names, once its password checks; ``NotAuthenticated`` otherwise."""
        user, password = parse_token(authorization)
        if not await self.verify(user, password):
            raise NotAuthenticated(BAD_PASSWORD)
        return user

    async def verify(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s (False for an unknown user, without bcrypt)."""
        record = self._states.state.users.get(user)
        if record is None:
            return False
        key = (user, hmac.new(self._key, password.encode(), hashlib.sha256).digest())
        cached = self._cached(key, record.password_hash)
        if cached is not None:
            return cached
        lock = self._per_user.setdefault(user, asyncio.Lock())
        async with lock:
            cached = self._cached(key, record.password_hash)  # a caller ahead of us may have checked it
            if cached is not None:
                return cached
            loop = asyncio.get_running_loop()
            ok = await loop.run_in_executor(self._threads, check_password, password, record.password_hash)
        if len(self._cache) >= MAX_CACHE_ENTRIES:
            self._cache.clear()
        ttl = self._ttl if ok else self._negative_ttl
        self._cache[key] = _Verdict(record.password_hash, ok, time.monotonic() + ttl)
        if not ok:
            self._log.info("password check failed", user=user)
        return ok

    async def hash(self, password: str) -> str:
        """A bcrypt hash of ``password``, made in the same threads as checks."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, hash_password, password)

    def close(self) -> None:
        """Stop the threads (a check in progress finishes; none is waiting once the server stopped)."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    def _cached(self, key: tuple[str, bytes], stored_hash: str) -> bool | None:
        verdict = self._cache.get(key)
        if verdict is None or verdict.stored_hash != stored_hash or verdict.expires < time.monotonic():
            return None
        return verdict.ok

    def _forget_stale(self, state: SecurityState) -> None:
        """Drop verdicts of users that are gone or whose password changed."""
        for key in [k for k, v in self._cache.items()
                    if (u := state.users.get(k[0])) is None or u.password_hash != v.stored_hash]:
            del self._cache[key]
        for user in [u for u in self._per_user if u not in state.users]:
            del self._per_user[user]
