"""Free ports: outside the ephemeral range, never twice, split between a process and its children."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from common import ports
from tests.harness import REPO


def test_ports_come_from_below_the_ephemeral_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ports.ENV_RANGE, raising=False)
    monkeypatch.delenv(ports.ENV_OWNER, raising=False)
    ephemeral_low, ephemeral_high = ports.ephemeral_range()
    picked = {ports.free_port() for _ in range(50)}
    assert len(picked) == 50
    assert all(p < ephemeral_low or p > ephemeral_high for p in picked)


def test_a_bound_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        monkeypatch.setenv(ports.ENV_RANGE, f"{port}-{port}")
        monkeypatch.delenv(ports.ENV_OWNER, raising=False)
        with pytest.raises(OSError, match=f"no free port on 127.0.0.1 in {port}-{port}"):
            ports.free_port()


def test_a_bad_range_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ports.ENV_RANGE, "70000-80000")
    with pytest.raises(ValueError, match="STRATA_PORT_RANGE"):
        ports.free_port()


def test_the_owner_takes_the_lower_half_and_its_children_the_upper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ports.ENV_RANGE, "21000-21099")
    monkeypatch.setenv(ports.ENV_OWNER, str(os.getpid()))
    mine = {ports.free_port() for _ in range(20)}
    assert all(21000 <= p <= 21049 for p in mine)
    child = subprocess.run(
        [sys.executable, "-c", "from common.ports import free_port; print(*[free_port() for _ in range(20)])"],
        cwd=REPO,
        env={**os.environ},
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = {int(p) for p in child.stdout.split()}
    assert len(theirs) == 20
    assert all(21050 <= p <= 21099 for p in theirs)
