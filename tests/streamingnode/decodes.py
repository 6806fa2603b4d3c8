"""Counting decodes of WAL messages, wherever ``common.message.decode`` is called from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from common.message import TypedMessage, types
from common.message.header import HeaderReader
from protos.common_pb2 import Message


def count_decodes(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Decodes per message type from now on (every type's decoder in its private table is
    wrapped: the one place all decodes pass)."""
    counts: Counter[int] = Counter()
    for kind, decoder in list(types._DECODERS.items()):

        def counting(
            msg: Message, h: HeaderReader, kind: int = kind, decoder: Callable[[Message, HeaderReader], TypedMessage] = decoder
        ) -> TypedMessage:
            counts[kind] += 1
            return decoder(msg, h)

        monkeypatch.setitem(types._DECODERS, kind, counting)
    return counts
