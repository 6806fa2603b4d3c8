"""The client side of a network-namespace cluster test, run inside the client's namespace.

The test process stays in the machine's own namespace, where the cluster's
addresses do not exist; it starts this module on the client host
(``ip netns exec NS python -m tests.cluster.netns_client ...``) and talks to
it over stdin/stdout, one JSON object per line each way (:class:`ClientHost`
is that side). Every request is ``{"op": NAME, ...}`` and every answer
``{"ok": RESULT}`` or ``{"error": TRACEBACK}``. Operations:

| op | does | answers |
|---|---|---|
| ``create`` | create, index and load the collection (retried while the cluster starts) | ``null`` |
| ``start`` | start ``clients`` :class:`~tests.cluster.harness.Inserter` threads | ``null`` |
| ``progress`` | acks so far; the (sent, acked) times of those sent after ``since`` | ``{"acked": [n...], "after": [[[s, a]...]...], "failures": n}`` |
| ``stop`` | stop and join the inserters | ``{"acked": [[start, stop]...], "attempted": [[start, stop]...]}`` |
| ``query_ids`` | every id, Strong consistency | ``[id...]`` |
| ``pchannels`` | the pchannel assignments in etcd | ``{name: {"node_id", "term", "state"}}`` |
| ``sessions`` | live sessions of ``role`` | ``{server_id: address}`` |
| ``wal_status`` | a streaming node's ``CollectStatus`` | ``[{"pchannel", "term", "available"}...]`` |
| ``produce_probe`` | an empty ``Produce`` to ``address`` for ``(pchannel, term)``: would it take an append? | the status code name |
| ``consume`` | ``Consume`` a pchannel from the start of its log for ``seconds`` | ``[[wal_term, timetick]...]`` in delivery order |

Times are ``time.monotonic()``, which every process of the machine shares.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import grpc
from pymilvus import MilvusClient

from common.errors import ErrorCode
from common.procutil import die_with_parent
from protos import streaming_pb2, streaming_pb2_grpc
from tests.cluster.harness import (
    Inserter,
    create_collection,
    query_ids,
    quiet_pymilvus,
    read_pchannels,
    read_sessions,
    retry,
)
from tests.cluster.netns import Host
from tests.harness import REPO


class ClientHost:
    """This module running on ``host``, driven from the test process; ``close()`` ends it."""

    def __init__(self, host: Host, *, uri: str, etcd: str, root: str, log: Path) -> None:
        out = open(log, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            host.argv(sys.executable, "-m", "tests.cluster.netns_client", "--uri", uri, "--etcd", etcd, "--root", root),
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        out.close()
        self._lock = threading.Lock()
        self.log_path = log

    def call(self, op: str, **args: object) -> Any:
        """Send one request and wait for its answer; an error on the client host raises ``RuntimeError``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"client host exited ({self.proc.poll()}):\n{self.log_path.read_text()[-3000:]}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"client host: {op} failed:\n{answer['error']}")
        return answer["ok"]

    def close(self) -> None:
        """Close its stdin (it stops its inserters and exits), kill it if it does not."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


_OPS = frozenset({"create", "start", "progress", "stop", "query_ids", "pchannels", "sessions", "wal_status",
                  "produce_probe", "consume"})  # fmt: skip


def _ranges(rs: list[range]) -> list[list[int]]:
    return [[r.start, r.stop] for r in rs]


class _Agent:
    """The operations of the table in the module docstring; runs on the client host."""

    def __init__(self, uri: str, etcd: str, root: str) -> None:
        self.uri, self.etcd, self.root = uri, etcd, root
        self.client = MilvusClient(uri, timeout=30)
        self.inserters: list[Inserter] = []
        self.collection = ""

    def create(self, collection: str, dim: int, shards: int) -> None:
        with quiet_pymilvus():
            retry("create", lambda: create_collection(self.client, collection, dim=dim, num_shards=shards), timeout=60)
        self.collection = collection

    def start(self, clients: int, dim: int) -> None:
        self.inserters = [Inserter(self.uri, self.collection, first_id=k * 1_000_000, dim=dim) for k in range(clients)]
        for t in self.inserters:
            t.start()

    def progress(self, since: float) -> dict[str, object]:
        acks = [list(t.acked) for t in self.inserters]
        return {
            "acked": [len(a) for a in acks],
            "after": [[[a.sent, a.acked] for a in ack if a.sent > since] for ack in acks],
            "failures": sum(t.failures for t in self.inserters),
        }

    def stop(self) -> dict[str, object]:
        for t in self.inserters:
            t.stop.set()
        for t in self.inserters:
            t.join(30)
            if t.is_alive():
                raise RuntimeError(f"{t.name} did not stop")
        return {
            "acked": _ranges([a.ids for t in self.inserters for a in t.acked]),
            "attempted": _ranges([r for t in self.inserters for r in t.attempted]),
        }

    def query_ids(self) -> list[int]:
        with quiet_pymilvus():
            return retry("query", lambda: query_ids(self.client, self.collection), timeout=30)

    def pchannels(self) -> dict[str, dict[str, object]]:
        return {
            name: {"node_id": m.node_id, "term": m.term, "state": m.state.value}
            for name, m in read_pchannels(self.etcd, self.root).items()
        }

    def sessions(self, role: str) -> dict[int, str]:
        return read_sessions(self.etcd, self.root, role)

    def wal_status(self, address: str) -> list[dict[str, object]]:
        with grpc.insecure_channel(address) as channel:
            stub = streaming_pb2_grpc.StreamingNodeManagerStub(channel)
            resp = stub.CollectStatus(streaming_pb2.CollectStatusRequest(), timeout=5)
        return [{"pchannel": w.pchannel, "term": w.term, "available": w.available} for w in resp.wals]

    def produce_probe(self, address: str, pchannel: str, term: int) -> str:
        """The answer to a Produce of no messages at ``(pchannel, term)``.

        The node looks up its WAL for exactly that term before it looks at the
        messages, so OK means it would still take appends there; nothing is written.
        """
        request = streaming_pb2.ProduceRequest(request_id=1, pchannel=pchannel, term=term)
        with grpc.insecure_channel(address) as channel:
            stub = streaming_pb2_grpc.StreamingNodeHandlerStub(channel)
            (resp,) = list(stub.Produce(iter([request]), timeout=5))
        return ErrorCode(resp.status.code).name

    def consume(self, address: str, pchannel: str, term: int, seconds: float) -> list[list[int]]:
        """``[wal_term, timetick]`` of every message ``Consume`` delivers from the start of the log, for ``seconds``."""
        request = streaming_pb2.ConsumeRequest(pchannel=pchannel, term=term, policy=streaming_pb2.DELIVER_ALL)
        out: list[list[int]] = []
        with grpc.insecure_channel(address) as channel:
            stub = streaming_pb2_grpc.StreamingNodeHandlerStub(channel)
            try:
                for resp in stub.Consume(request, timeout=seconds):
                    if resp.status.code != ErrorCode.OK:
                        raise RuntimeError(f"consume {pchannel} at {term}: {ErrorCode(resp.status.code).name}")
                    out.extend([m.message.wal_term, m.message.timetick] for m in resp.messages)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.DEADLINE_EXCEEDED:  # the stream tails: it ends by deadline
                    raise
        return out

    def handle(self, request: dict[str, Any]) -> object:
        op = request.pop("op")
        if op not in _OPS:
            raise ValueError(f"unknown op {op!r} (known: {', '.join(sorted(_OPS))})")
        return getattr(self, op)(**request)

    def close(self) -> None:
        for t in self.inserters:
            t.stop.set()
        for t in self.inserters:
            t.join(30)
        self.client.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uri", required=True, help="the proxy, http://ADDRESS:PORT")
    p.add_argument("--etcd", required=True, help="etcd endpoint ADDRESS:PORT")
    p.add_argument("--root", required=True, help="the cluster's etcd root")
    args = p.parse_args()
    agent = _Agent(args.uri, args.etcd, args.root)
    # pymilvus logs every failed call with a traceback; failures while a node is cut off are expected.
    with quiet_pymilvus(), contextlib.closing(agent):
        for line in sys.stdin:
            started = time.monotonic()
            try:
                answer: dict[str, object] = {"ok": agent.handle(json.loads(line))}
            except Exception:  # the test process gets the traceback
                answer = {"error": traceback.format_exc()}
            print(json.dumps(answer), flush=True)
            print(f"{line.strip()[:80]} answered in {time.monotonic() - started:.2f}s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
