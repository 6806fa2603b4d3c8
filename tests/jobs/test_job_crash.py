"""kill -9 of the coordinator at each step of a compaction's and an import's commit: never both, never neither.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator, a
streaming node, a query node and a proxy; the coordinator runs its Spark jobs
with ``spark-submit`` (``local[2]``). The coordinator is started with
``STRATA_FAILPOINTS`` armed at one step (``common/failpoints.py``) and kills
itself there; it is started again without it. Steps, in one cluster:

1. ``compaction.after_outputs``: the outputs are written and recorded hidden,
   the commit is not: after the restart the plan is FAILED, its outputs
   DROPPED, and readers still see exactly the inputs;
2. ``compaction.after_commit``: the one-transaction commit is done: after the
   restart the outputs are visible and the inputs gone. Rows deleted *while*
   this compaction ran (after its snapshot) stay deleted after the switch, and
   for a query node started afresh;
(An import's restart, which runs the job again with the same timestamp and
ids, is covered in-process by ``test_coordinator_jobs.py``.)

After each step: a Strong query returns every live id exactly once and no
deleted one, ``count(*)`` agrees, and ``list_persistent_segments`` shows
either the inputs or the outputs.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from pymilvus import DataType, MilvusClient

from common.etcd.process import EtcdProcess
from common.segment import SegmentMeta, SegmentState
from coordinator.data.jobs import JobRecord, JobState
from tests.cluster.harness import Role, quiet_pymilvus, read_prefix, retry, vectors
from tests.harness import free_port

DIM = 8
ROOT = "jobcrash"
ROUNDS = 3
PER_ROUND = 2000


def _segments(endpoint: str) -> list[SegmentMeta]:
    return [SegmentMeta.from_json(v) for v in read_prefix(endpoint, ROOT, "datacoord/segment/").values()]


def _jobs(endpoint: str) -> list[JobRecord]:
    return [JobRecord.from_json(v) for v in read_prefix(endpoint, ROOT, "datacoord/job/").values()]


def _ids(client: MilvusClient, name: str) -> list[int]:
    rows = client.query(name, filter="id >= 0", output_fields=["id"], limit=16384, consistency_level="Strong",
                        timeout=30)
    return [int(r["id"]) for r in rows]


def _check(client: MilvusClient, name: str, expected: list[int], timeout: float = 90) -> None:
    """Reads converge on exactly ``expected`` (a switch of segments takes a checker round or two)."""
    deadline = time.monotonic() + timeout
    while True:
        with quiet_pymilvus():
            got = retry("query", lambda: _ids(client, name), timeout=60)
        if sorted(got) == expected and len(got) == len(set(got)):
            break
        assert time.monotonic() < deadline, (len(got), len(set(got)), len(expected))
        time.sleep(0.5)
    count = client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
    assert count == len(expected)


def _live(client: MilvusClient) -> set[int]:
    """The L1 segments readers load now."""
    with quiet_pymilvus():
        return retry("segments", lambda: {s.segment_id for s in client.list_persistent_segments("c") if s.level == 2},
                     timeout=60)


def _wait_compaction(client: MilvusClient, job: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with quiet_pymilvus():
            state = retry("compaction state", lambda: client.get_compaction_state(job), timeout=60)
        if state == "Completed":
            return
        assert time.monotonic() < deadline, f"compaction {job} still {state}"
        time.sleep(0.5)


class Cluster:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.etcd = EtcdProcess(tmp_path / "etcd")
        self.roles: list[Role] = []
        self.env = {
            "STRATA_COMMON_SESSION_TTL_SECONDS": "5",
            "STRATA_JOBS_SPARK_MASTER": "local[2]",
            "STRATA_JOBS_COMPACTION_INTERVAL_SECONDS": "0",
            "STRATA_JOBS_SHUFFLE_PARTITIONS": "2",
            "STRATA_JOBS_WORK_DIR": str(tmp_path / "jobs"),
        }
        self.port = free_port()
        self.coordinators = 0

    def start(self) -> MilvusClient:
        self.etcd.start()
        self.common = ["--etcd", self.etcd.endpoint, "--etcd-root", ROOT]
        self.storage = ["--storage", (self.tmp / "storage").as_uri()]
        self.coordinator()
        self.add("streamingnode", ["streamingnode", *self.common, *self.storage, "--wal-dir", str(self.tmp / "wal")])
        self.add("querynode", ["querynode", *self.common, *self.storage])
        self.add("proxy", ["proxy", *self.common, "--port", str(self.port)])
        for role in self.roles:
            role.wait_for_log("role ready", 60)
        return MilvusClient(f"http://127.0.0.1:{self.port}", timeout=30)

    def coordinator(self, failpoint: str = "") -> Role:
        """Start a coordinator (the previous one must be gone), armed to kill itself at ``failpoint``."""
        self.coordinators += 1
        env = {"STRATA_FAILPOINTS": f"{failpoint}=kill"} if failpoint else {}
        args = ["coordinator", *self.common, *self.storage, "--port", "0", "--pchannels", "2"]
        self.current = self.add(f"coordinator-{self.coordinators}", args, env)
        return self.current

    def armed(self, failpoint: str) -> Role:
        """Replace the running coordinator by one armed at ``failpoint``."""
        self.current.kill()
        role = self.coordinator(failpoint)
        role.wait_for_log("role ready", 60)
        return role

    def add(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Role:
        role = Role(name, args, self.logs, {**self.env, **(env or {})})
        self.roles.append(role)
        return role

    @staticmethod
    def killed(crashing: Role) -> None:
        """Wait until the armed coordinator has killed itself at its failpoint."""
        crashing.proc.wait(240)
        assert crashing.proc.returncode == -signal.SIGKILL, crashing.log()[-3000:]
        assert "failpoint kill" in crashing.log()

    def restart(self) -> None:
        self.coordinator().wait_for_log("role ready", 60)

    def stop(self) -> None:
        for role in reversed(self.roles):
            role.kill()
        self.etcd.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_coordinator_killed_at_each_commit_step_leaves_inputs_or_outputs_visible(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    try:
        client = cluster.start()
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
        index = client.prepare_index_params()
        index.add_index("v", index_type="FLAT", metric_type="L2")
        with quiet_pymilvus():
            retry("create", lambda: client.create_collection("c", schema=schema, index_params=index, num_shards=1),
                  timeout=60)
        for r in range(ROUNDS):
            client.insert("c", vectors(range(r * PER_ROUND, (r + 1) * PER_ROUND), DIM), timeout=30)
            client.flush("c", timeout=60)
        deleted = set(range(0, ROUNDS * PER_ROUND, 3))
        client.delete("c", ids=sorted(deleted), timeout=30)
        client.flush("c", timeout=60)
        expected = sorted(set(range(ROUNDS * PER_ROUND)) - deleted)
        _check(client, "c", expected)
        inputs = _live(client)
        assert len(inputs) == ROUNDS

        # 1. Killed after the outputs are recorded hidden, before the commit: after the restart the plan
        #    fails and its outputs go; the request goes on with a new plan, which commits.
        crashing = cluster.armed("compaction.after_outputs")
        with quiet_pymilvus():
            job = retry("compact", lambda: client.compact("c"), timeout=60)
        cluster.killed(crashing)
        hidden = {s.segment_id for s in _segments(cluster.etcd.endpoint) if s.job_id and s.state == SegmentState.FLUSHED}
        assert hidden, "the outputs were not recorded before the kill"
        cluster.restart()
        _check(client, "c", expected)
        _wait_compaction(client, job)
        _check(client, "c", expected)
        by_id = {s.segment_id: s for s in _segments(cluster.etcd.endpoint)}
        assert all(by_id[sid].state == SegmentState.DROPPED for sid in hidden)
        failed = [j for j in _jobs(cluster.etcd.endpoint) if j.state == JobState.FAILED]
        assert [j.error for j in failed] == ["coordinator restarted"]
        now = _live(client)
        assert len(now) == 1 and not now & (inputs | hidden), (now, inputs, hidden)

        # 2. Killed right after the commit; rows deleted while the job ran must stay deleted.
        more = range(ROUNDS * PER_ROUND, (ROUNDS + 1) * PER_ROUND)
        client.insert("c", vectors(more, DIM), timeout=30)
        client.flush("c", timeout=60)
        expected = sorted({*expected, *more})
        inputs = _live(client)
        crashing = cluster.armed("compaction.after_commit")
        with quiet_pymilvus():
            job = retry("compact", lambda: client.compact("c"), timeout=60)
        crashing.wait_for_log("spark job submitted", 60)
        late = set(range(1, (ROUNDS + 1) * PER_ROUND, 3))
        client.delete("c", ids=sorted(late), timeout=30)  # after the job's snapshot: not in its files
        deleted_at = time.time()
        cluster.killed(crashing)
        [committed] = [j for j in _jobs(cluster.etcd.endpoint) if j.state == JobState.COMMITTED and j.request_id == job]
        assert committed.finished_at > deleted_at, "the deletes did not come while the job ran"
        cluster.restart()
        expected = sorted(set(expected) - late)
        _check(client, "c", expected)
        _wait_compaction(client, job)
        now = _live(client)
        assert not now & inputs, (now, inputs)
        _check(client, "c", expected)
        # A query node started afresh loads the outputs, the later deletes from the WAL, and agrees.
        qn = next(r for r in cluster.roles if r.name == "querynode")
        qn.kill()
        cluster.add("querynode-2", ["querynode", *cluster.common, *cluster.storage]).wait_for_log("role ready", 60)
        _check(client, "c", expected)

        client.close()
    except BaseException:
        for role in cluster.roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        raise
    finally:
        cluster.stop()
