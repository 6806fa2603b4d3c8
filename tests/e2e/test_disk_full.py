"""A full disk under ``strata standalone``: refused with Milvus's disk-quota error, served again once freed.

The whole data directory (etcd, WAL, segments, logs) lives on a 192 MiB tmpfs.
A filler file takes every free byte; inserts must then fail with the
disk-quota error (code 7, legacy ``DiskQuotaExhausted``) saying there is no
space (an insert spread over two shards may have been stored on the one whose
pchannel still had room: its rows may or may not be there). A DDL call then
makes etcd write, which a full disk stops (etcd exits); the launcher keeps
trying to start it again. Once the filler is deleted, inserts, Strong reads and
DDL must work again within a bound, with the same role processes, and every
acknowledged row must be there.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from pymilvus import MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure
from tests.tmpfs import fill, tmpfs

DIM = 16
DISK_LIMIT_EXCEEDED = 7  # merr.ErrServiceDiskLimitExceeded
LEGACY_DISK_QUOTA_EXHAUSTED = 54  # commonpb.ErrorCode_DiskQuotaExhausted
RECOVERY_BOUND = 30.0  # seconds from "space freed" to a working insert and Strong read
T = TypeVar("T")


def _rows(ids: range) -> list[dict[str, object]]:
    rng = np.random.default_rng(ids.start)
    return [{"id": i, "vector": rng.standard_normal(DIM).tolist()} for i in ids]


def _within(what: str, bound: float, call: Callable[[], T]) -> tuple[T, float]:
    """``call()`` retried until it returns, at most ``bound`` seconds; the value and the time it took."""
    start = time.monotonic()
    while True:
        try:
            return call(), time.monotonic() - start
        except MilvusException as err:
            if time.monotonic() - start > bound:
                raise AssertionError(f"{what} still failing after {bound}s: {err}") from err
            time.sleep(0.1)


def _ids(client: MilvusClient) -> list[int]:
    got = client.query("full", filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=10)
    return sorted(r["id"] for r in got)


@pytest.mark.needs_root
@pytest.mark.timeout(180)
def test_a_full_disk_refuses_inserts_as_disk_quota_and_serves_again_once_freed(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "192m") as disk:
        s = Standalone(disk / "data", log_path=tmp_path / "standalone.log")
        s.start()
        try:
            with dump_logs_on_failure(s):
                client = MilvusClient(s.uri, timeout=30)
                client.create_collection("full", dimension=DIM, num_shards=2, consistency_level="Strong")
                acked: list[int] = []
                refused_ids: set[int] = set()  # an insert refused on one shard may have been stored on the other
                for start in range(0, 200, 50):
                    client.insert("full", _rows(range(start, start + 50)))
                    acked.extend(range(start, start + 50))
                roles = {name: pid for name, pid in s.children().items() if name != "etcd"}
                assert set(roles) == {"coordinator", "standalone-node"}

                filler = fill(disk)
                refused: list[MilvusException] = []
                next_id = 1000
                for _ in range(10):  # a small record may still fit in a file's last page
                    batch = range(next_id, next_id + 50)
                    next_id += 50
                    try:
                        client.insert("full", _rows(batch), timeout=10)
                        acked.extend(batch)
                    except MilvusException as err:
                        refused.append(err)
                        refused_ids.update(batch)
                        if err.code == DISK_LIMIT_EXCEEDED:
                            break
                disk_errors = [e for e in refused if e.code == DISK_LIMIT_EXCEEDED]
                assert disk_errors, f"no insert was refused as disk quota: {refused}"
                err = disk_errors[0]
                assert err.compatible_code == LEGACY_DISK_QUOTA_EXHAUSTED
                assert "disk quota exceeded" in err.message and "No space left on device" in err.message
                etcd_before = s.children().get("etcd")
                deadline = time.monotonic() + 20
                for k in itertools.count():  # DDL writes to etcd until a commit finds no space
                    if s.children().get("etcd") != etcd_before:
                        break
                    assert time.monotonic() < deadline, "etcd kept running on the full disk"
                    with contextlib.suppress(MilvusException):
                        client.create_collection(f"during_{k}", dimension=DIM, timeout=5)
                time.sleep(2)  # the launcher's restarts fail while the disk is full

                filler.unlink()
                late = range(5000, 5050)
                _, insert_after = _within(
                    "insert", RECOVERY_BOUND, lambda: client.insert("full", _rows(late), timeout=10)
                )
                acked.extend(late)
                got, read_after = _within("Strong query", RECOVERY_BOUND, lambda: _ids(client))
                _, ddl_after = _within(
                    "create_collection",
                    RECOVERY_BOUND,
                    lambda: client.create_collection("after", dimension=DIM, timeout=10),
                )
                print(
                    f"\nspace freed -> insert works after {insert_after:.2f}s, "
                    f"Strong query after {insert_after + read_after:.2f}s, "
                    f"create_collection after {insert_after + read_after + ddl_after:.2f}s"
                )
                assert len(got) == len(set(got)), "a row is there twice"
                assert set(acked) <= set(got), f"acknowledged rows missing: {sorted(set(acked) - set(got))[:10]}"
                assert set(got) <= set(acked) | refused_ids, "rows that were never inserted"
                client.insert("full", _rows(range(6000, 6010)))
                assert len(_ids(client)) == len(got) + 10
                client.close()

                assert s.proc is not None and s.proc.poll() is None, "the launcher exited"
                now = {name: pid for name, pid in s.children().items() if name != "etcd"}
                assert now == roles, f"a role was restarted: {roles} -> {now}"
        finally:
            s.kill()
