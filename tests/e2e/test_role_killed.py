"""``kill -9`` of one role process of ``strata standalone``: the launcher starts it again.

The launcher used to stop everything when a role exited. Now the node process
(streaming node, query node, proxy) or the coordinator is started again, and
the sessions the dead process left are removed so that its pchannels and the
coordinator's election move to the new process at once. Calls work again with
every acknowledged row, and the launcher itself never exits.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
from pymilvus import MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure

DIM = 8
BOUND = 60.0  # seconds from the kill to working calls


def _rows(ids: range) -> list[dict[str, object]]:
    rng = np.random.default_rng(ids.start)
    return [{"id": i, "vector": rng.standard_normal(DIM).tolist()} for i in ids]


def _ids(client: MilvusClient) -> list[int]:
    got = client.query("kept", filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=10)
    return sorted(r["id"] for r in got)


def _working(s: Standalone, since: float, first: int) -> tuple[list[int], float]:
    """Insert ``first..first+49`` and read every id back, retried until it works; the ids and when."""
    while True:
        try:
            client = MilvusClient(s.uri, timeout=10)
            try:
                client.insert("kept", _rows(range(first, first + 50)))
                return _ids(client), time.monotonic() - since
            finally:
                client.close()
        except (MilvusException, grpc.RpcError) as err:
            if time.monotonic() - since > BOUND:
                raise AssertionError(f"calls still failing {BOUND}s after the kill: {err}") from err
            time.sleep(0.5)


@pytest.mark.timeout(240)
def test_the_launcher_restarts_a_killed_role_and_calls_work_again(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri, timeout=30)
            client.create_collection("kept", dimension=DIM, num_shards=2, consistency_level="Strong")
            client.insert("kept", _rows(range(0, 100)))
            client.flush("kept")
            client.close()
            expected = list(range(100))
            for round_, role in enumerate(("standalone-node", "coordinator", "standalone-node")):
                before = s.children()
                os.kill(before[role], signal.SIGKILL)
                killed = time.monotonic()
                first = 1000 * (round_ + 1)
                ids, took = _working(s, killed, first)
                expected += list(range(first, first + 50))
                assert ids == expected, f"after the {role} was killed"
                after = s.children()
                assert after[role] != before[role] and s.proc is not None and s.proc.poll() is None
                print(f"{role} killed: calls work again after {took:.1f} s")
    finally:
        assert s.stop() == 0
