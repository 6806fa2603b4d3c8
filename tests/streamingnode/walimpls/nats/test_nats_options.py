"""Options of the ``nats`` backend, the streaming node's WAL settings, and the nats-server helper."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from common.config import CommonConfig, StreamingNodeConfig
from common.configfile import ConfigError, load
from common.errors import ErrorCode, InvalidArgument, StrataError
from streamingnode.server import wal_options
from streamingnode.walimpls import build_opener
from streamingnode.walimpls.impls.nats.server import (
    ENV_BINARY,
    NatsCluster,
    NatsServer,
    find_nats_server_binary,
    free_port,
)
from tests.streamingnode.walimpls.nats.conftest import MakeOpener

ETCD = {"STRATA_ETCD": "127.0.0.1:2379", "STRATA_STREAMINGNODE_STORAGE": "file:///tmp/strata-test-storage"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"servers": ""}, "at least one server"),
        ({"servers": "http://127.0.0.1:4222"}, "nats://HOST:PORT"),
        ({"servers": "nats://127.0.0.1"}, "nats://HOST:PORT"),
        ({"servers": "127.0.0.1:4222", "replicas": 0}, "replicas must be 1 to 5"),
        ({"servers": "127.0.0.1:4222", "replicas": 6}, "replicas must be 1 to 5"),
        ({"servers": "127.0.0.1:4222", "stream_prefix": "a.b"}, "invalid stream prefix"),
        ({"servers": "127.0.0.1:4222", "append_timeout": 300}, "duplicate window"),
        ({"servers": "127.0.0.1:4222", "ack_timeout": 0}, "ack_timeout must be a positive"),
        ({"servers": "127.0.0.1:4222", "colour": "red"}, "bad options for wal backend 'nats'"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        build_opener("nats", **options)


async def test_unreachable_servers_fail_open_quickly(tmp_path: Path) -> None:
    opener = build_opener("nats", servers=f"nats://127.0.0.1:{free_port()}", connect_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(StrataError, match="cannot connect to nats servers") as info:
        await opener.open("ch", 1)
    assert info.value.code == ErrorCode.UNAVAILABLE
    assert time.monotonic() - started < 5
    await opener.close()


async def test_a_payload_over_the_server_limit_is_refused(make_opener: MakeOpener) -> None:
    wal = await make_opener().open("ch", 1)
    with pytest.raises(InvalidArgument, match="raise max_payload"):
        await wal.append([b"x" * (8 << 20)])
    (mid,) = await wal.append([b"y" * (4 << 20)])  # big, but under the session server's 8 MiB
    assert mid.seq == 1


def test_streaming_node_config_selects_nats_without_a_wal_dir() -> None:
    environ = {
        **ETCD,
        "STRATA_STREAMINGNODE_WAL_BACKEND": "nats",
        "STRATA_STREAMINGNODE_WAL_NATS_SERVERS": "nats://127.0.0.1:4222, nats://127.0.0.1:4223",
        "STRATA_STREAMINGNODE_WAL_NATS_REPLICAS": "3",
    }
    config = load("streamingnode", flags={}, config_file=None, environ=environ)
    assert isinstance(config, StreamingNodeConfig) and config.wal_dir == ""
    assert wal_options(config) == {"servers": "nats://127.0.0.1:4222, nats://127.0.0.1:4223", "replicas": 3}
    opener = build_opener(config.wal_backend, **wal_options(config))
    assert type(opener).__name__ == "NatsWALOpener"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"STRATA_STREAMINGNODE_WAL_BACKEND": "nats"}, "wal_nats_servers is required with wal_backend nats"),
        ({"STRATA_STREAMINGNODE_WAL_BACKEND": "kafka"}, "wal backend must be one of local, nats"),
        (
            {"STRATA_STREAMINGNODE_WAL_BACKEND": "nats", "STRATA_STREAMINGNODE_WAL_NATS_SERVERS": "http://x:1"},
            r"wal_nats_servers \(from env STRATA_STREAMINGNODE_WAL_NATS_SERVERS\): nats server must be",
        ),
        (
            {"STRATA_STREAMINGNODE_WAL_NATS_SERVERS": "h:1", "STRATA_STREAMINGNODE_WAL_NATS_REPLICAS": "7"},
            "nats replicas must be 1 to 5",
        ),
        ({}, r"streamingnode\.wal_dir is required: pass --wal-dir.*\(with wal_backend local\)"),
    ],
)
def test_bad_wal_settings_are_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load("streamingnode", flags={}, config_file=None, environ={**ETCD, **environ})


def test_local_config_options_are_unchanged() -> None:
    config = StreamingNodeConfig(common=CommonConfig(etcd="h:1"), wal_dir="/w", storage="file:///s")
    config.validate()
    assert wal_options(config) == {"root_dir": "/w", "segment_bytes": 64 << 20}


def test_binary_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_BINARY, raising=False)
    found = find_nats_server_binary()
    assert os.access(found, os.X_OK) and Path(found).name == "nats-server"
    fake = tmp_path / "my-nats-server"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv(ENV_BINARY, str(fake))
    with pytest.raises(FileNotFoundError, match="is not executable"):
        find_nats_server_binary()
    fake.chmod(0o755)
    assert find_nats_server_binary() == str(fake)
    assert find_nats_server_binary(found) == found  # an explicit path wins


def _listening(pid: int) -> set[str]:
    conns = psutil.Process(pid).net_connections(kind="inet")
    return {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN}


def test_servers_listen_on_loopback_only(tmp_path: Path, nats_server: NatsServer) -> None:
    assert nats_server.pid is not None and _listening(nats_server.pid) == {"127.0.0.1"}
    cluster = NatsCluster(tmp_path / "cluster", 3)
    try:
        cluster.start()
        for server in cluster.servers:
            assert server.pid is not None
            deadline = time.monotonic() + 5
            while len(psutil.Process(server.pid).net_connections(kind="inet")) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # client and route listeners
            assert _listening(server.pid) == {"127.0.0.1"}
    finally:
        cluster.stop()
    assert not any(s.running() for s in cluster.servers)
