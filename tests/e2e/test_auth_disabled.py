"""With authorization off (the default, as in Milvus): no credentials needed, users still managed."""

from __future__ import annotations

from pymilvus import MilvusClient

from tests.harness import Standalone


def test_calls_need_no_credentials_and_users_can_be_prepared(standalone: Standalone) -> None:
    anonymous = MilvusClient(standalone.uri)
    wrong = MilvusClient(standalone.uri, token="nobody:whatever", dedicated=True)  # not checked
    assert isinstance(wrong.list_collections(), list)
    anonymous.create_user("prepared", "prepared-password")
    anonymous.create_role("prepared_role")
    anonymous.grant_role("prepared", "prepared_role")
    assert anonymous.describe_user("prepared")["roles"] == ("prepared_role",)
    assert {"root", "prepared"} <= set(anonymous.list_users())
    anonymous.revoke_role("prepared", "prepared_role")
    anonymous.drop_role("prepared_role")
    anonymous.drop_user("prepared")
    assert "prepared" not in anonymous.list_users()
    wrong.close()
    anonymous.close()
