"""Waiting for a loaded collection's indexes before timing searches.

Strata serves a sealed segment as soon as it is loaded and builds its HNSW
index in the background (searching the segment exactly meanwhile), as Milvus
serves unindexed segments with an interim index. Search timings must not
catch that window: ``wait_indexed`` polls ``describe_index`` until every
index is ``Finished`` (a server that reports no state counts as finished).
"""

from __future__ import annotations

import time

from pymilvus import MilvusClient


def wait_indexed(client: MilvusClient, collection: str, timeout: float = 3600.0) -> None:
    deadline = time.monotonic() + timeout
    for name in client.list_indexes(collection):
        while client.describe_index(collection, name).get("state", "Finished") != "Finished":
            if time.monotonic() > deadline:
                raise TimeoutError(f"index {name} of {collection} not built in {timeout:.0f} s")
            time.sleep(0.2)
