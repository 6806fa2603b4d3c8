"""A grouping search returns every group it asks for, even a group whose rows all rank far below the others'.

Milvus's segment search walks its index until it has ``limit`` groups; Strata's proxy fetches more hits per
shard while a query has fewer groups than asked and a shard may hold more (proxy/grouped_fetch.py).
"""

from __future__ import annotations

import numpy as np
from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name


def test_a_group_ranked_far_below_the_others_is_still_returned(milvus: MilvusClient) -> None:
    name = unique_name("groupfar")
    rng = np.random.default_rng(3)
    near = rng.standard_normal((600, 4)).astype(np.float32) * 0.1  # tags 0 and 1, around the query
    far = 50.0 + rng.standard_normal((300, 4)).astype(np.float32)  # tag 2, far away
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    try:
        rows = [{"id": i, "tag": i % 2, "v": near[i].tolist()} for i in range(600)]
        rows += [{"id": 600 + i, "tag": 2, "v": far[i].tolist()} for i in range(300)]
        milvus.insert(name, rows[:450])
        milvus.flush(name)
        milvus.insert(name, rows[450:])  # growing
        hits = milvus.search(name, data=[[0.0] * 4], anns_field="v", limit=3, group_by_field="tag",
                             output_fields=["tag"], consistency_level="Strong")[0]
        assert sorted(h["entity"]["tag"] for h in hits) == [0, 1, 2]
        best_far = min(float(np.sum(far[i] ** 2)) for i in range(300))
        far_hit = next(h for h in hits if h["entity"]["tag"] == 2)
        assert abs(far_hit["distance"] - best_far) <= 1e-3 * best_far  # the group's best row, exactly
        hits = milvus.search(name, data=[[0.0] * 4], anns_field="v", limit=2, group_by_field="tag", group_size=3,
                             offset=1, output_fields=["tag"], consistency_level="Strong")[0]
        assert [h["entity"]["tag"] for h in hits].count(2) == 3 and len(hits) == 6
    finally:
        milvus.drop_collection(name)
