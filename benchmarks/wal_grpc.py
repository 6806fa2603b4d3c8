"""The gRPC WAL benchmark: append through ``Produce`` and read through ``Consume``.

The streaming node's services run in a child process (``wal_server.py``,
127.0.0.1 only, ``local`` backend with ``sync=True``, in-process TSO). This
process plays the clients: the real ``Producer`` and ``consume()`` of
``streamingnode/client`` behind a static assignment. Each case gets a fresh
pchannel, opened at term 1 with the node's ``Assign`` and removed after, so
fsync counts and reads cover that case alone.

Append: ``P`` tasks share one ``Producer`` (one Produce stream) and loop on
``append(pchannel, [k messages])`` for ``seconds``; reported are messages/s,
MB/s (payload bytes, 10^6), p50/p99 latency of a request's acknowledgement,
and the backend's fsyncs/s in the window (read from the server before and
after it).

Consume: one tailing ``consume()`` stream follows a pchannel while 64
producers append (1 KiB messages one and 16 per request, 64 KiB one per
request: the configurations of the append goals); reported are appended
vs consumed messages/s, the lag (acknowledged minus consumed Inserts) when
the appends stop and at worst, and how long the consumer then took to
reach the last acknowledged message.
Then the pchannel is reopened at term 2 (an empty write-ahead buffer, as
after a restart or a move) and a new stream reads every Insert from the
start: the catch-up rate, served from the segment files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from wal_common import VCHANNEL, insert_typed, per_s, percentile_ms

from common.errors import NotReady
from common.grpcutil import internal_channel, raise_for_status
from protos import streaming_pb2, streaming_pb2_grpc
from protos.common_pb2 import MessageType
from streamingnode.client.consumer import consume
from streamingnode.client.producer import Producer

_SERVER = Path(__file__).with_name("wal_server.py")
KIB = 1024
# Bounds on every wait, so that a stuck case fails instead of hanging the run.
_START_TIMEOUT = 20.0
_RPC_TIMEOUT = 30.0
_DRAIN_TIMEOUT = 15.0
_CATCH_UP_TIMEOUT = 30.0
_EXIT_TIMEOUT = 10.0
# A tailing consumer keeps up if it consumed at least this fraction of the append rate
# while the appends ran, and reached the last acknowledged message afterwards.
_KEEP_UP_RATIO = 0.95


class StaticAssignment:
    """An ``AssignmentSource`` without a coordinator: every pchannel lives at ``address``.

    A pchannel's term is 1 until :meth:`set_term` moves it. Asked for a term
    newer than the current one, :meth:`resolve` waits ``timeout`` (no newer
    term will come) and raises ``NotReady``, like the coordinator's cache.
    """

    def __init__(self, address: str) -> None:
        self._address = address
        self._terms: dict[str, int] = {}
        self.errors: list[tuple[str, int, str]] = []

    def set_term(self, pchannel: str, term: int) -> None:
        self._terms[pchannel] = term

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        term = self._terms.get(pchannel, 1)
        if term <= newer_than_term:
            await asyncio.sleep(timeout)
            raise NotReady(f"pchannel {pchannel} has no term above {newer_than_term}")
        return self._address, term

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        self.errors.append((pchannel, term, error))


class ServerProcess:
    """``wal_server.py`` in a child process: started by :meth:`start`, always ended by :meth:`stop`.

    The child runs in its own session (Ctrl-C in the terminal reaches only
    this process, whose ``stop`` ends it) and exits by itself when its stdin
    closes, so it also goes away if this process dies.
    """

    def __init__(self, wal_dir: Path, *, max_seconds: float) -> None:
        self._wal_dir = wal_dir
        self._max_seconds = max_seconds
        self._proc: asyncio.subprocess.Process | None = None
        self._channel: grpc.aio.Channel | None = None
        self._stub: streaming_pb2_grpc.StreamingNodeManagerStub | None = None
        self.address = ""
        self.exit_event: dict[str, Any] | None = None

    async def __aenter__(self) -> ServerProcess:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Spawn the server and wait until it listens; on any failure the child is ended."""
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(_SERVER),
            "--wal-dir",
            str(self._wal_dir),
            "--max-seconds",
            str(self._max_seconds),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            listening = await self._read("listening", _START_TIMEOUT)
            self.address = f"127.0.0.1:{listening['port']}"
            self._channel = internal_channel(self.address)
            self._stub = streaming_pb2_grpc.StreamingNodeManagerStub(self._channel)
        except BaseException:
            await self.stop()
            raise

    async def _read(self, event: str, timeout: float) -> dict[str, Any]:
        """The next stdout line of ``event`` (others are skipped)."""
        assert self._proc is not None and self._proc.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = await self._proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"wal server exited (code {await self._proc.wait()}) before {event!r}")
                parsed: dict[str, Any] = json.loads(line)
                if parsed.get("event") == event:
                    return parsed

    async def stats(self, pchannel: str) -> dict[str, int]:
        """The backend counters (``fsync_count``, ``commit_count``) of an open pchannel."""
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(b"stats\n")
        await self._proc.stdin.drain()
        wals: dict[str, dict[str, int]] = (await self._read("stats", _RPC_TIMEOUT))["wals"]
        return wals[pchannel]

    async def assign(self, pchannel: str, term: int) -> None:
        assert self._stub is not None
        req = streaming_pb2.AssignRequest(pchannel=pchannel, term=term)
        raise_for_status((await self._stub.Assign(req, timeout=_RPC_TIMEOUT)).status)

    async def remove(self, pchannel: str, term: int) -> None:
        assert self._stub is not None
        req = streaming_pb2.RemoveRequest(pchannel=pchannel, term=term)
        raise_for_status((await self._stub.Remove(req, timeout=_RPC_TIMEOUT)).status)

    async def stop(self) -> None:
        """Close stdin (the server's signal to shut down) and wait; terminate, then kill, if it lingers."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.returncode is None and proc.stdin is not None:
                proc.stdin.close()
                with contextlib.suppress(TimeoutError, RuntimeError, ValueError):
                    self.exit_event = await self._read("exit", _EXIT_TIMEOUT)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_EXIT_TIMEOUT):
                        await proc.wait()
        finally:
            self._proc = None
            if proc.returncode is None:
                proc.terminate()
                try:
                    async with asyncio.timeout(3):
                        await proc.wait()
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


class _Reader:
    """One ``consume()`` stream of the benchmark vchannel, in a task it owns, counting Inserts."""

    def __init__(self, source: StaticAssignment, pchannel: str) -> None:
        self.count = 0
        self.reached_at = 0.0
        self._target: int | None = None
        self._reached = asyncio.Event()
        self._task = asyncio.create_task(self._run(source, pchannel), name=f"bench-consume-{pchannel}")

    async def _run(self, source: StaticAssignment, pchannel: str) -> None:
        # Cancelling this task raises inside consume(), whose own finally closes its channel.
        async for _, msg in consume(source, pchannel, VCHANNEL):
            if msg.type == MessageType.INSERT:
                self.count += 1
                self._check()

    def _check(self) -> None:
        if self._target is not None and self.count >= self._target and not self._reached.is_set():
            self.reached_at = time.perf_counter()
            self._reached.set()

    async def wait_for(self, target: int, timeout: float) -> bool:
        """Whether ``target`` Inserts arrived within ``timeout``; :attr:`reached_at` says when."""
        self._target = target
        self._reached.clear()
        self._check()
        try:
            async with asyncio.timeout(timeout):
                await self._reached.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _append_case(
    node: ServerProcess, source: StaticAssignment, *, producers: int, size: int, batch: int, seconds: float
) -> dict[str, Any]:
    pchannel = f"append-p{producers}-s{size}-b{batch}"
    await node.assign(pchannel, 1)
    messages = [insert_typed(size)] * batch
    producer = Producer(source)
    latencies: list[float] = []

    async def produce(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await producer.append(pchannel, messages)
            latencies.append(time.perf_counter() - t0)

    try:
        await producer.append(pchannel, messages[:1])  # opens the Produce stream outside the window
        before = await node.stats(pchannel)
        start = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for _ in range(producers):
                tg.create_task(produce(start + seconds))
        elapsed = time.perf_counter() - start
        after = await node.stats(pchannel)
    finally:
        await producer.close()
        await node.remove(pchannel, 1)
    n = len(latencies) * batch
    fsyncs = after["fsync_count"] - before["fsync_count"]
    commits = after["commit_count"] - before["commit_count"]
    return {
        "producers": producers,
        "message_bytes": size,
        "messages_per_request": batch,
        "messages": n,
        "messages_per_s": per_s(n, elapsed),
        "mb_per_s": per_s(n * size / 1e6, elapsed, 1),
        "ack_p50_ms": percentile_ms(latencies, 50),
        "ack_p99_ms": percentile_ms(latencies, 99),
        "fsyncs_per_s": per_s(fsyncs, elapsed),
        "messages_per_fsync": round(n / max(fsyncs, 1), 1),
        "messages_per_commit": round(n / max(commits, 1), 1),
    }


async def _tailing(
    source: StaticAssignment, pchannel: str, *, producers: int, size: int, batch: int, seconds: float
) -> tuple[dict[str, Any], int]:
    """Appends for ``seconds`` under a tailing consumer; returns the figures and how many Inserts were acked."""
    messages = [insert_typed(size)] * batch
    producer = Producer(source)
    reader = _Reader(source, pchannel)
    acked = 0
    max_lag = 0
    try:
        # One message first: both streams are up before the window opens.
        await producer.append(pchannel, messages[:1])
        acked = 1
        if not await reader.wait_for(1, _DRAIN_TIMEOUT):
            raise RuntimeError(f"the consumer of {pchannel} received nothing")
        consumed0 = reader.count
        stop = asyncio.Event()

        async def produce(deadline: float) -> None:
            nonlocal acked
            while time.perf_counter() < deadline:
                await producer.append(pchannel, messages)
                acked += batch

        async def sample_lag() -> None:
            nonlocal max_lag
            while not stop.is_set():
                max_lag = max(max_lag, acked - reader.count)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        await stop.wait()

        start = time.perf_counter()
        async with asyncio.TaskGroup() as outer:
            outer.create_task(sample_lag())
            try:
                async with asyncio.TaskGroup() as tg:
                    for _ in range(producers):
                        tg.create_task(produce(start + seconds))
            finally:
                stop.set()
            end = time.perf_counter()
            acked_at_stop, consumed_at_stop = acked, reader.count
        caught_up = await reader.wait_for(acked_at_stop, max(_DRAIN_TIMEOUT, 5 * seconds))
    finally:
        await reader.close()
        await producer.close()
    elapsed = end - start
    appended = acked_at_stop - 1
    appended_per_s = per_s(appended, elapsed)
    consumed_per_s = per_s(consumed_at_stop - consumed0, elapsed)
    figures = {
        "appended_messages": appended,
        "appended_per_s": appended_per_s,
        "appended_mb_per_s": per_s(appended * size / 1e6, elapsed, 1),
        "consumed_per_s": consumed_per_s,
        "consumed_mb_per_s": per_s((consumed_at_stop - consumed0) * size / 1e6, elapsed, 1),
        "lag_at_stop": acked_at_stop - consumed_at_stop,
        "max_lag": max(max_lag, acked_at_stop - consumed_at_stop),
        "caught_up": caught_up,
        "drain_seconds": round(reader.reached_at - end, 3) if caught_up else None,
        "keeps_up": caught_up and consumed_per_s >= _KEEP_UP_RATIO * appended_per_s,
    }
    return figures, acked


async def _catch_up(
    source: StaticAssignment, pchannel: str, *, size: int, total: int, timeout: float
) -> dict[str, Any]:
    """Read ``total`` Inserts from the start of ``pchannel`` through a new Consume stream."""
    start = time.perf_counter()
    reader = _Reader(source, pchannel)
    try:
        complete = await reader.wait_for(total, timeout)
        read = reader.count
        elapsed = (reader.reached_at if complete else time.perf_counter()) - start
    finally:
        await reader.close()
    return {
        "messages": read,
        "complete": complete,
        "messages_per_s": per_s(read, elapsed),
        "mb_per_s": per_s(read * size / 1e6, elapsed, 1),
        "seconds": round(elapsed, 2),
    }


async def _consume_case(
    node: ServerProcess, source: StaticAssignment, *, producers: int, size: int, batch: int, seconds: float
) -> dict[str, Any]:
    pchannel = f"consume-p{producers}-s{size}-b{batch}"
    await node.assign(pchannel, 1)
    try:
        tailing, acked = await _tailing(
            source, pchannel, producers=producers, size=size, batch=batch, seconds=seconds
        )
    finally:
        await node.remove(pchannel, 1)
    # A new term starts with an empty write-ahead buffer: the history comes from the segment files.
    await node.assign(pchannel, 2)
    source.set_term(pchannel, 2)
    try:
        timeout = max(_CATCH_UP_TIMEOUT, 15 * seconds)
        catch_up = await _catch_up(source, pchannel, size=size, total=acked, timeout=timeout)
    finally:
        await node.remove(pchannel, 2)
    return {
        "producers": producers,
        "message_bytes": size,
        "messages_per_request": batch,
        "tailing": tailing,
        "catch_up": catch_up,
    }


def _find(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(r for r in rows if all(r[k] == v for k, v in match.items()))


def _goals(append: list[dict[str, Any]], consume: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue #3's targets against the measured figures (64 producers everywhere).

    "Far fewer fsyncs than messages" is read as at least 10 messages per fsync.
    """
    one_kib = _find(append, producers=64, message_bytes=KIB, messages_per_request=1)
    one_kib_batched = _find(append, producers=64, message_bytes=KIB, messages_per_request=16)
    big = _find(append, producers=64, message_bytes=64 * KIB, messages_per_request=1)
    big_batched = _find(append, producers=64, message_bytes=64 * KIB, messages_per_request=16)
    goals = [
        ("1 KiB: >= 10,000 acked messages/s, 1 message per request", one_kib["messages_per_s"], 10_000),
        ("1 KiB: >= 10,000 acked messages/s, 16 messages per request", one_kib_batched["messages_per_s"], 10_000),
        ("1 KiB: group commit, >= 10 messages per fsync, 1 per request", one_kib["messages_per_fsync"], 10),
        ("1 KiB: group commit, >= 10 messages per fsync, 16 per request", one_kib_batched["messages_per_fsync"], 10),
        ("64 KiB: >= 50 MB/s, 1 message per request", big["mb_per_s"], 50),
        ("64 KiB: >= 50 MB/s, 16 messages per request", big_batched["mb_per_s"], 50),
    ]
    out = [{"goal": g, "measured": m, "met": m >= target} for g, m, target in goals]
    for case in consume:
        t = case["tailing"]
        out.append(
            {
                "goal": f"{case['message_bytes'] // KIB} KiB, {case['messages_per_request']} per request: "
                "a tailing consumer keeps up",
                "measured": f"{t['consumed_per_s']}/{t['appended_per_s']} msg/s, lag at stop {t['lag_at_stop']}",
                "met": t["keeps_up"],
            }
        )
    return out


async def run_grpc(root: Path, seconds: float) -> dict[str, Any]:
    """Every gRPC case against one server child under ``root``; the ``"grpc"`` part of the result."""
    started = time.perf_counter()
    async with ServerProcess(root / "wal", max_seconds=max(300.0, 60 * seconds)) as node:
        source = StaticAssignment(node.address)
        append = [
            await _append_case(node, source, producers=producers, size=size, batch=1, seconds=seconds)
            for size in (KIB, 64 * KIB)
            for producers in (1, 8, 64)
        ]
        append += [
            await _append_case(node, source, producers=64, size=size, batch=16, seconds=seconds)
            for size in (KIB, 64 * KIB)
        ]
        # The configurations of the append goals: 1 KiB needs batched requests to reach its rate.
        consume_cases = [
            await _consume_case(node, source, producers=64, size=size, batch=batch, seconds=seconds)
            for size, batch in ((KIB, 1), (KIB, 16), (64 * KIB, 1))
        ]
    return {
        "transport": "gRPC Produce/Consume over 127.0.0.1; streaming node in a child process",
        "backend": "local, sync=True (one fsync per group commit)",
        "tso": "in-process monotonic in the server; the coordinator's AllocTimestamp RPC is not in the loop",
        "clients": "streamingnode.client Producer (one Produce stream per pchannel) and consume()",
        "append": append,
        "consume": consume_cases,
        "goals": _goals(append, consume_cases),
        "assignment_errors": len(source.errors),
        "server_exit": node.exit_event,
        "seconds": round(time.perf_counter() - started, 1),
    }
