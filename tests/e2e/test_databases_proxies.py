"""A database changed through one proxy is seen through another within its catalog watch.

A standalone and a second proxy (``strata proxy`` on the standalone's etcd). The second proxy has
the database's collection and properties cached (a write just before) when the first denies
writing; the second refuses writes well inside its cache's expiry (``ENTRY_TTL_SECONDS``, 5 s),
since it follows the catalog in etcd. Dropping the database is seen there too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pymilvus import MilvusClient, MilvusException

from tests.e2e.twoproxies import standalone_with_second_proxy

WITHIN_SECONDS = 3.0  # under the 5 s expiry: only the catalog watch can explain the change


def _refused_soon(call: Callable[[], object]) -> MilvusException:
    deadline = time.monotonic() + WITHIN_SECONDS
    while True:
        try:
            call()
        except MilvusException as err:
            return err
        if time.monotonic() > deadline:
            raise AssertionError("the second proxy still accepted the call")
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_database_changes_reach_another_proxy(tmp_path: Path) -> None:
    with standalone_with_second_proxy(tmp_path) as (s, uri):
        first, second = MilvusClient(s.uri), MilvusClient(uri)
        first.create_database("shop")
        first.use_database("shop")
        first.create_collection("items", dimension=2, consistency_level="Strong")
        second.use_database("shop")
        second.insert("items", [{"id": 1, "vector": [1.0, 0.0]}])  # cached there now

        first.alter_database_properties("shop", {"database.force.deny.writing": "true"})
        err = _refused_soon(lambda: second.insert("items", [{"id": 2, "vector": [0.0, 1.0]}]))
        assert err.code == 9

        first.drop_collection("items")
        first.use_database("default")
        first.drop_database("shop")
        err = _refused_soon(lambda: second.list_collections())
        assert (err.code, err.message) == (800, "database not found[database=shop]")
        first.close()
        second.close()
