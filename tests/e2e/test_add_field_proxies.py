"""A field added through one proxy is usable through another at once.

A standalone and a second proxy (``strata proxy`` on the standalone's etcd). The second proxy has
the collection cached (a read just before) when the first adds a field; reads and writes through
the second use the field right away, well inside its cache's expiry: it follows the catalog in etcd
and forgets the collection when it changes, as Milvus' root coordinator expires every proxy's cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.twoproxies import standalone_with_second_proxy

NAME = "two_proxies"


@pytest.mark.timeout(300)
def test_a_field_added_through_one_proxy_is_known_to_another_at_once(tmp_path: Path) -> None:
    with standalone_with_second_proxy(tmp_path) as (s, uri):
        first, second = MilvusClient(s.uri), MilvusClient(uri)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
        index = first.prepare_index_params()
        index.add_index("v", index_type="FLAT", metric_type="L2")
        first.create_collection(NAME, schema=schema, index_params=index)
        first.insert(NAME, [{"id": i, "v": [float(i), 0.0]} for i in range(5)])
        assert len(second.query(NAME, filter="id >= 0", consistency_level="Strong")) == 5  # cached there

        first.add_collection_field(NAME, "n", DataType.INT64, nullable=True)
        # Nothing through the second proxy describes the collection first (a client's schema
        # refresh would): its cached entry must already be gone.
        rows = second.query(NAME, filter="n is null", output_fields=["n"], consistency_level="Strong")
        assert {r["id"]: r["n"] for r in rows} == {i: None for i in range(5)}
        first.insert(NAME, [{"id": 10, "v": [1.0, 1.0], "n": 100}])
        rows = second.query(NAME, filter="n == 100", output_fields=["n"], consistency_level="Strong")
        assert {r["id"]: r["n"] for r in rows} == {10: 100}
        first.close()
        second.close()
