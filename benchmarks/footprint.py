"""Resident memory of a block of work in this process: its peak and what it keeps (Linux only).

    with Footprint() as mem:
        index = build()
    mem.summary()  # {"peak": MiB above the start, "held": MiB still resident at the end above the start}

The peak is the kernel's high-water mark (``VmHWM`` in ``/proc/self/status``),
reset on entry by writing ``5`` to ``/proc/self/clear_refs``. Both figures are
differences from the resident size on entry. On entry the garbage collector
runs and glibc's ``malloc_trim`` hands freed heap back to the system, so the
block's allocations need new pages rather than reusing resident free ones (a
block small enough to fit in what is left can still read near 0). Pages the
block only reads (the rows an index points to) do not count.
"""

from __future__ import annotations

import ctypes
import gc
from pathlib import Path
from types import TracebackType

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} is not in {_STATUS}")


class Footprint:
    """Peak and held resident growth of the ``with`` block, in KiB; ``summary`` gives MiB."""

    def __init__(self) -> None:
        self.start_kib = 0
        self.peak_kib = 0
        self.held_kib = 0

    def __enter__(self) -> Footprint:
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc: free memory may be reused and under-counted
            pass
        _CLEAR_REFS.write_text("5")  # VmHWM := VmRSS
        self.start_kib = _status_kib("VmRSS")
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.peak_kib = _status_kib("VmHWM") - self.start_kib
        self.held_kib = _status_kib("VmRSS") - self.start_kib

    def summary(self) -> dict[str, float]:
        return {"peak": round(self.peak_kib / 1024, 1), "held": round(self.held_kib / 1024, 1)}
