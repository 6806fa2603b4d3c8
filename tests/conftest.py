"""Session fixtures shared by the suites: a real etcd and a real standalone cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from common import failpoints
from common.etcd.process import EtcdProcess
from common.ports import ENV_OWNER, ENV_RANGE, port_window
from tests.harness import Standalone
from tests.s3server import S3Server, run_s3_server

# Every role process a test starts serves its operations port on a free port, not Milvus's 9091:
# tests run side by side (xdist, several checkouts) and a fixed port would collide.
for _role in ("coordinator", "streamingnode", "querynode", "proxy"):
    os.environ.setdefault(f"STRATA_{_role.upper()}_METRICS_PORT", "0")
# Likewise every proxy's RESTful API, not the fixed 19531; a harness may still name one.
os.environ.setdefault("STRATA_PROXY_HTTP_PORT", "0")


def _worker_port_range() -> str:
    """This xdist worker's own slice of the port window, so two workers never pick the same port."""
    low, high = port_window()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    count = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    size = (high - low + 1) // count
    start = low + (index % count) * size
    return f"{start}-{start + size - 1}"


if ENV_RANGE not in os.environ:
    os.environ[ENV_RANGE] = _worker_port_range()
    os.environ[ENV_OWNER] = str(os.getpid())


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
def disarmed() -> Iterator[None]:
    """No failpoint armed (``common/failpoints.py``) before the test, nor after it, whatever it armed."""
    failpoints.arm("")
    yield
    failpoints.arm("")


@pytest.fixture()
def milvus(standalone: Standalone) -> Iterator[object]:
    from pymilvus import MilvusClient

    client = MilvusClient(standalone.uri)
    try:
        yield client
    finally:
        client.close()


# Files that take minutes (Spark jobs, crash loops, long property runs), slowest first, measured with
# `pytest --durations` on the whole suite. xdist (`--dist loadfile`) hands files out in collection
# order: started last, one of them would leave a worker alone on it for minutes at the end of a run.
SLOW_FILES = (
    "tests/jobs/test_job_crash.py",
    "tests/e2e/test_partition_deletes.py",
    "tests/e2e/test_full_text_search.py",
    "tests/jobs/test_coordinator_jobs.py",
    "tests/e2e/test_add_field.py",
    "tests/jobs/test_runner.py",
    "tests/e2e/test_rest_import.py",
    "tests/e2e/test_text_match_index.py",
    "tests/jobs/test_compaction_job.py",
    "tests/e2e/test_bulk_import.py",
    "tests/chaos/test_chaos.py",
    "tests/e2e/test_state_machine.py",
    "tests/e2e/test_nullable_vectors.py",
    "tests/e2e/test_compaction_vector_types.py",
    "tests/e2e/test_narrow_vectors.py",
    "tests/e2e/test_compaction.py",
    "tests/e2e/test_load_failures.py",
    "tests/cluster/test_flush_crash.py",
    "tests/e2e/test_binary_vectors.py",
    "tests/segcore/index/test_faiss_recall.py",
    "tests/e2e/test_scalar_indexes.py",
    "tests/e2e/test_index_families.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of ``SLOW_FILES`` first, in that order; the others keep theirs (the sort is stable)."""
    rank = {path: i for i, path in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
