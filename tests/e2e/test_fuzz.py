"""Fuzzing the proxy: malformed requests get an error status, the server stays up, the data stays as it was.

Requests go over a raw gRPC channel (pymilvus would refuse many of them on the
client side). Insert, upsert and delete requests start as what pymilvus sends
for valid rows and then get at least one defect each (Hypothesis picks which
and how): NaN and infinite vectors, wrong or empty vectors, strings over the
limit, deeply nested or broken JSON, fields of the wrong type, missing or
unknown fields, row counts that lie, huge claimed batches. Searches and
queries get broken vectors, limits, params and filter text. Filters and JSON
nested tens of thousands of levels deep and literals of megabytes get a clear
error (never "internal error"). Then bytes that do not decode go to every
unary method of the proxy and of each internal role: INVALID_ARGUMENT. Afterwards
the server answers, and the collection holds exactly its rows from before.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import symbol_database
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pymilvus import DataType, MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.exceptions import MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc, schema_pb2

from common.etcd.session import SESSION_PREFIX, SessionInfo
from protos import coordinator_pb2, querynode_pb2, streaming_pb2
from tests.cluster.harness import read_prefix
from tests.e2e.util import unique_name
from tests.harness import Standalone

DIM = 4
ROWS = [{"id": i, "s": f"r{i}", "j": {"k": i}, "v": [float(i), 1.0, 0.0, 0.0]} for i in range(20)]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]


class Target:
    def __init__(self, standalone: Standalone) -> None:
        self.client = MilvusClient(standalone.uri)
        self.name = unique_name("fuzz")
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("s", DataType.VARCHAR, max_length=16)
        schema.add_field("j", DataType.JSON)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
        params = self.client.prepare_index_params()
        params.add_index("v", index_type="FLAT", metric_type="L2")
        self.client.create_collection(self.name, schema=schema, index_params=params)
        self.client.insert(self.name, ROWS)
        self.fields = self.client.describe_collection(self.name)["fields"]
        self.channel = grpc.insecure_channel(standalone.uri.removeprefix("http://"))
        self.stub = milvus_pb2_grpc.MilvusServiceStub(self.channel)

    def insert_request(self, rows: list[dict[str, Any]]) -> milvus_pb2.InsertRequest:
        return Prepare.row_insert_param(self.name, rows, "", self.fields, enable_dynamic=False)

    def rows(self) -> list[dict[str, Any]]:
        got = self.client.query(self.name, filter="id >= 0", output_fields=["*"], consistency_level="Strong")
        return sorted(got, key=lambda r: r["id"])

    def close(self) -> None:
        self.channel.close()
        self.client.drop_collection(self.name)
        self.client.close()


@pytest.fixture(scope="module")
def target(standalone: Standalone) -> Iterator[Target]:
    t = Target(standalone)
    before = t.rows()
    assert len(before) == len(ROWS)
    yield t
    assert t.client.list_collections() is not None  # still serving
    assert t.rows() == before, "a malformed request changed the data"
    t.close()


def _field(req: milvus_pb2.InsertRequest, name: str) -> schema_pb2.FieldData:
    return next(f for f in req.fields_data if f.field_name == name)


def _nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


# Each defect breaks a valid request in place; ``n`` is the number of rows in it.
DEFECTS: dict[str, Callable[[milvus_pb2.InsertRequest, int, Any], None]] = {
    "nan vector": lambda r, n, d: _field(r, "v").vectors.float_vector.data.__setitem__(0, math.nan),
    "inf vector": lambda r, n, d: _field(r, "v").vectors.float_vector.data.__setitem__(0, -math.inf),
    "short vectors": lambda r, n, d: _field(r, "v").vectors.float_vector.data.pop(),
    "empty vectors": lambda r, n, d: _field(r, "v").vectors.float_vector.ClearField("data"),
    "wrong dim": lambda r, n, d: setattr(_field(r, "v").vectors, "dim", DIM + 1 + d % 50),
    "long string": lambda r, n, d: _field(r, "s").scalars.string_data.data.__setitem__(0, "x" * (17 + d * 997)),
    "nested json": lambda r, n, d: _field(r, "j").scalars.json_data.data.__setitem__(0, _nested(200 + d * 5000)),
    "broken json": lambda r, n, d: _field(r, "j").scalars.json_data.data.__setitem__(0, b'{"k": '),
    "wrong type": lambda r, n, d: _field(r, "s").scalars.CopyFrom(
        schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=list(range(n))))
    ),
    "missing field": lambda r, n, d: r.fields_data.remove(_field(r, "s")),
    "unknown field": lambda r, n, d: setattr(_field(r, "s"), "field_name", "no_such_field"),
    "row count lies": lambda r, n, d: setattr(r, "num_rows", n + 1 + d),
    "huge claimed batch": lambda r, n, d: setattr(r, "num_rows", 10**9 + d),
    "zero rows": lambda r, n, d: setattr(r, "num_rows", 0),
    "no fields": lambda r, n, d: r.ClearField("fields_data"),
    "pk of wrong type": lambda r, n, d: _field(r, "id").scalars.CopyFrom(
        schema_pb2.ScalarField(string_data=schema_pb2.StringArray(data=["a"] * n))
    ),
    "unknown collection": lambda r, n, d: setattr(r, "collection_name", "nope_" + str(d)),
}


def _is_error(status: common_pb2.Status) -> bool:
    return status.code != 0 or status.error_code != common_pb2.Success


def _fresh_rows(n: int, first: int) -> list[dict[str, Any]]:
    return [{"id": 1000 + first + i, "s": "new", "j": {"x": i}, "v": [0.5, 0.5, 0.5, 0.5]} for i in range(n)]


@SETTINGS
@given(
    defects=st.lists(st.sampled_from(sorted(DEFECTS)), min_size=1, max_size=3, unique=True),
    n=st.integers(1, 5),
    detail=st.integers(0, 200),
    upsert=st.booleans(),
)
def test_malformed_writes_are_refused(target: Target, defects: list[str], n: int, detail: int, upsert: bool) -> None:
    req = target.insert_request(_fresh_rows(n, detail))
    applied = 0
    for d in defects:
        try:
            DEFECTS[d](req, n, detail)
            applied += 1
        except (StopIteration, IndexError):  # an earlier defect removed what this one breaks
            pass
    assume(applied > 0)
    if upsert:
        up = milvus_pb2.UpsertRequest(
            collection_name=req.collection_name, fields_data=req.fields_data, num_rows=req.num_rows
        )
        resp = target.stub.Upsert(up, timeout=30)
    else:
        resp = target.stub.Insert(req, timeout=30)
    assert _is_error(resp.status), (defects, resp)
    assert resp.status.reason and "internal error" not in resp.status.reason, (defects, resp.status.reason[:300])


EXPRS = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "id >",
            "id in [1,",
            "json_contains(",
            "s like",
            "(((((id > 1",
            "id == 'a'",
            "v > 1",
            'j["k"] +',
            "not",
            "1 < id <",
            "id in {missing}",
            '$meta["x"] > 1',
            "&&",
            "id ** ** 2",
        ]
    ),
    st.integers(1, 3000).map(lambda d: "(" * d + "id > 1" + ")" * d),
)


@SETTINGS
@given(expr=EXPRS)
def test_filters_never_break_the_server(target: Target, expr: str) -> None:
    # Random text may happen to be a valid filter: then the read answers normally; a delete with it
    # could change data, so only reads get random filters.
    resp = target.stub.Query(
        milvus_pb2.QueryRequest(
            collection_name=target.name,
            expr=expr,
            output_fields=["id"],
            query_params=[common_pb2.KeyValuePair(key="limit", value="5")],
        ),
        timeout=30,
    )
    assert resp.status.code == 0 or resp.status.reason
    assert "internal error" not in resp.status.reason, (expr[:100], resp.status.reason[:300])


SEARCH_DEFECTS = ["nan", "inf", "ragged", "empty", "topk low", "topk high", "params not json", "negative ef", None]


@SETTINGS
@given(
    defect=st.sampled_from(SEARCH_DEFECTS),
    nq=st.integers(1, 4),
    topk=st.integers(1, 16384),
    seed=st.floats(-1e6, 1e6, width=32),
)
def test_malformed_searches_are_refused(target: Target, defect: str | None, nq: int, topk: int, seed: float) -> None:
    vectors = [[seed + q] * DIM for q in range(nq)]  # pymilvus sends one value per query vector
    params = "{}"
    match defect:
        case "nan":
            vectors[-1][-1] = math.nan
        case "inf":
            vectors[0][0] = math.inf
        case "ragged":
            vectors[-1].pop()
        case "empty":
            vectors = [[]]
        case "topk low":
            topk = 1 - topk
        case "topk high":
            topk = 16384 + topk
        case "params not json":
            params = "{ef: 1"
        case "negative ef":
            params = '{"ef": -5}'
    blobs = [struct.pack(f"<{len(v)}f", *v) for v in vectors]
    group = common_pb2.PlaceholderGroup(
        placeholders=[common_pb2.PlaceholderValue(tag="$0", type=common_pb2.FloatVector, values=blobs)]
    )
    req = milvus_pb2.SearchRequest(
        collection_name=target.name,
        dsl_type=common_pb2.BoolExprV1,
        placeholder_group=group.SerializeToString(),
        search_params=[
            common_pb2.KeyValuePair(key="anns_field", value="v"),
            common_pb2.KeyValuePair(key="topk", value=str(topk)),
            common_pb2.KeyValuePair(key="params", value=params),
            common_pb2.KeyValuePair(key="metric_type", value="L2"),
        ],
        nq=len(vectors),
    )
    resp = target.stub.Search(req, timeout=30)
    if defect is None:  # the control: the same request without a defect is answered
        assert not _is_error(resp.status), resp.status
    else:
        assert _is_error(resp.status), (defect, resp.status)
        assert resp.status.reason


BLOBS = (
    b"\xff\xff\xff\xff\x0f\x01\x02",
    b"\xff" * 7,
    b"\x0a\xff\xff\xff\xff\x0f",
    bytes(range(256)),
    b"\x12\x05" + b"\x00" * 3,
)


def _decodes(method: Any, blob: bytes) -> bool:
    try:
        symbol_database.Default().GetSymbol(method.input_type.full_name).FromString(blob)
    except DecodeError:
        return False
    return True


def _send_raw(channel: grpc.Channel, service: Any, method: Any, blob: bytes) -> None:
    """``blob`` as the request of ``method``: refused with INVALID_ARGUMENT unless it decodes."""
    call = channel.unary_unary(
        f"/{service.full_name}/{method.name}", request_serializer=lambda b: b, response_deserializer=lambda b: b
    )
    try:
        call(blob, timeout=30)
    except grpc.RpcError as err:
        if _decodes(method, blob):  # a real request (of garbage values): any error but a crash
            assert err.code() not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (method.name, err)
        else:
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (method.name, err)
            assert err.details().startswith("cannot decode the request: Error parsing message"), err.details()
            assert "Traceback" not in err.details()
    else:
        assert _decodes(method, blob), (method.name, blob)


def _unary(service: Any) -> list[Any]:
    return [m for m in service.methods if not (m.client_streaming or m.server_streaming)]


@pytest.mark.parametrize("method", _unary(SERVICE), ids=lambda m: m.name)
def test_random_bytes_to_every_method(target: Target, method: Any) -> None:
    for blob in BLOBS:
        _send_raw(target.channel, SERVICE, method, blob)
    assert target.client.has_collection(target.name)


@pytest.mark.parametrize("method", ["Query", "Search", "Insert", "CreateCollection", "Delete", "Upsert"])
def test_undecodable_requests_are_invalid_arguments(target: Target, method: str) -> None:
    call = target.channel.unary_unary(
        f"/{SERVICE.full_name}/{method}", request_serializer=lambda b: b, response_deserializer=lambda b: b
    )
    with pytest.raises(grpc.RpcError) as info:
        call(b"\xff\xff\xff\xff\x0f\x01\x02", timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    expected = f"cannot decode the request: Error parsing message with type 'milvus.proto.milvus.{method}Request'"
    assert info.value.details().startswith(expected), info.value.details()
    assert len(target.rows()) == len(ROWS)  # and the server still answers


INTERNAL_SERVICES = {
    "coordinator": [coordinator_pb2.DESCRIPTOR.services_by_name["Coordinator"]],
    "querynode": [querynode_pb2.DESCRIPTOR.services_by_name["QueryNode"]],
    "streamingnode": [
        streaming_pb2.DESCRIPTOR.services_by_name["StreamingNodeManager"],
        streaming_pb2.DESCRIPTOR.services_by_name["StreamingNodeHandler"],
    ],
}


def _sessions(standalone: Standalone) -> dict[str, str]:
    """role -> gRPC address of each role of the standalone, from their etcd sessions."""
    found = re.findall(r"event='etcd ready'.*?endpoint='([^']+)'", standalone.log_path.read_text())
    assert found, "no etcd endpoint in the standalone's log"
    values = read_prefix(found[-1], "strata", SESSION_PREFIX).values()
    sessions = [SessionInfo.from_json(v) for v in values if b'"role"' in v]  # not the id counter or the like
    return {s.role: s.address for s in sessions}


@pytest.mark.parametrize("role", sorted(INTERNAL_SERVICES))
def test_internal_roles_refuse_undecodable_requests(target: Target, standalone: Standalone, role: str) -> None:
    address = _sessions(standalone)[role]
    with grpc.insecure_channel(address) as channel:
        for service in INTERNAL_SERVICES[role]:
            for method in _unary(service):
                _send_raw(channel, service, method, BLOBS[0])
    assert len(target.rows()) == len(ROWS)


def _query_error(target: Target, text: str) -> str:
    """The reason the proxy gives for ``text`` as a query filter (it must refuse it)."""
    resp = target.stub.Query(
        milvus_pb2.QueryRequest(collection_name=target.name, expr=text, output_fields=["id"]), timeout=60
    )
    assert _is_error(resp.status), text[:100]
    assert "internal error" not in resp.status.reason and "RecursionError" not in resp.status.reason
    return resp.status.reason


NESTED_FILTERS = {
    "not": lambda n: "not " * n + "id > 0",
    "bang": lambda n: "!" * n + "(id > 0)",
    "parenthesised not": lambda n: "not (" * n + "id > 0" + ")" * n,
    "unary minus": lambda n: "id > " + "-" * n + "1",
    "arithmetic": lambda n: "(" * n + "id" + " + 1)" * n + " > 0",
    "json list literal": lambda n: 'j["k"] == ' + "[" * n + "]" * n,
    "json_contains": lambda n: 'json_contains(j["k"], ' + "[" * n + "]" * n + ")",
}


@pytest.mark.parametrize("shape", sorted(NESTED_FILTERS))
@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_deeply_nested_filters_are_illegal(target: Target, shape: str, depth: int) -> None:
    reason = _query_error(target, NESTED_FILTERS[shape](depth))
    assert "filter expression is nested more than 128 levels deep" in reason, reason


def test_a_hundred_nested_nots_still_filter(target: Target) -> None:
    got = target.client.query(target.name, filter="not " * 100 + "(id >= 5)", output_fields=["id"])
    assert sorted(r["id"] for r in got) == list(range(5, len(ROWS)))
    got = target.client.query(target.name, filter="not " * 101 + "(id >= 5)", output_fields=["id"])
    assert sorted(r["id"] for r in got) == [0, 1, 2, 3, 4]


def test_a_long_flat_or_chain_is_not_nesting(target: Target) -> None:
    text = " or ".join(f"id == {i}" for i in range(3, 20_003))
    got = target.client.query(target.name, filter=text, output_fields=["id"], timeout=120)
    assert sorted(r["id"] for r in got) == list(range(3, 20))


def test_huge_literals_get_a_clear_answer(target: Target) -> None:
    reason = _query_error(target, "id > " + "1" * 1_000_000)
    assert "is out of the int64 range" in reason and len(reason) < 1000
    reason = _query_error(target, "id > 1e999")
    assert "is out of the float64 range" in reason
    big = "x" * 10_000_000
    reason = _query_error(target, f'id == "{big}"')
    assert "cannot compare INT64 field 'id' with string" in reason and len(reason) < 1000
    got = target.client.query(target.name, filter=f's != "{big}" and id < 3', output_fields=["id"], timeout=120)
    assert sorted(r["id"] for r in got) == [0, 1, 2]


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_deeply_nested_json_is_refused_at_insert(target: Target, depth: int) -> None:
    req = target.insert_request(_fresh_rows(1, 0))
    _field(req, "j").scalars.json_data.data[0] = _nested(depth)
    resp = target.stub.Insert(req, timeout=30)
    assert _is_error(resp.status)
    assert resp.status.reason == "invalid JSON in field (j) at row 0: JSON value is nested more than 256 levels deep"
    with pytest.raises(MilvusException, match="nested more than 256 levels deep"):
        target.client.insert(target.name, [{**_fresh_rows(1, 1)[0], "j": json.loads(_nested(300))}])
