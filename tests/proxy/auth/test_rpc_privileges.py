"""The RPC-to-privilege table covers every MilvusService RPC and agrees with milvus.proto."""

from __future__ import annotations

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.rbac.privileges import ALL_PRIVILEGES, PRIVILEGES_BY_TYPE, ObjectType
from proxy.auth.rpc_privileges import RPC_PRIVILEGES
from tests.harness import REPO

_SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
# Rows where Strata checks a privilege milvus.proto does not name (module docstring says why).
_OWN_CHOICES = {"GetPartitionStatistics"}


def test_every_rpc_has_a_row() -> None:
    assert {m.name for m in _SERVICE.methods} == set(RPC_PRIVILEGES)


def test_rows_match_milvus_proto_privilege_options() -> None:
    ext = common_pb2.privilege_ext_obj
    for method in _SERVICE.methods:
        rule = RPC_PRIVILEGES[method.name]
        options = method.input_type.GetOptions()
        if not options.HasExtension(ext):
            assert rule is None or method.name in _OWN_CHOICES, method.name
            continue
        want = options.Extensions[ext]
        assert rule is not None, method.name
        assert f"Privilege{rule.privilege}" == common_pb2.ObjectPrivilege.Name(want.object_privilege), method.name
        assert rule.object_type.value == common_pb2.ObjectType.Name(want.object_type), method.name


def test_name_fields_exist_and_privileges_fit_their_object_type() -> None:
    for method in _SERVICE.methods:
        rule = RPC_PRIVILEGES[method.name]
        if rule is None:
            continue
        assert rule.privilege in ALL_PRIVILEGES, rule
        if "RowPolic" not in method.name:  # milvus.proto checks Global's *Ownership on a collection there
            assert rule.privilege in PRIVILEGES_BY_TYPE[rule.object_type], rule
        if rule.name_field:
            value = method.input_type._concrete_class()
            for part in rule.name_field.split("."):
                value = getattr(value, part)  # raises if the field does not exist
            assert isinstance(value, str) or rule.object_type != ObjectType.USER


def test_readme_table_matches_the_module() -> None:
    readme = (REPO / "README.md").read_text()
    start = readme.index("| privilege | object checked | RPCs |")
    documented: dict[str, str] = {}
    for line in readme[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        privilege, _, rpcs = (cell.strip() for cell in line.strip("|").split("|"))
        for rpc in rpcs.split(", "):
            documented[rpc] = privilege.strip("`")
    actual = {name: "—" if rule is None else rule.privilege for name, rule in RPC_PRIVILEGES.items()}
    assert documented == actual
