"""The launcher's etcd supervisor against a real etcd: restart after kill -9, a crash loop backs off,
a NOSPACE alarm is cleared."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import aetcd
import pytest

from common.etcd.process import EtcdProcess
from common.etcd.supervisor import EtcdSupervisor

pytestmark = pytest.mark.timeout(60)


async def _put_get(endpoint: str, key: bytes, value: bytes | None) -> bytes | None:
    host, _, port = endpoint.rpartition(":")
    # A restarted etcd accepts connections before it has elected itself leader; on a loaded machine
    # that can take seconds, so the calls get a generous deadline (a dead etcd still fails them).
    async with aetcd.Client(host=host, port=int(port), timeout=30) as client:
        if value is not None:
            await client.put(key, value)
        got = await client.get(key)
        return None if got is None else got.value


async def _raise_nospace(endpoint: str) -> None:
    host, _, port = endpoint.rpartition(":")
    async with aetcd.Client(host=host, port=int(port), timeout=5) as client:
        await client.create_alarm()


def _until(what: str, cond: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.05)


def test_a_killed_etcd_is_started_again_on_the_same_data_and_port(tmp_path: Path) -> None:
    etcd = EtcdProcess(tmp_path / "etcd")
    etcd.start()
    try:
        asyncio.run(_put_get(etcd.endpoint, b"k", b"before"))
        supervisor = EtcdSupervisor(etcd)
        supervisor.check()
        assert supervisor.restarts == 0
        old = etcd.pid
        assert old is not None
        os.kill(old, signal.SIGKILL)
        _until("etcd exit", lambda: etcd.exit_code() is not None)
        supervisor.check()  # the first restart is immediate
        assert supervisor.restarts == 1 and etcd.pid != old and etcd.exit_code() is None
        assert asyncio.run(_put_get(etcd.endpoint, b"k", None)) == b"before"
    finally:
        etcd.stop()


def test_an_etcd_that_keeps_failing_is_retried_with_a_backoff(tmp_path: Path) -> None:
    now = [0.0]
    etcd = EtcdProcess(tmp_path / "etcd")
    etcd.start()
    try:
        supervisor = EtcdSupervisor(etcd, clock=lambda: now[0])
        etcd.stop()
        real_binary, etcd.binary = etcd.binary, "/bin/false"  # every start fails at once
        supervisor.check()
        assert supervisor.restarts == 0
        attempts: list[float] = []
        for _ in range(60):  # 30 s of the fake clock
            now[0] += 0.5
            pid = etcd.pid
            supervisor.check()
            if etcd.pid != pid:
                attempts.append(now[0])
        gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
        assert len(attempts) >= 4 and gaps == sorted(gaps) and gaps[-1] >= 4.0, f"attempts at {attempts}"
        etcd.binary = real_binary
        for _ in range(20):  # the next attempt is due within the longest delay (8 s)
            now[0] += 1.0
            supervisor.check()
        assert supervisor.restarts == 1 and etcd.exit_code() is None
        assert asyncio.run(_put_get(etcd.endpoint, b"k", b"v")) == b"v"
    finally:
        etcd.stop()


def test_a_nospace_alarm_is_cleared(tmp_path: Path) -> None:
    etcd = EtcdProcess(tmp_path / "etcd")
    etcd.start()
    try:
        asyncio.run(_raise_nospace(etcd.endpoint))
        with pytest.raises(Exception, match="database space exceeded"):
            asyncio.run(_put_get(etcd.endpoint, b"k", b"refused"))
        supervisor = EtcdSupervisor(etcd)
        supervisor.check()
        assert supervisor.alarms_cleared == 1
        assert asyncio.run(_put_get(etcd.endpoint, b"k", b"accepted")) == b"accepted"
        supervisor.check()  # checked every 5 s only, and there is nothing to clear
        assert supervisor.alarms_cleared == 1
    finally:
        etcd.stop()
