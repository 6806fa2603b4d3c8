"""The coordinator client keeps its coordinator while etcd restarts, and still follows the leader key after.

Its own etcd process (stopped and started again on the same data dir and port).
Before, a broken leader watch dropped the cached stub, so every caller (the
streaming node's timestamps, the proxy's metadata) needed etcd to find the same,
still serving, coordinator again, and failed while etcd was away.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from common.coordclient import LEADER_KEY, CoordinatorClient, LeaderInfo
from common.etcd.metastore import MetaStore
from common.etcd.process import EtcdProcess


async def _put_leader(endpoint: str, leader: LeaderInfo) -> None:
    store = await MetaStore.connect(endpoint, "coordclient")
    try:
        await store.put(LEADER_KEY, leader.to_json())
    finally:
        await store.close()


@pytest.mark.timeout(60)
async def test_the_stub_survives_an_etcd_restart_and_the_leader_is_followed_after(tmp_path: Path) -> None:
    etcd = EtcdProcess(tmp_path / "etcd")
    etcd.start()
    try:
        await _put_leader(etcd.endpoint, LeaderInfo(server_id=1, address="127.0.0.1:1001"))
        client = CoordinatorClient(await MetaStore.connect(etcd.endpoint, "coordclient"))
        try:
            first = await client.stub(timeout=5)
            await asyncio.sleep(0.3)  # let the leader watch start

            await asyncio.to_thread(etcd.stop)
            await asyncio.sleep(1.5)  # the watch breaks and is retried meanwhile
            assert client.address == "127.0.0.1:1001"
            assert await client.stub(timeout=0.5) is first  # no etcd needed

            await asyncio.to_thread(etcd.start)
            # gRPC shares subchannels within a process, so even a new etcd client waits out the
            # reconnect backoff of the old connection: retry.
            deadline = time.monotonic() + 20
            while True:
                try:
                    await _put_leader(etcd.endpoint, LeaderInfo(server_id=2, address="127.0.0.1:1002"))
                    break
                except Exception:
                    assert time.monotonic() < deadline, "etcd did not come back"
                    await asyncio.sleep(0.2)
            while client.address != "127.0.0.1:1002":
                assert time.monotonic() < deadline, client.address
                await client.stub(timeout=5)
                await asyncio.sleep(0.1)
        finally:
            await client.close()
    finally:
        etcd.stop()
