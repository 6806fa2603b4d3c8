"""Guarded MetaStore views against a real etcd: writes land only while the guard key is the same one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from common.etcd.metastore import MetaStore, NotLeader, Op

GUARD = "leader"


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"guard-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def _create_guard(store: MetaStore) -> int:
    assert await store.create_if_absent(GUARD, b"me")
    kv = await store.client.get(store.full_key(GUARD))
    assert kv is not None
    return int(kv.create_revision)


async def _snapshot(store: MetaStore) -> dict[str, bytes]:
    return {kv.key: kv.value for kv in await store.scan("data/")}


async def test_every_kind_of_write_lands_while_the_guard_holds(store: MetaStore) -> None:
    view = store.guarded(GUARD, await _create_guard(store))
    await view.put("data/a", b"1")
    await view.put("data/b", b"2")
    await view.multi([Op(key="data/c", value=b"3"), Op(key="data/a", value=None)])
    assert await view.create_if_absent("data/d", b"4", also=[Op(key="data/e", value=b"5")])
    assert not await view.create_if_absent("data/d", b"x")  # an ordinary "exists" stays a False
    await view.delete("data/b")
    assert await _snapshot(store) == {"data/c": b"3", "data/d": b"4", "data/e": b"5"}
    await view.delete_prefix("data/")
    assert await _snapshot(store) == {}


@pytest.mark.parametrize("how", ["deleted", "recreated"])
async def test_every_kind_of_write_is_refused_once_the_guard_changed(store: MetaStore, how: str) -> None:
    refused: list[int] = []
    view = store.guarded(GUARD, await _create_guard(store), on_refused=lambda: refused.append(1))
    await view.put("data/a", b"1")
    await store.delete(GUARD)
    if how == "recreated":  # someone else's key at the same name: a new create revision
        await store.put(GUARD, b"someone else")
    before = await _snapshot(store)

    writes = [
        view.put("data/a", b"2"),
        view.put("data/new", b"2"),
        view.delete("data/a"),
        view.delete_prefix("data/"),
        view.multi([Op(key="data/b", value=b"2")]),
        view.create_if_absent("data/c", b"3"),
    ]
    for write in writes:
        with pytest.raises(NotLeader):
            await write
    assert len(refused) == len(writes)
    assert await _snapshot(store) == before
    assert await view.get("data/a") == b"1"  # reads are not guarded
