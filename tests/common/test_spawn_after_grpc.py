"""A Strata process that has used gRPC starts children that run (grpc/grpc#43055, ``common/__init__``).

The launcher talks to etcd over gRPC, then starts the roles with
``subprocess.Popen(preexec_fn=...)``. With gRPC's fork handlers on, the
child's restarted epoll thread could abort on a descriptor ``close_fds``
closed, before ``exec``: about one spawn in 150 on a loaded machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPAWNS = 300

# What the launcher does: import Strata first, use etcd over gRPC, then spawn.
SCRIPT = f"""
import asyncio, os, subprocess, sys
import common
from common.etcd.metastore import MetaStore
from common.procutil import die_with_parent

async def touch(endpoint):
    store = await MetaStore.connect(endpoint)
    try:
        await store.delete_prefix("spawn-test/")
    finally:
        await store.close()

lost = []
for i in range({SPAWNS} // 3):
    asyncio.run(touch(sys.argv[1]))
    for _ in range(3):
        p = subprocess.run(["/bin/true"], stderr=subprocess.PIPE, preexec_fn=die_with_parent)
        if p.returncode != 0:
            lost.append((p.returncode, p.stderr.decode(errors="replace")[:300]))
print(os.environ.get("GRPC_ENABLE_FORK_SUPPORT"), len(lost), lost[:2])
"""


def test_children_spawned_after_grpc_use_all_run(etcd_endpoint: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, etcd_endpoint], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    setting, lost, examples = out.stdout.strip().split(" ", 2)
    assert lost == "0", f"children died before exec: {examples}"
    assert setting == "false"  # common/__init__ switched gRPC's fork handlers off
