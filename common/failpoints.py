"""Fault injection: named points where a test can make the process die or an I/O call fail.

``STRATA_FAILPOINTS="flusher.after_files=kill,wal.truncate=kill"`` arms points
in a process (read once, at the first call; :func:`arm` replaces the set in
the test's own process). An unarmed point costs one dict lookup. Actions:

| action | what the point does |
|---|---|
| ``kill`` | sends SIGKILL to the process itself, what ``kill -9`` from outside does, but at an exact step |
| an errno name (``ENOSPC``, ``EIO``, ``EDQUOT``, ...) | raises ``OSError`` with that errno, as the I/O call after the point would |
| ``error`` | raises ``FailpointError`` (a ``StrataError``), as a missing or corrupt object in storage would |
| ``sleep:SECONDS`` | makes the step that long (a slow disk, a big segment); for points that run in threads |

Points in the code:

| point | where |
|---|---|
| ``flusher.after_files`` | a sync wrote its files, before the segment metadata |
| ``flusher.after_metadata`` | SaveBinlogPaths returned, before the checkpoint moves |
| ``flusher.after_checkpoint`` | the checkpoint was saved, before truncation |
| ``wal.truncate`` | a truncation is about to delete WAL files |
| ``wal.truncate.between_files`` | between two file deletions of one truncation |
| ``compaction.after_job`` | a compaction's Spark job returned, nothing recorded yet |
| ``compaction.after_outputs`` | a plan's outputs are recorded hidden (or an L0 plan's targets updated), not committed |
| ``compaction.after_commit`` | a plan committed (outputs visible, inputs dropped), outputs' job id not cleared |
| ``import.after_job`` / ``import.after_outputs`` | the same two steps of an import |
| ``worker.load_segment`` | a worker is about to read a sealed segment's rows |
| ``worker.load_index`` | a worker is about to read a sealed segment's saved vector index |
| ``worker.build_index`` | a worker is about to build a segment's missing vector index (in the background) |
| ``delegator.read_keys`` | a delegator is about to read a sealed segment's keys and PK stats |
| ``delegator.load_l0`` | a delegator is about to read an L0 segment's deletes |
| ``wal.local.write`` | the local WAL is about to write a batch's bytes to a segment file |
| ``wal.local.fsync`` | the local WAL is about to fsync a segment file (its bytes are written) |

A point named ``name@N`` fires on its N-th pass only (``flusher.after_files@2=kill``).
"""

from __future__ import annotations

import errno
import os
import signal
import time
from collections import Counter

import structlog

from common.errors import StrataError

_ENV = "STRATA_FAILPOINTS"


class FailpointError(StrataError):
    """What an ``error`` failpoint raises: an unexpected failure at that step, as a missing or
    corrupt object in storage raises (``common.storage.errors``)."""

_armed: dict[str, str] | None = None
_passes: Counter[str] = Counter()


def _load() -> dict[str, str]:
    return _parse(os.environ.get(_ENV, ""))


def _parse(spec: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in spec.split(","))):
        name, _, action = item.partition("=")
        out[name.strip()] = action.strip() or "kill"
    return out


def arm(spec: str) -> None:
    """Replace the armed points of this process with ``spec`` (the ``STRATA_FAILPOINTS`` syntax).

    For tests that inject faults in their own process (child processes still read the
    variable); ``arm("")`` disarms every point. Pass counts start again.
    """
    global _armed
    _armed = _parse(spec)
    _passes.clear()


def failpoint(name: str) -> None:
    """Do what ``STRATA_FAILPOINTS`` says for ``name`` (usually nothing)."""
    global _armed
    if _armed is None:
        _armed = _load()
    if not _armed:
        return
    _passes[name] += 1
    action = _armed.get(name) or _armed.get(f"{name}@{_passes[name]}")
    if action is None:
        return
    if action == "kill":
        structlog.get_logger().bind(component="failpoint").critical("failpoint kill", point=name)
        os.kill(os.getpid(), signal.SIGKILL)
    if action.startswith("sleep:"):
        time.sleep(float(action.removeprefix("sleep:")))  # points that may sleep run in threads
        return
    if action == "error":
        structlog.get_logger().bind(component="failpoint").warning("failpoint error", point=name)
        raise FailpointError(f"failpoint {name}: injected error")
    code = getattr(errno, action, None)
    if action.startswith("E") and isinstance(code, int):
        raise OSError(code, f"{os.strerror(code)} (failpoint {name})")
    raise RuntimeError(f"failpoint {name}: unknown action {action!r}")
