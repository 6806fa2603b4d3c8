"""The ``strata`` command exits with status 2 on a configuration error, before starting anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.cli import _flag_values, _parser

REPO = Path(__file__).resolve().parents[3]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    return subprocess.run(
        [sys.executable, "-m", "launch.cli", *args],
        cwd=REPO,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bad_config_file_exits_2_naming_key_and_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("streamingnode:\n  tick_interval_seconds: soon\n")
    result = _run("streamingnode", "--config", str(bad), "--etcd", "127.0.0.1:1", "--wal-dir", str(tmp_path / "w"))
    assert result.returncode == 2, result.stderr
    assert "configuration error" in result.stderr
    assert "streamingnode.tick_interval_seconds" in result.stderr
    assert str(bad) in result.stderr
    assert not (tmp_path / "w").exists()


def test_unknown_key_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("streamingnode:\n  waldir: /w\n")
    result = _run("streamingnode", "--config", str(bad), "--etcd", "127.0.0.1:1")
    assert result.returncode == 2
    assert "unknown key 'streamingnode.waldir'" in result.stderr


def test_missing_etcd_exits_2() -> None:
    result = _run("querynode")
    assert result.returncode == 2
    assert "common.etcd is required" in result.stderr


def test_bad_storage_flag_exits_2(tmp_path: Path) -> None:
    result = _run("querynode", "--etcd", "127.0.0.1:1", "--storage", "http://example.com/b")
    assert result.returncode == 2
    assert "querynode.storage (from flag --storage)" in result.stderr


def test_config_file_from_environment_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("proxy: {port: -1}\n")
    result = _run("proxy", "--etcd", "127.0.0.1:1", env={"STRATA_CONFIG": str(bad)})
    assert result.returncode == 2
    assert "proxy.port" in result.stderr


def test_standalone_checks_the_file_before_starting_etcd(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("coordinator: {pchannels: many}\n")
    result = _run("standalone", "--data-dir", str(tmp_path / "data"), "--config", str(bad))
    assert result.returncode == 2
    assert "coordinator.pchannels" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["streamingnode", "--etcd", "e:1", "--wal-dir", "/w", "--tick-interval", "0.1", "--storage", "s3://b/p"],
            {
                "common.etcd": "e:1",
                "streamingnode.wal_dir": "/w",
                "streamingnode.tick_interval_seconds": "0.1",
                "streamingnode.storage": "s3://b/p",
            },
        ),
        (
            ["coordinator", "--pchannels", "8", "--cluster-name", "c"],
            {"coordinator.pchannels": "8", "coordinator.cluster_name": "c"},
        ),
        (["proxy", "--port", "1", "--etcd-root", "r"], {"proxy.port": "1", "common.etcd_root": "r"}),
        (["querynode"], {}),
    ],
)
def test_flags_map_to_keys_only_when_given(argv: list[str], expected: dict[str, str]) -> None:
    args = _parser().parse_args(argv)
    values = _flag_values(argv[0], args)
    assert {k: v.raw for k, v in values.items()} == expected
    assert all(v.source.startswith("flag --") for v in values.values())


def test_roles_only_accept_their_own_flags() -> None:
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["proxy", "--wal-dir", "/w"])
    assert exc.value.code == 2


def test_standalone_node_gives_each_role_its_own_keys() -> None:
    argv = ["standalone-node", "--etcd", "e:1", "--wal-dir", "/w", "--storage", "s3://b/p", "--proxy-port", "5"]
    args = _parser().parse_args(argv)
    assert {k: v.raw for k, v in _flag_values("streamingnode", args).items()} == {
        "common.etcd": "e:1",
        "streamingnode.wal_dir": "/w",
        "streamingnode.storage": "s3://b/p",
    }
    assert {k: v.raw for k, v in _flag_values("querynode", args).items()} == {
        "common.etcd": "e:1",
        "querynode.storage": "s3://b/p",
        "querynode.proxy_port": "5",
    }
    with pytest.raises(SystemExit):  # each role takes a free port: one --port could not serve both
        _parser().parse_args(["standalone-node", "--port", "1"])


def test_standalone_node_without_a_proxy_port_exits_2(tmp_path: Path) -> None:
    result = _run(
        "standalone-node", "--etcd", "127.0.0.1:1", "--wal-dir", str(tmp_path / "w"), "--storage", tmp_path.as_uri()
    )
    assert result.returncode == 2, result.stderr
    assert "querynode.proxy_port is required" in result.stderr
    assert not (tmp_path / "w").exists()


def test_standalone_node_names_a_bad_key_of_either_role(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("querynode: {proxy_port: -3}\n")
    result = _run(
        "standalone-node", "--config", str(bad), "--etcd", "127.0.0.1:1", "--wal-dir", str(tmp_path / "w"),
        "--storage", tmp_path.as_uri(),
    )
    assert result.returncode == 2
    assert "querynode.proxy_port" in result.stderr and str(bad) in result.stderr
