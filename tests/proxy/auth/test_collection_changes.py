"""A rename answered by a proxy is met by that proxy's grants at once (real etcd, no watch).

The coordinator moves a collection's grants before it answers ``RenameCollection`` (and revokes
them before it answers ``DropCollection``); the proxy that served the call must reload its copy
of the security catalog before it answers too, or the caller's next call (``describe_role``, a
query on the new name) meets the grants of before until the proxy's watch brings the change:
the race ``tests/e2e/test_auth_users.py::test_grants_go_with_their_collection_when_dropped_or_renamed``
lost under load. Here the state cache has no watch at all, so only that reload can bring it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.etcd.metastore import MetaStore, Op
from common.rbac.catalog import Grant
from common.rbac.privileges import ObjectType
from proxy.aliases import AliasRPCs
from proxy.auth.rpcs import Security
from proxy.auth.state import SecurityStateCache


def _grant(collection: str) -> Grant:
    return Grant(role="reader", object_type=ObjectType.COLLECTION, db_name="default", object_name=collection,
                 privilege="Query", grantor="root")


class CoordinatorThatMovesGrants:
    """The coordinator's rename as far as grants go: it moves the grant in etcd before answering."""

    def __init__(self, store: MetaStore) -> None:
        self._store = store

    async def rename_collection(self, name: str, db_name: str, *, new_name: str, new_db_name: str) -> None:
        old, new = _grant(name), _grant(new_name)
        await self._store.multi([Op(key=old.key, value=None), Op(key=new.key, value=new.to_json())])


class Aliases(AliasRPCs):
    """``AliasRPCs`` with that coordinator, a metadata cache and the proxy's ``Security``."""

    def __init__(self, store: MetaStore, security: Security) -> None:
        self._coord = cast(Any, CoordinatorThatMovesGrants(store))
        self._cache = cast(Any, _NoCache())
        self._security = security


class _NoCache:
    def invalidate_all(self) -> None:
        pass


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"collection-changes-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def test_the_proxy_that_renamed_a_collection_sees_its_grants_moved(store: MetaStore) -> None:
    await store.multi([Op(key=_grant("c_moving").key, value=_grant("c_moving").to_json())])
    states = SecurityStateCache(store)
    await states.reload()  # loaded once; not started, so no watch follows etcd
    security = Security(cast(Any, None), states, cast(Any, None))
    proxy = Aliases(store, security)

    status = await proxy.RenameCollection(milvus_pb2.RenameCollectionRequest(oldName="c_moving", newName="c_moved"),
                                          cast(Any, None))

    assert status.code == common_pb2.Success
    assert [g.object_name for g in states.state.grants] == ["c_moved"]
