"""Storage fixtures: a store per backend, ``file`` (a directory under ``tmp_path``) and ``s3``.

``s3`` is a fresh prefix in a bucket of the session's moto server (``tests/s3server.py``),
reached over real HTTP with the ``AWS_*`` environment a deployment would set.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from common.storage import ObjectStore
from tests.s3server import S3Server


@pytest.fixture()
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The ``AWS_*`` environment pointing at the moto server, for this test only."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    return s3_server


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """An empty store on each backend."""
    if request.param == "file":
        return ObjectStore.from_uri(f"file://{tmp_path}/store")
    server: S3Server = request.getfixturevalue("s3_env")
    return ObjectStore.from_uri(f"s3://{server.bucket}/{uuid.uuid4().hex}/root")
