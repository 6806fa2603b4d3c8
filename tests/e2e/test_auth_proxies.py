"""A change of users or grants through one proxy is in force on another at once.

A standalone with authorization on and a second proxy (``strata proxy`` on the standalone's etcd,
authorization on too). The second proxy has alice's password verified and cached, and has
checked her grant, when the first changes them: it follows ``security/`` in etcd, so the old
password, a dropped user and a revoked grant are refused there right away, well inside the 30 s
its verified passwords are cached.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from pymilvus import MilvusClient

from tests.e2e.authutil import AUTH_ENV, ROOT_TOKEN, auth_standalone, denied
from tests.e2e.twoproxies import second_proxy
from tests.harness import dump_logs_on_failure


def _within(seconds: float, check: Callable[[], bool]) -> float:
    """How long ``check`` took to hold (it must within ``seconds``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < seconds, "not in force on the second proxy in time"
        time.sleep(0.05)
    return time.monotonic() - start


def _refused(call: Callable[[], object], code: grpc.StatusCode | None = None) -> bool:
    try:
        call()
    except grpc.RpcError as err:
        return code is None or err.code() == code
    except Exception as err:
        return code is None and denied(err)
    return False


@pytest.mark.timeout(300)
def test_password_change_revocation_and_drop_reach_another_proxy(tmp_path: Path) -> None:
    with auth_standalone(tmp_path / "data") as s, dump_logs_on_failure(s), second_proxy(s, tmp_path, env=AUTH_ENV) as second:
        root = MilvusClient(s.uri, token=ROOT_TOKEN)
        root.create_collection("c_two", dimension=4)
        root.create_user("alice", "alice-password")
        root.create_role("reader")
        root.grant_role("alice", "reader")
        root.grant_privilege("reader", "Collection", "Query", "c_two", db_name="default")
        alice = MilvusClient(second, user="alice", password="alice-password")
        assert alice.query("c_two", filter="id >= 0", consistency_level="Strong") == []  # verified, cached

        root.revoke_privilege("reader", "Collection", "Query", "c_two", db_name="default")
        waited = [_within(5, lambda: _refused(lambda: alice.query("c_two", filter="id >= 0")))]

        root.update_password("alice", "alice-password", "alice-password-2")
        waited.append(_within(5, lambda: _refused(lambda: alice.has_collection("c_two"),
                                                  grpc.StatusCode.UNAUTHENTICATED)))
        alice.close()
        alice = MilvusClient(second, user="alice", password="alice-password-2")
        assert alice.list_collections() == []  # logged in with the new password; no grant left on c_two

        root.drop_user("alice")
        waited.append(_within(5, lambda: _refused(lambda: alice.has_collection("c_two"),
                                                  grpc.StatusCode.UNAUTHENTICATED)))
        print(f"\nin force on the second proxy after {', '.join(f'{w * 1000:.0f} ms' for w in waited)}")
        alice.close()
        root.close()
