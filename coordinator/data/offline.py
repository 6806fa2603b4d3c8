"""The coordinator's offline jobs, built and run together: compaction and bulk import on one Spark runner.

Both share one job slot (a Spark job at a time: a standalone machine has few
cores) and one ``SparkRunner``. Built only when the coordinator has object
storage; ``start`` after the data and query coordinators, ``stop`` before them.
``loading`` tells whether loaded collections are still loading: compaction
jobs wait for that (``CompactionManager``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from common.config import JobsConfig
from common.etcd.metastore import MetaStore
from coordinator.catalog import Catalog
from coordinator.data.compaction import CompactionManager, JobRunner
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.importer import ImportManager
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle

if TYPE_CHECKING:
    from jobs.runner import SparkRunner


class OfflineJobs:
    def __init__(
        self,
        store: MetaStore,
        data: DataCoordinator,
        catalog: Catalog,
        ids: IDAllocator,
        tso: TimestampOracle,
        *,
        storage_uri: str,
        config: JobsConfig,
        runner: JobRunner | None = None,
        loading: Callable[[], bool] = lambda: False,
    ) -> None:
        self._spark: SparkRunner | None = None
        if runner is None:
            from jobs.runner import SparkRunner

            runner = self._spark = SparkRunner(config)
        slot = asyncio.Semaphore(1)
        self.imports = ImportManager(
            data, catalog, ids, tso, runner, storage_uri=storage_uri, config=config, slot=slot
        )
        self.compaction = CompactionManager(
            store, data, catalog, ids, tso, runner, storage_uri=storage_uri, config=config, slot=slot,
            import_floor=self.imports.floor, loading=loading,
        )

    async def start(self) -> None:
        if self._spark is not None:  # work directories of jobs killed with the previous coordinator
            await self._spark.sweep()
        await self.imports.start()
        await self.compaction.start()

    async def stop(self) -> None:
        await self.compaction.stop()
        await self.imports.stop()
