"""A standalone and a second proxy (``strata proxy`` on the standalone's etcd), for tests of what
one proxy's change does on another.

``second_proxy(s, logs)`` starts the extra proxy, yields its URI once it serves and kills it after;
``standalone_with_second_proxy(tmp_path)`` adds a standalone around it (its logs dumped on a failure).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tests.cluster.harness import Role
from tests.harness import Standalone, dump_logs_on_failure, free_port


def etcd_endpoint(s: Standalone) -> str:
    """The endpoint the standalone's roles were given (``--etcd``)."""
    pid = s.children()["coordinator"]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return argv[argv.index("--etcd") + 1]


@contextlib.contextmanager
def second_proxy(s: Standalone, logs: Path, *, env: dict[str, str] | None = None) -> Iterator[str]:
    """A proxy on ``s``'s etcd, serving on a free port: its URI once ready; killed on exit."""
    port = free_port()
    other = Role("proxy", ["proxy", "--etcd", etcd_endpoint(s), "--port", str(port)], logs, env=env)
    try:
        other.wait_for_log("role ready", 60)
        yield f"http://127.0.0.1:{port}"
    finally:
        other.kill()


@contextlib.contextmanager
def standalone_with_second_proxy(tmp_path: Path) -> Iterator[tuple[Standalone, str]]:
    """A standalone in ``tmp_path / "data"`` and a second proxy on its etcd: (the standalone, the proxy's URI)."""
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s), second_proxy(s, tmp_path) as uri:
            yield s, uri
    finally:
        s.stop()
