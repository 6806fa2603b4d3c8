"""A size-limited tmpfs for tests that need a disk that really fills up.

Mounting needs root (CI runs as root). A test that uses it is marked
``needs_root`` and *fails* when it cannot mount: a disk-full test that skipped
itself would hide exactly the failure it exists to find.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``mount -o size=``, e.g. ``"4m"``) on ``path``; unmount on exit."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tmpfs and must run as root (it is marked needs_root)")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs on {path}: {done.stderr.strip()}")
    try:
        yield path
    finally:
        # Lazy: a process of the test that still has a file open must not keep the mount forever.
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def fill(directory: Path, name: str = "filler") -> Path:
    """Write zeros into ``directory/name`` until the disk is full; returns the file."""
    path = directory / name
    chunk = b"\0" * (256 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        while True:  # the last pages
            try:
                os.write(fd, b"\0" * 512)
            except OSError:
                break
    finally:
        os.close(fd)
    return path
