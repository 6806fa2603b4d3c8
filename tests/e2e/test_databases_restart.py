"""Databases survive a restart of the whole standalone: the records and their properties, the
collections of each (the same name in two databases stays two collections) and their aliases."""

from __future__ import annotations

from pathlib import Path

import pytest
from pymilvus import MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure


def _ids(client: MilvusClient, name: str) -> list[int]:
    rows = client.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong")
    return sorted(r["id"] for r in rows)


@pytest.mark.timeout(300)
def test_databases_survive_a_restart(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        client = MilvusClient(s.uri)
        client.create_database("sales", properties={"database.max.collections": "1", "owner": "ann"})
        client.create_collection("items", dimension=2, consistency_level="Strong")
        client.insert("items", [{"id": 1, "vector": [1.0, 0.0]}])
        client.use_database("sales")
        client.create_collection("items", dimension=2, consistency_level="Strong")
        client.insert("items", [{"id": 2, "vector": [0.0, 1.0]}, {"id": 3, "vector": [1.0, 1.0]}])
        client.create_alias("items", "current")
        sales_id = client.describe_collection("items")["collection_id"]
        client.close()
    finally:
        assert s.stop() == 0

    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            assert client.list_databases() == ["default", "sales"]
            assert client.describe_database("sales") == {
                "name": "sales",
                "database.max.collections": "1",
                "owner": "ann",
            }
            client.load_collection("items", timeout=120)
            assert _ids(client, "items") == [1]
            client.use_database("sales")
            client.load_collection("items", timeout=120)
            assert client.list_collections() == ["items"]
            assert client.describe_collection("items")["collection_id"] == sales_id
            assert _ids(client, "items") == [2, 3]
            assert _ids(client, "current") == [2, 3]
            with pytest.raises(MilvusException) as err:
                client.create_collection("more", dimension=2)
            assert err.value.code == 102  # the property still holds
            with pytest.raises(MilvusException) as err:
                client.drop_database("sales")
            assert err.value.code == 65535  # still holds its collection
            client.close()
    finally:
        assert s.stop() == 0
