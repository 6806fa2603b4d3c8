"""A real S3-API server for tests: moto's standalone server, a child process on 127.0.0.1.

``s3_server`` (a session fixture in ``tests/conftest.py``) starts it once, only
if a test asks for it, creates one bucket, and always kills it. ``S3Server.env()``
is the ``AWS_*`` environment a deployment would set to reach it (for child
processes too).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from common.etcd.process import free_port
from common.procutil import die_with_parent

BUCKET = "strata-test"
ACCESS_KEY = "strata-test-key"
SECRET_KEY = "strata-test-secret"
REGION = "us-east-1"


@dataclass(frozen=True, slots=True, kw_only=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:PORT
    bucket: str

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` variables that point a client (pyarrow, a role process) at this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
        }


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"moto server did not listen on port {port} within {timeout}s: {log.read_text()[-2000:]}")


def run_s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    try:
        _wait_for_port(port, proc, log, timeout=30.0)
        admin = pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            scheme="http",
            endpoint_override=f"127.0.0.1:{port}",
            allow_bucket_creation=True,
        )
        admin.create_dir(BUCKET)
        yield S3Server(endpoint=f"http://127.0.0.1:{port}", bucket=BUCKET)
    finally:
        proc.kill()
        proc.wait(timeout=10)


