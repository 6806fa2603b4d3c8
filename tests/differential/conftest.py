"""The milvus-lite peer, started once per session beside the session's Strata standalone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.differential.peer import MilvusLitePeer, run_milvus_lite


@pytest.fixture(scope="session")
def milvus_lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusLitePeer]:
    with run_milvus_lite(tmp_path_factory.mktemp("milvus-lite") / "data") as peer:
        yield peer
