"""The coordinator client's stubs (``stub_of``, any service): one that finds the coordinator unreachable forgets it.

A real etcd holds a leader key naming a loopback port nothing listens on. A unary call through
``stub_of`` raises ``StrataError`` UNAVAILABLE (not a raw gRPC error) and the client drops the
address, so the next call reads the leader key again and reaches the coordinator it names now.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from common.coordclient import LEADER_KEY, CoordinatorClient, LeaderInfo
from common.errors import ErrorCode, StrataError
from common.etcd.metastore import MetaStore
from common.grpcutil import start_server
from common.ports import free_port
from common.rpcstatus import ok_status
from protos import security_pb2, security_pb2_grpc

pytestmark = pytest.mark.timeout(30)


class _Security(security_pb2_grpc.SecurityServicer):
    async def DropUser(
        self, request: security_pb2.UserRef, context: grpc.aio.ServicerContext
    ) -> security_pb2.SecurityResponse:
        return security_pb2.SecurityResponse(status=ok_status())


@pytest.fixture
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    store = await MetaStore.connect(etcd_endpoint, f"coordclient-unreachable-{free_port()}")
    try:
        yield store
    finally:
        await store.close()


async def test_an_unreachable_coordinator_raises_unavailable_and_is_forgotten(store: MetaStore) -> None:
    dead = f"127.0.0.1:{free_port()}"
    await store.put(LEADER_KEY, LeaderInfo(server_id=1, address=dead).to_json())
    client = CoordinatorClient(store)
    server, port = await start_server(lambda s: security_pb2_grpc.add_SecurityServicer_to_server(_Security(), s))
    try:
        stub = await client.stub_of(security_pb2_grpc.SecurityStub, timeout=5)
        assert await client.stub_of(security_pb2_grpc.SecurityStub, timeout=5) is stub  # cached
        with pytest.raises(StrataError, match="^coordinator unavailable: ") as info:
            await stub.DropUser(security_pb2.UserRef(user="u"), timeout=5)
        assert info.value.code == ErrorCode.UNAVAILABLE
        assert client.address is None

        await store.put(LEADER_KEY, LeaderInfo(server_id=2, address=f"127.0.0.1:{port}").to_json())
        again = await client.stub_of(security_pb2_grpc.SecurityStub, timeout=5)
        resp = await again.DropUser(security_pb2.UserRef(user="u"), timeout=5)
        assert resp.status.code == ErrorCode.OK
        assert client.address == f"127.0.0.1:{port}"
    finally:
        await client.close()
        await server.stop(grace=None)
