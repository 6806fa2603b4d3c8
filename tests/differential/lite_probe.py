"""What milvus-lite accepts of each vector type and feature: ``python -m tests.differential.lite_probe [URI]``.

For each case (a vector type, index kind and metric, nullable or not) it
creates a collection, inserts ten rows (every third vector null where the
field is nullable), upserts two, queries the vectors back, searches by a
vector, by primary keys, with a radius and (sparse) with ``drop_ratio_search``, and prints each call's answer or
error. Without a URI it starts its own milvus-lite server (``peer.py``); with
one it probes that server (a Strata standalone, to set the two side by side).
The table in README.md "milvus-lite gaps" comes from its output.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from pymilvus import DataType, MilvusClient

from tests.differential.peer import run_milvus_lite

DIM = 8
CASES: tuple[tuple[DataType, str, str, bool], ...] = (
    (DataType.FLOAT_VECTOR, "FLAT", "L2", False),
    (DataType.FLOAT_VECTOR, "FLAT", "L2", True),
    (DataType.FLOAT_VECTOR, "HNSW", "L2", False),
    (DataType.FLOAT_VECTOR, "IVF_FLAT", "L2", False),
    (DataType.FLOAT16_VECTOR, "FLAT", "L2", False),
    (DataType.BFLOAT16_VECTOR, "FLAT", "L2", False),
    (DataType.INT8_VECTOR, "HNSW", "L2", False),
    (DataType.BINARY_VECTOR, "BIN_FLAT", "HAMMING", False),
    (DataType.SPARSE_FLOAT_VECTOR, "SPARSE_INVERTED_INDEX", "IP", False),
    (DataType.SPARSE_FLOAT_VECTOR, "SPARSE_INVERTED_INDEX", "IP", True),
    (DataType.SPARSE_FLOAT_VECTOR, "SPARSE_WAND", "IP", False),
    (DataType.SPARSE_FLOAT_VECTOR, "AUTOINDEX", "IP", False),
)


def vector(dtype: DataType, rng: np.random.Generator) -> Any:
    match dtype:
        case DataType.FLOAT16_VECTOR:
            return rng.standard_normal(DIM).astype(np.float16)
        case DataType.BFLOAT16_VECTOR:
            return rng.standard_normal(DIM).astype(ml_dtypes.bfloat16)
        case DataType.INT8_VECTOR:
            return rng.integers(-128, 128, DIM).astype(np.int8)
        case DataType.BINARY_VECTOR:
            return rng.integers(0, 256, DIM // 8).astype(np.uint8).tobytes()
        case DataType.SPARSE_FLOAT_VECTOR:
            return {int(k): float(rng.random()) + 0.1 for k in rng.choice(50, 3, replace=False)}
        case _:
            return rng.standard_normal(DIM).astype(np.float32).tolist()


def attempt(call: Callable[[], Any]) -> str:
    try:
        return repr(call())[:300]
    except Exception as err:  # the error is the answer being probed
        return f"{type(err).__name__}: {err}"


def probe(client: MilvusClient, dtype: DataType, index: str, metric: str, nullable: bool) -> dict[str, str]:
    name = f"probe_{dtype.name}_{index}_{metric}_{int(nullable)}".lower()
    client.drop_collection(name)
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    params: dict[str, Any] = {} if dtype == DataType.SPARSE_FLOAT_VECTOR else {"dim": DIM}
    schema.add_field("v", dtype, nullable=nullable, **params)
    indexes = MilvusClient.prepare_index_params()
    indexes.add_index("v", index_type=index, metric_type=metric)
    out = {"create": attempt(lambda: client.create_collection(name, schema=schema, index_params=indexes,
                                                             consistency_level="Strong"))}  # fmt: skip
    if out["create"] != "None":
        return out
    rng = np.random.default_rng(0)
    rows = [{"id": k, "v": None if nullable and k % 3 == 0 else vector(dtype, rng)} for k in range(10)]
    search = {"anns_field": "v", "limit": 3, "search_params": {"metric_type": metric}}
    out["insert"] = attempt(lambda: client.insert(name, rows))
    out["upsert"] = attempt(lambda: client.upsert(name, rows[:2]))
    out["query"] = attempt(lambda: client.query(name, filter="id < 4", output_fields=["v"]))
    out["search"] = attempt(lambda: client.search(name, data=[rows[1]["v"]], **search))
    out["search by ids"] = attempt(lambda: client.search(name, ids=[1, 2], **search))
    radius = {"params": {"radius": 100.0 if metric == "L2" else 0.1}}
    out["range search"] = attempt(lambda: client.search(
        name, data=[rows[1]["v"]], anns_field="v", limit=3, search_params={"metric_type": metric, **radius}))  # fmt: skip
    if dtype == DataType.SPARSE_FLOAT_VECTOR:
        drop = {"metric_type": metric, "params": {"drop_ratio_search": 0.5}}
        out["drop_ratio_search"] = attempt(lambda: client.search(name, data=[rows[1]["v"] or {1: 1.0}],
                                                                 anns_field="v", limit=3, search_params=drop))  # fmt: skip
    client.drop_collection(name)
    return out


def report(uri: str) -> None:
    client = MilvusClient(uri)
    try:
        for case in CASES:
            dtype, index, metric, nullable = case
            print(f"== {dtype.name} {index} {metric}{' nullable' if nullable else ''}")
            for call, answer in probe(client, *case).items():
                print(f"   {call}: {answer}")
    finally:
        client.close()


def main() -> None:
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)  # it logs every refused call
    if len(sys.argv) > 1:
        report(sys.argv[1])
        return
    with run_milvus_lite(Path(tempfile.mkdtemp(prefix="lite-probe-")) / "data") as peer:
        report(peer.uri)


if __name__ == "__main__":
    main()
