"""A sealed segment, index or L0 segment that cannot be loaded never yields a smaller answer.

Each test builds a collection whose rows are all in sealed segments (two shards, L1 rows, an HNSW
index and L0 deletes), restarts the standalone with a failpoint that makes one kind of load fail
(``common/failpoints.py``), and reads meanwhile: every read either fails or counts exactly the
rows that exist. A load that keeps failing makes ``load_collection`` fail with the reason; one that
fails once heals by itself.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure

ROWS = 300
DELETED = list(range(0, 30))
EXPECTED = ROWS - len(DELETED)


def _build(client: MilvusClient) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=8)
    index = client.prepare_index_params()
    index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 32})
    client.create_collection("lf", schema=schema, index_params=index, num_shards=2)
    vecs = np.random.default_rng(7).standard_normal((ROWS, 8)).astype(np.float32)
    client.insert("lf", [{"id": i, "v": vecs[i].tolist()} for i in range(ROWS)])
    client.flush("lf")  # L1 segments (their index is built when they load)
    client.delete("lf", ids=DELETED)
    client.flush("lf")  # an L0 segment per shard


def _count(client: MilvusClient, timeout: float = 5.0) -> int:
    rows = client.query("lf", filter="", output_fields=["count(*)"], consistency_level="Strong", timeout=timeout)
    return int(rows[0]["count(*)"])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stopped standalone's data dir holding the collection, loaded, with every row in sealed segments."""
    data = tmp_path_factory.mktemp("load-failures") / "data"
    s = Standalone(data)
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            _build(client)
            assert _count(client, timeout=60) == EXPECTED  # loaded once: indexes built and saved
            client.close()
    finally:
        s.stop()
    return data


@pytest.fixture()
def built(template: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the template's data dir for one test."""
    data = tmp_path / "data"
    shutil.copytree(template, data)
    yield data


def _restarted(data_dir: Path, failpoints: str) -> Standalone:
    s = Standalone(data_dir, env={"STRATA_FAILPOINTS": failpoints})
    s.start()
    return s


def _reads_never_short(client: MilvusClient, seconds: float) -> tuple[int, int]:
    """Read for ``seconds``: each read fails or counts every row. Returns (answers, failures)."""
    answers = failures = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got = _count(client)
        except MilvusException:
            failures += 1
        else:
            assert got == EXPECTED, f"a read answered {got} rows of {EXPECTED}"
            answers += 1
        time.sleep(0.2)
    return answers, failures


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "point",
    ["worker.load_segment", "worker.load_index", "delegator.read_keys", "delegator.load_l0"],
)
def test_a_load_that_keeps_failing_fails_reads_and_the_load(built: Path, point: str) -> None:
    s = _restarted(built, f"{point}=error")
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            answers, failures = _reads_never_short(client, 4.0)
            assert answers == 0 and failures > 0
            # load_collection polls the loading progress, which reports the failure once it persists.
            with pytest.raises(MilvusException) as err:
                client.load_collection("lf", timeout=60)
            assert err.value.code == 604, err.value
            assert f"failpoint {point}: injected error" in err.value.message
            # Reads now fail at once with the reason, rather than after their timeout.
            with pytest.raises(MilvusException) as read_err:
                _count(client, timeout=30)
            assert f"failpoint {point}: injected error" in read_err.value.message
            client.close()
    finally:
        s.stop()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("point", ["worker.load_segment", "worker.load_index", "delegator.read_keys"])
def test_a_load_that_fails_once_heals_and_no_read_is_short(built: Path, point: str) -> None:
    s = _restarted(built, f"{point}@1=error")
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            _reads_never_short(client, 3.0)
            client.load_collection("lf", timeout=60)
            assert _count(client, timeout=30) == EXPECTED
            node_log = (built / "logs" / "standalone-node.log").read_text()
            assert "failpoint error" in node_log  # the failure did happen
            client.close()
    finally:
        s.stop()
