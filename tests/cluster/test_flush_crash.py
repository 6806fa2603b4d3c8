"""kill -9 of the streaming node at each step of a flush: nothing lost, nothing twice, deletes stay.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator, a
streaming node, a query node and a proxy, sharing one object storage. The
streaming node runs with ``STRATA_FAILPOINTS`` armed at one step
(``common/failpoints.py``), small WAL files and fast truncation, so it kills
itself with SIGKILL exactly there:

* ``flusher.after_files``: a sync wrote its files, the segment metadata is not saved;
* ``flusher.after_metadata``: the segment is FLUSHED, its checkpoint not moved;
* ``flusher.after_checkpoint``: the checkpoint moved, the WAL not truncated;
* ``wal.truncate.between_files``: truncation deleted one WAL file of several;

the first also with the segments on S3 (moto's S3-API server on loopback).

The test inserts and deletes (every call acknowledged), calls ``flush()`` in a
thread, waits for the node to die, starts it again without the failpoint, and
lets ``flush()`` finish. Then, checked:

* a Strong query returns every acknowledged, undeleted id exactly once, and no
  deleted id (``count(*)`` agrees);
* reading the FLUSHED L1 segments straight from object storage gives every
  inserted id exactly once (crash leftovers are never named by a segment);
* a query node started afresh (the old one killed) loads the sealed segments,
  consumes the truncated WAL from the checkpoint, and returns the same rows;
* more inserts and a second flush work.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from common.etcd.process import EtcdProcess
from common.schema import CollectionSchema
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from coordinator.catalog import CollectionMeta
from tests.cluster.harness import (
    Role,
    create_collection,
    quiet_pymilvus,
    read_prefix,
    retry,
    vectors,
)
from tests.harness import free_port
from tests.s3server import S3Server

DIM = 8
ROOT = "flushcrash"
ROWS = 3000
BATCH = 250


def _segments(endpoint: str) -> list[SegmentMeta]:
    return [SegmentMeta.from_json(v) for v in read_prefix(endpoint, ROOT, "datacoord/segment/").values()]


def _checkpoints(endpoint: str) -> dict[str, int]:
    """vchannel -> checkpoint timetick."""
    raw = read_prefix(endpoint, ROOT, "datacoord/channel-cp/")
    return {k.rsplit("/", 1)[1]: int(json.loads(v)["timetick"]) for k, v in raw.items()}


def _schema(endpoint: str) -> CollectionSchema:
    [raw] = read_prefix(endpoint, ROOT, "rootcoord/collection/").values()
    return CollectionMeta.from_json(raw).schema


def _ids_in_storage(storage: ObjectStore, schema: CollectionSchema, segments: list[SegmentMeta]) -> list[int]:
    reader = SegmentReader(storage, schema)
    ids: list[int] = []
    for seg in segments:
        if seg.state == SegmentState.FLUSHED and seg.level == SegmentLevel.L1:
            ids.extend(reader.read_inserts(reader.read_manifest(seg.manifest)).column("id").to_pylist())
    return ids


def _live_ids(client: MilvusClient) -> list[int]:
    rows = client.query("c", filter="id >= 0", output_fields=["id"], limit=16384, consistency_level="Strong",
                        timeout=30)
    return [int(r["id"]) for r in rows]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("failpoint", "backend"),
    [
        ("flusher.after_files", "file"),
        ("flusher.after_metadata", "file"),
        ("flusher.after_checkpoint", "file"),
        ("wal.truncate.between_files", "file"),
        ("flusher.after_files", "s3"),
    ],
)
def test_a_streaming_node_killed_at_a_flush_step_loses_and_repeats_nothing(
    tmp_path: Path, request: pytest.FixtureRequest, failpoint: str, backend: str
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    env = {"STRATA_COMMON_SESSION_TTL_SECONDS": "5"}
    if backend == "s3":  # every role reaches the S3-API server on loopback, as a deployment would
        server: S3Server = request.getfixturevalue("s3_server")
        env.update(server.env())
        storage_uri = f"s3://{server.bucket}/{uuid.uuid4().hex}"
    else:
        storage_uri = (tmp_path / "storage").as_uri()
    sn_env = {
        **env,
        "STRATA_STREAMINGNODE_WAL_SEGMENT_BYTES": str(32 << 10),
        "STRATA_STREAMINGNODE_TRUNCATE_INTERVAL_SECONDS": "0.5",
    }
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", storage_uri]
        sn_args = ["streamingnode", *common, *storage, "--wal-dir", str(tmp_path / "wal")]
        roles.append(Role("coordinator", ["coordinator", *common, *storage, "--port", "0", "--pchannels", "2"], logs,
                          env))
        sn = Role("streamingnode", sn_args, logs, {**sn_env, "STRATA_FAILPOINTS": f"{failpoint}=kill"})
        roles.append(sn)
        qn = Role("querynode", ["querynode", *common, *storage], logs, env)
        roles.append(qn)
        port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(port)], logs, env))
        for role in roles:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{port}", timeout=30)
        with quiet_pymilvus():
            retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=2), timeout=60)
        initial = _checkpoints(etcd.endpoint)
        for first in range(0, ROWS, BATCH):
            client.insert("c", vectors(range(first, first + BATCH), DIM), timeout=30)
        deleted = list(range(0, ROWS, 7))
        client.delete("c", ids=deleted, timeout=30)
        expected = sorted(set(range(ROWS)) - set(deleted))
        # Let the flusher report checkpoints while the segments grow: a restart then resumes from
        # them, not from the collection's creation, which is what a wrong checkpoint would break.
        deadline = time.monotonic() + 20
        while any(_checkpoints(etcd.endpoint).get(v) == cp for v, cp in initial.items()):
            assert time.monotonic() < deadline, "checkpoints never reported"
            time.sleep(0.1)

        flush_error: list[BaseException] = []

        def flush() -> None:
            try:
                with quiet_pymilvus():
                    client.flush("c", timeout=120)
            except BaseException as err:  # reported by the main thread
                flush_error.append(err)

        flusher = threading.Thread(target=flush, daemon=True)
        flusher.start()
        sn.proc.wait(60)  # the failpoint kills it
        assert sn.proc.returncode == -signal.SIGKILL, sn.log()[-3000:]
        assert "failpoint kill" in sn.log()
        sn_again = Role("streamingnode-2", sn_args, logs, sn_env)
        roles.append(sn_again)
        sn_again.wait_for_log("role ready", 60)
        flusher.join(150)
        assert not flusher.is_alive(), "flush() did not finish after the restart"
        assert not flush_error, flush_error

        with quiet_pymilvus():
            got = retry("query", lambda: _live_ids(client), timeout=60)
        assert len(got) == len(set(got)), "a row is returned twice"
        assert sorted(got) == expected
        count = client.query("c", filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
        assert count == len(expected)
        assert client.query("c", filter=f"id in {deleted[:50]}", consistency_level="Strong") == []
        # Milvus semantics: inserted rows, deletes subtracted only by compaction; exact across the restart.
        assert client.get_collection_stats("c")["row_count"] == ROWS

        segments = _segments(etcd.endpoint)
        files = ObjectStore.from_uri(storage_uri, env=env)
        in_storage = asyncio.run(asyncio.to_thread(_ids_in_storage, files, _schema(etcd.endpoint), segments))
        assert sorted(in_storage) == list(range(ROWS)), f"{len(in_storage)} rows in flushed segments"

        # A fresh query node reads everything back from object storage and the (truncated) WAL.
        qn.kill()
        roles.append(Role("querynode-2", ["querynode", *common, *storage], logs, env))
        roles[-1].wait_for_log("role ready", 60)
        with quiet_pymilvus():
            again = retry("query after a query node restart", lambda: _live_ids(client), timeout=90)
        assert sorted(again) == expected and len(again) == len(set(again))
        assert "sealed segment loaded" in roles[-1].log()

        more = vectors(range(ROWS, ROWS + BATCH), DIM)
        client.insert("c", more, timeout=30)
        client.flush("c", timeout=120)
        with quiet_pymilvus():
            final = retry("query after more", lambda: _live_ids(client), timeout=60)
        assert sorted(final) == expected + list(range(ROWS, ROWS + BATCH))
        print(f"{failpoint}: {len(segments)} segment records")
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()

