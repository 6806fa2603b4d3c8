"""Free TCP ports on loopback for a child process to listen on.

A port found by binding port 0 comes from the kernel's ephemeral range, the same range every
outgoing connection takes its local port from: between the pick and the child's bind, a client
socket of any process may take it ("Address already in use"). Ports here come from a window below
the ephemeral range instead, which outgoing connections never use; ``STRATA_PORT_RANGE=LO-HI``
narrows the window (the test suite gives each xdist worker its own slice). Each pick is checked by
binding it, and a process never hands out the same port twice.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

ENV_RANGE = "STRATA_PORT_RANGE"
ENV_OWNER = "STRATA_PORT_RANGE_OWNER"
_KERNEL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_WINDOW = 12_000
_LOWEST = 10_000

_lock = threading.Lock()
_given: set[int] = set()
_cursor: int | None = None


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux default when unreadable)."""
    try:
        low, high = _KERNEL_RANGE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def port_window() -> tuple[int, int]:
    """The ports (inclusive) picks come from: ``STRATA_PORT_RANGE`` or the window below the ephemeral range."""
    named = os.environ.get(ENV_RANGE, "").strip()
    if named:
        low_text, _, high_text = named.partition("-")
        low, high = int(low_text), int(high_text)
        if not 1024 <= low <= high <= 65535:
            raise ValueError(f"{ENV_RANGE}={named!r}: expected LO-HI with 1024 <= LO <= HI <= 65535")
        owner = os.environ.get(ENV_OWNER, "").strip()
        if owner and high > low:
            middle = (low + high) // 2
            return (low, middle) if owner == str(os.getpid()) else (middle + 1, high)
        return low, high
    ephemeral_low, ephemeral_high = ephemeral_range()
    if ephemeral_low - _LOWEST >= 1000:
        return max(_LOWEST, ephemeral_low - _WINDOW), ephemeral_low - 1
    # An unusual kernel set-up leaves no room below: use the ports above the range.
    return ephemeral_high + 1, min(65535, ephemeral_high + _WINDOW)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nobody listens on, outside the ephemeral range, not given out before by this process."""
    global _cursor
    low, high = port_window()
    size = high - low + 1
    with _lock:
        if _cursor is None or not low <= _cursor <= high:
            _cursor = low + random.randrange(size)
        for _ in range(size):
            port = _cursor
            _cursor = low if _cursor >= high else _cursor + 1
            if port not in _given and _bindable(port):
                _given.add(port)
                return port
    raise OSError(f"no free port on 127.0.0.1 in {low}-{high}")
