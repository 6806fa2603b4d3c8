"""``kill -9`` of the etcd child of ``strata standalone``: the launcher starts it again and the
same roles serve again, DDL included, with every acknowledged row."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from pymilvus import MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure

DIM = 8
BOUND = 45.0  # seconds from the kill to working calls
T = TypeVar("T")


def _rows(ids: range) -> list[dict[str, object]]:
    rng = np.random.default_rng(ids.start)
    return [{"id": i, "vector": rng.standard_normal(DIM).tolist()} for i in ids]


def _ids(client: MilvusClient, name: str) -> list[int]:
    got = client.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=10)
    return sorted(r["id"] for r in got)


def _within(what: str, since: float, call: Callable[[], T]) -> tuple[T, float]:
    """``call()`` retried until it returns, until ``BOUND`` seconds after ``since``; the value and when."""
    while True:
        try:
            return call(), time.monotonic() - since
        except MilvusException as err:
            if time.monotonic() - since > BOUND:
                raise AssertionError(f"{what} still failing {BOUND}s after the kill: {err}") from err
            time.sleep(0.1)


@pytest.mark.timeout(180)
def test_the_launcher_restarts_a_killed_etcd_and_calls_work_again(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri, timeout=30)
            client.create_collection("kept", dimension=DIM, num_shards=2, consistency_level="Strong")
            client.insert("kept", _rows(range(0, 100)))
            before = s.children()
            assert {"etcd", "coordinator", "standalone-node"} <= set(before)

            os.kill(before["etcd"], signal.SIGKILL)
            killed = time.monotonic()
            deadline = killed + 30
            while (pid := s.children().get("etcd")) in (None, before["etcd"]):
                assert time.monotonic() < deadline, "the launcher did not start etcd again"
                time.sleep(0.05)
            restarted = time.monotonic() - killed

            _, insert_at = _within("insert", killed, lambda: client.insert("kept", _rows(range(100, 150)), timeout=10))
            got, read_at = _within("Strong query", killed, lambda: _ids(client, "kept"))
            _, ddl_at = _within(
                "create_collection",
                killed,
                lambda: client.create_collection("after", dimension=DIM, consistency_level="Strong", timeout=10),
            )
            print(
                f"\netcd killed -> started again after {restarted:.2f}s, insert works after {insert_at:.2f}s, "
                f"Strong query after {read_at:.2f}s, create_collection after {ddl_at:.2f}s"
            )
            assert got == list(range(150))
            client.insert("after", _rows(range(7, 9)))
            assert _ids(client, "after") == [7, 8]
            client.close()

            assert s.proc is not None and s.proc.poll() is None, "the launcher exited"
            now = s.children()
            assert now["etcd"] == pid
            assert {r: now.get(r) for r in ("coordinator", "standalone-node")} == {
                r: before[r] for r in ("coordinator", "standalone-node")
            }, "a role was restarted"
    finally:
        s.kill()
