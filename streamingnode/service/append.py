"""One append to a WAL of this node, as ``Produce`` answers it and the in-process producer sees it.

``Produce`` (``handler.py``) turns what ``append`` raises into the status of its answer;
``client/local.py`` hands it to the producer of this process as it is. Both therefore see
the same errors, and the rule for an unexpected one is written once (``common.rpcstatus``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import structlog

from common.errors import StrataError
from common.message import Outgoing
from common.rpcstatus import boundary_error
from common.tracing import message_spans
from streamingnode.wal.wal import WAL, Appended

log = structlog.get_logger().bind(component="append")


class WALSource(Protocol):
    """``WALManager.get``: the available WAL of ``pchannel`` at exactly ``term``."""

    def get(self, pchannel: str, term: int) -> WAL: ...


def _append_failed(err: Exception) -> str:
    return f"append failed: {err}"


async def append(
    wals: WALSource, pchannel: str, term: int, messages: Sequence[Outgoing], *, txn: bool = False
) -> list[Appended]:
    """Append to ``pchannel``'s WAL at ``term``; the WAL takes ``messages`` over (``WAL.append_typed``).

    Raises only ``StrataError``: ``ChannelNotExist``, ``UnmatchedChannelTerm``, ``WALClosed``
    (the producer re-resolves and retries), the WAL's own error, or for any other exception
    (logged) an UNEXPECTED one worded "append failed: ...". Cancellation passes through.
    """
    try:
        envelopes = [o.msg for o in messages]
        with message_spans("streamingnode.append", envelopes, pchannel=pchannel, message_count=len(messages)):
            return await wals.get(pchannel, term).append_typed(messages, txn=txn)
    except StrataError:
        raise
    except Exception as err:
        raise boundary_error(err, _append_failed, log, "append failed", pchannel=pchannel) from err
