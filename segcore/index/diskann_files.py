"""DISKANN's files on the node's local disk, and their one-blob form in object storage.

A loaded DISKANN index is a directory of diskannpy's files (the graph with
the full-precision vectors, ``ann_disk.index``; the PQ pivots and codes; a
sample of rows for the node cache) that the native index reads with its own
file I/O. Each index gets its own directory under the node's disk root
(``IndexOptions.disk_dir``, by default ``<tmp>/strata-diskann``), named
``<pid>-<random>``; it is deleted when the index is garbage-collected, and a
directory whose process is gone (a crash) is deleted by the next process that
creates one.

Stored form (``diskann-<crc32c>.bin`` beside ``meta.json``): ``b"STRADKAN"``,
the format version and the length of a JSON header (little-endian uint32s),
the header (``rows``, ``dim``, ``metric``, ``max_degree``, ``files``: a list of
``[name, size]``), then the files' bytes in that order.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import struct
import tempfile
import weakref
from dataclasses import dataclass

import structlog

_MAGIC = b"STRADKAN"
_VERSION = 1
_PREFIX = struct.Struct("<8sII")

log = structlog.get_logger().bind(component="diskann-files")


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskHeader:
    """What a stored DISKANN blob says it holds."""

    rows: int
    dim: int
    metric: str
    max_degree: int


def disk_root(configured: str | None) -> str:
    """The directory under which DISKANN indexes keep their files."""
    return configured or os.path.join(tempfile.gettempdir(), "strata-diskann")


def new_index_dir(root: str, owner: object) -> str:
    """A fresh private directory under ``root``, deleted once ``owner`` is garbage-collected."""
    os.makedirs(root, exist_ok=True)
    _sweep_orphans(root)
    path = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root)
    weakref.finalize(owner, shutil.rmtree, path, ignore_errors=True)
    return path


def pack(directory: str, names: list[str], header: DiskHeader) -> bytes:
    """The files ``names`` of ``directory`` in the stored form."""
    sizes = [os.path.getsize(os.path.join(directory, name)) for name in names]
    doc = {
        "rows": header.rows,
        "dim": header.dim,
        "metric": header.metric,
        "max_degree": header.max_degree,
        "files": [[name, size] for name, size in zip(names, sizes, strict=True)],
    }
    head = json.dumps(doc, sort_keys=True).encode()
    out = bytearray(_PREFIX.pack(_MAGIC, _VERSION, len(head)))
    out += head
    for name in names:
        with open(os.path.join(directory, name), "rb") as f:
            out += f.read()
    return bytes(out)


def unpack(data: bytes, directory: str) -> tuple[DiskHeader, list[str]]:
    """Write the files of a stored blob into ``directory``; its header and the file names.

    Raises:
        ValueError: not a blob of this format, or truncated.
    """
    view = memoryview(data)
    if len(view) < _PREFIX.size:
        raise ValueError("DISKANN data is shorter than its header")
    magic, version, head_len = _PREFIX.unpack_from(view)
    if magic != _MAGIC or version != _VERSION:
        raise ValueError(f"not DISKANN data of format {_VERSION} (magic {magic!r}, version {version})")
    start = _PREFIX.size + head_len
    try:
        doc = json.loads(bytes(view[_PREFIX.size : start]))
        header = DiskHeader(rows=int(doc["rows"]), dim=int(doc["dim"]), metric=str(doc["metric"]),
                            max_degree=int(doc["max_degree"]))
        files = [(str(name), int(size)) for name, size in doc["files"]]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError("DISKANN data header is unreadable") from err
    if start + sum(size for _, size in files) != len(view):
        raise ValueError("DISKANN data is truncated or too long")
    for name, size in files:
        if os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"DISKANN data names a bad file {name!r}")
        with open(os.path.join(directory, name), "wb") as f:
            f.write(view[start : start + size])
        start += size
    return header, [name for name, _ in files]


def _sweep_orphans(root: str) -> None:
    """Delete the directories of processes that are gone (they crashed before cleaning up)."""
    for entry in os.scandir(root):
        pid_text = entry.name.split("-", 1)[0]
        if not entry.is_dir() or not pid_text.isdigit():
            continue
        if int(pid_text) != os.getpid() and not _alive(int(pid_text)):
            shutil.rmtree(entry.path, ignore_errors=True)
            log.info("orphan index directory deleted", path=entry.path)


def _alive(pid: int) -> bool:
    with contextlib.suppress(PermissionError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
    return True
