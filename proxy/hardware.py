"""This host's CPU and memory, as Milvus's ``system_info`` metrics report them (``HardwareMetrics``).

Read from ``/proc`` on each call (Linux; elsewhere the figures are 0). CPU
usage is the whole host's busy share since the previous reading, the first one
taken when the ``CpuUsage`` is made, as gopsutil's ``cpu.Percent(0)`` that
Milvus uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class CpuTimes:
    busy: int  # clock ticks spent not idle, since boot
    total: int


def read_cpu_times(proc: Path = _PROC) -> CpuTimes | None:
    """The host's CPU time from ``/proc/stat`` (None where it cannot be read)."""
    try:
        first = (proc / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    ticks = [int(v) for v in first[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return CpuTimes(busy=sum(ticks) - idle, total=sum(ticks))


class CpuUsage:
    """The host's CPU usage in percent (0-100) between consecutive ``percent()`` calls."""

    def __init__(self, proc: Path = _PROC) -> None:
        self._proc = proc
        self._last = read_cpu_times(proc)

    def percent(self) -> float:
        now = read_cpu_times(self._proc)
        last, self._last = self._last, now
        if now is None or last is None or now.total <= last.total:
            return 0.0
        return 100.0 * (now.busy - last.busy) / (now.total - last.total)


def memory(proc: Path = _PROC) -> tuple[int, int]:
    """``(total, used)`` bytes of the host's memory: MemTotal and MemTotal - MemAvailable (0, 0 if unknown)."""
    fields: dict[str, int] = {}
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            fields[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0, 0
    total = fields.get("MemTotal", 0)
    return total, max(total - fields.get("MemAvailable", total), 0)


def cpu_count() -> int:
    return os.cpu_count() or 0
