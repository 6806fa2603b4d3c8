"""``strata health``: which address a role's command line serves on, and the exit statuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from common.configfile import ConfigError
from launch.cli import role_address
from tests.harness import REPO, free_port

ETCD = ["--etcd", "127.0.0.1:2379"]


def test_flags_give_the_address() -> None:
    argv = ["/opt/strata/bin/python", "/opt/strata/bin/strata", "proxy", *ETCD, "--port", "19600"]
    assert role_address(argv, {}, Path("/")) == "127.0.0.1:19600"


def test_proxy_defaults_to_19530() -> None:
    assert role_address(["strata", "proxy", *ETCD], {}, Path("/")) == "127.0.0.1:19530"


def test_config_file_is_relative_to_the_process_directory(tmp_path: Path) -> None:
    (tmp_path / "strata.yaml").write_text(
        "common: {etcd: '127.0.0.1:2379', host: 0.0.0.0}\nquerynode: {port: 19650, storage: 'file:///s'}\n"
    )
    argv = ["python", "-m", "launch.cli", "querynode", "--config", "strata.yaml"]
    # A wildcard bind is checked on loopback.
    assert role_address(argv, {}, tmp_path) == "127.0.0.1:19650"


def test_environment_is_the_process_environment() -> None:
    env = {"STRATA_ETCD": "127.0.0.1:2379", "STRATA_COORDINATOR_PORT": "19601", "STRATA_COMMON_HOST": "127.0.0.2"}
    assert role_address(["strata", "coordinator"], env, Path("/")) == "127.0.0.2:19601"
    # Flags still win over the environment, as in the role.
    assert role_address(["strata", "coordinator", "--port", "19602"], env, Path("/")) == "127.0.0.2:19602"


def test_standalone_is_checked_on_its_proxy_port() -> None:
    assert role_address(["strata", "standalone", "--port", "19700"], {}, Path("/")) == "127.0.0.1:19700"
    assert role_address(["strata", "standalone"], {}, Path("/")) == "127.0.0.1:19530"


def test_any_free_port_cannot_be_checked_from_outside() -> None:
    with pytest.raises(ConfigError, match="port is 0"):
        role_address(["strata", "querynode", *ETCD, "--storage", "file:///s"], {}, Path("/"))


def test_other_commands_are_refused() -> None:
    with pytest.raises(ConfigError, match="not a strata role"):
        role_address(["/bin/sh", "-c", "sleep 1"], {}, Path("/"))


def _health(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "launch.cli", "health", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_nothing_listening_exits_1() -> None:
    result = _health(f"127.0.0.1:{free_port()}", "--timeout", "1")
    assert result.returncode == 1
    assert "UNAVAILABLE" in result.stderr or "DEADLINE_EXCEEDED" in result.stderr


def test_a_process_that_runs_no_role_exits_1() -> None:
    with subprocess.Popen(["sleep", "30"]) as proc:
        try:
            result = _health("--pid", str(proc.pid))
        finally:
            proc.kill()
    assert result.returncode == 1
    assert "not a strata role command line" in result.stderr
