"""Password hashes of Milvus users: bcrypt (salted, slow), never the password itself.

Hashing and checking cost tens of milliseconds of CPU on purpose; callers on an event loop run
them in a thread (``asyncio.to_thread``) and bound how many run at once.
"""

from __future__ import annotations

import hashlib

import bcrypt

# bcrypt's cost (2**ROUNDS iterations); 10 is Milvus's too (its crypto.PasswordEncrypt uses bcrypt.DefaultCost).
ROUNDS = 10
# bcrypt reads at most 72 bytes of a password; Milvus caps passwords at 256 characters
# (proxy.maxPasswordLength), so longer ones are pre-hashed to keep every byte significant.
_BCRYPT_MAX = 72


def _material(password: str) -> bytes:
    raw = password.encode()
    if len(raw) <= _BCRYPT_MAX:
        return raw
    return hashlib.sha256(raw).hexdigest().encode()


def hash_password(password: str) -> str:
    """A salted bcrypt hash of ``password`` (blocking, CPU-bound)."""
    return bcrypt.hashpw(_material(password), bcrypt.gensalt(ROUNDS)).decode()


def check_password(password: str, hashed: str) -> bool:
    """Whether ``password`` matches ``hashed`` (blocking, CPU-bound); False for a malformed hash."""
    try:
        return bcrypt.checkpw(_material(password), hashed.encode())
    except ValueError:
        return False
