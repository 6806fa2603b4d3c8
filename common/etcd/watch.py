"""Etcd watches, each on its own gRPC stream.

aetcd multiplexes every watch of a client over one shared stream, and its
``add_callback`` can wait for ever for the "created" answer when watches are
created and cancelled quickly one after another (seen as a rare hang of the
coordinator election test). A watch here owns its stream instead:

* :meth:`EtcdWatch.open` sends the create request and waits, bounded by
  ``created_timeout``, for etcd to confirm; a watch that is not confirmed
  raises ``WatchBroken`` and leaves nothing behind;
* :meth:`EtcdWatch.events` yields batches of events (one etcd revision may
  carry several) until the stream ends, which raises ``WatchBroken`` too: a
  watch never ends quietly, so a caller cannot mistake a lost stream for
  silence;
* :meth:`EtcdWatch.close` cancels the gRPC call, which always returns.

Callers that must see every change scan with a revision and watch from the
revision after it (``MetaStore.scan_at`` + ``start_revision``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import TracebackType

import aetcd
import grpc
from aetcd import rpc

from common.errors import StrataError


class WatchBroken(StrataError):
    """The watch stream could not be created, or it ended; re-read and watch again."""


@dataclass(frozen=True, slots=True)
class RawEvent:
    key: bytes
    value: bytes | None  # None: deleted
    mod_revision: int


class EtcdWatch:
    """One watch on ``[key, range_end)`` (or on ``key`` alone) from ``start_revision``."""

    def __init__(
        self,
        client: aetcd.Client,
        key: bytes,
        *,
        range_end: bytes | None = None,
        start_revision: int | None = None,
        created_timeout: float = 10.0,
    ) -> None:
        self._client = client
        self._key = key
        self._range_end = range_end
        self._start_revision = start_revision
        self._created_timeout = created_timeout
        self._call: grpc.aio.StreamStreamCall | None = None

    async def open(self) -> None:
        await self._client.connect()
        stub = rpc.WatchStub(self._client.channel)
        create = rpc.WatchCreateRequest(key=self._key)
        if self._range_end is not None:
            create.range_end = self._range_end
        if self._start_revision is not None:
            create.start_revision = self._start_revision
        self._call = stub.Watch(metadata=self._client.metadata)
        try:
            async with asyncio.timeout(self._created_timeout):
                await self._call.write(rpc.WatchRequest(create_request=create))
                resp = await self._call.read()
        except (TimeoutError, grpc.aio.AioRpcError) as err:
            self.close()
            raise WatchBroken(f"etcd watch on {self._key!r} was not created: {err!s}") from err
        except BaseException:
            self.close()
            raise
        if resp is grpc.aio.EOF or not resp.created:
            self.close()
            raise WatchBroken(f"etcd watch on {self._key!r} was not created")
        if resp.canceled or resp.compact_revision:
            self.close()
            raise WatchBroken(_refusal(self._key, resp))

    async def events(self) -> AsyncIterator[list[RawEvent]]:
        """Batches of events, in revision order, until the stream breaks (``WatchBroken``)."""
        assert self._call is not None, "open() first"
        while True:
            try:
                resp = await self._call.read()
            except grpc.aio.AioRpcError as err:
                raise WatchBroken(f"etcd watch on {self._key!r} broke: {err.code().name}") from err
            if resp is grpc.aio.EOF:
                raise WatchBroken(f"etcd watch on {self._key!r} ended")
            if resp.canceled or resp.compact_revision:
                raise WatchBroken(_refusal(self._key, resp))
            if resp.events:
                yield [
                    RawEvent(
                        ev.kv.key,
                        None if ev.type == rpc.Event.DELETE else ev.kv.value,
                        ev.kv.mod_revision,
                    )
                    for ev in resp.events
                ]

    def close(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def __aenter__(self) -> EtcdWatch:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _refusal(key: bytes, resp: rpc.WatchResponse) -> str:
    if resp.compact_revision:
        return f"etcd watch on {key!r}: history compacted up to revision {resp.compact_revision}"
    return f"etcd watch on {key!r} cancelled by etcd: {resp.cancel_reason or 'no reason given'}"
