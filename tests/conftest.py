"""Session fixtures shared by the suites: a real etcd and a real standalone cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from common.etcd.process import EtcdProcess
from tests.harness import Standalone
from tests.s3server import S3Server, run_s3_server

# Every role process a test starts serves its operations port on a free port, not Milvus's 9091:
# tests run side by side (xdist, several checkouts) and a fixed port would collide.
for _role in ("coordinator", "streamingnode", "querynode", "proxy"):
    os.environ.setdefault(f"STRATA_{_role.upper()}_METRICS_PORT", "0")
# Likewise every proxy's RESTful API, not the fixed 19531; a harness may still name one.
os.environ.setdefault("STRATA_PROXY_HTTP_PORT", "0")


@pytest.fixture(scope="session")
def etcd_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc = EtcdProcess(tmp_path_factory.mktemp("etcd") / "data")
    proc.start()
    try:
        yield proc.endpoint
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-API server on loopback (moto), started once, only when a test needs it."""
    yield from run_s3_server(tmp_path_factory)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    s = Standalone(tmp_path_factory.mktemp("standalone") / "data")
    s.start()
    try:
        yield s
    finally:
        try:
            s.stop()
        finally:
            s.kill()


@pytest.fixture()
def milvus(standalone: Standalone) -> Iterator[object]:
    from pymilvus import MilvusClient

    client = MilvusClient(standalone.uri)
    try:
        yield client
    finally:
        client.close()
