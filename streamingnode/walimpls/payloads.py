"""The check every WAL backend makes of the payloads handed to ``append``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from common.errors import InvalidArgument


def checked_payloads(payloads: Sequence[bytes], max_bytes: int, too_large: Callable[[int], str]) -> list[bytes]:
    """``payloads`` as ``bytes``; ``InvalidArgument`` for one that is not bytes-like or is over ``max_bytes``
    (``too_large(size)`` says why)."""
    batch = []
    for p in payloads:
        if not isinstance(p, (bytes, bytearray, memoryview)):
            raise InvalidArgument(f"payload must be bytes, got {type(p).__name__}")
        if len(p) > max_bytes:
            raise InvalidArgument(too_large(len(p)))
        batch.append(bytes(p))
    return batch
