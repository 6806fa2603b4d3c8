"""The console's ``jobs`` view: running jobs first (oldest first), then the most recent finished ones."""

from __future__ import annotations

from typing import Any

from coordinator import console as console_module
from coordinator.console import CoordinatorConsole
from coordinator.data.jobs import JobKind, JobRecord, JobState


class FakeData:
    def __init__(self, jobs: list[JobRecord]) -> None:
        self._jobs = jobs

    def jobs(self) -> list[JobRecord]:
        return sorted(self._jobs, key=lambda j: j.job_id)


class FakeCatalog:
    async def list_collections(self) -> list[Any]:
        class Meta:
            collection_id = 7
            name = "docs"

        return [Meta()]


def _console(jobs: list[JobRecord]) -> CoordinatorConsole:
    unused: Any = None  # the jobs view reads only the catalog and the data coordinator
    catalog: Any = FakeCatalog()
    data: Any = FakeData(jobs)
    return CoordinatorConsole(store=unused, catalog=catalog, databases=unused, balancer=unused, data=data, query=unused)


async def test_running_first_then_the_most_recent_finished(monkeypatch: Any) -> None:
    monkeypatch.setattr(console_module, "RECENT_JOBS", 2)
    jobs = [
        JobRecord(job_id=1, kind=JobKind.MIX, collection_id=7, state=JobState.COMMITTED, created_at=10, finished_at=12,
                  inputs=(1, 2, 3), outputs=(4,)),
        JobRecord(job_id=2, kind=JobKind.IMPORT, collection_id=7, state=JobState.FAILED, created_at=11, finished_at=30,
                  error="file not found: a.parquet"),
        JobRecord(job_id=3, kind=JobKind.L0, collection_id=7, state=JobState.COMMITTED, created_at=13, finished_at=20),
        JobRecord(job_id=4, kind=JobKind.IMPORT, collection_id=7, state=JobState.RUNNING, created_at=25, rows=500),
        JobRecord(job_id=5, kind=JobKind.MIX, collection_id=99, state=JobState.PENDING, created_at=21),
    ]
    view = await _console(jobs).view("jobs")
    assert [j["job_id"] for j in view["jobs"]] == [5, 4, 2, 3]  # job 1 is the oldest finished: left out
    assert (view["running"], view["finished"]) == (2, 3)
    by_id = {j["job_id"]: j for j in view["jobs"]}
    assert by_id[4]["collection"] == "docs" and by_id[4]["kind"] == "IMPORT" and by_id[4]["rows"] == 500
    assert by_id[5]["collection"] == ""  # a collection dropped since
    assert by_id[2]["state"] == "FAILED" and by_id[2]["error"] == "file not found: a.parquet"
    assert by_id[2]["seconds"] == 19
    assert by_id[4]["seconds"] is not None and by_id[4]["seconds"] > 0  # running: counted up to now
