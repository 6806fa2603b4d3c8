"""Fixtures for the proxy conversion tests.

``FakeMilvus`` is a fake of Milvus' gRPC stub that answers DescribeCollection,
CreateCollection, Insert, Query and Search with the converters under test and
a brute-force L2 search. Plugged into pymilvus' real ``GrpcHandler`` it lets
the tests drive pymilvus exactly as an application does: pymilvus builds the
requests, and pymilvus parses our answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import MilvusClient
from pymilvus.client.grpc_handler import GrpcHandler
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2
from pymilvus.orm.schema import CollectionSchema as OrmSchema

from common.schema import CollectionSchema
from proxy.convert import (
    build_count_results,
    build_query_results,
    build_search_results,
    ids_to_proto,
    insert_to_table,
    is_count_query,
    parse_search_request,
    resolve_output_fields,
    schema_from_proto,
    schema_to_proto,
)

_addresses = itertools.count()


class _Future:
    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


class _Unary:
    """A stub method: callable, and with ``.future`` as grpc stubs have."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def __call__(self, request: Any, timeout: Any = None, metadata: Any = None) -> Any:
        return self._fn(request)

    def future(self, request: Any, timeout: Any = None, metadata: Any = None) -> _Future:
        return _Future(self._fn(request))


class FakeMilvus:
    """One collection served from Arrow tables through the converters."""

    def __init__(self, schema: CollectionSchema | None = None) -> None:
        self.schema = schema
        self.tables: list[pa.Table] = []
        self.requests: list[Any] = []
        self._next_id = 1000
        self.CreateCollection = _Unary(self._create)
        self.DescribeCollection = _Unary(self._describe)
        self.Insert = _Unary(self._insert)
        self.Query = _Unary(self._query)
        self.Search = _Unary(self._search)

    def rows(self) -> pa.Table:
        assert self.schema is not None
        if not self.tables:
            return self.schema.arrow_schema(with_timestamp=False).empty_table()
        return pa.concat_tables(self.tables)

    def _create(self, req: milvus_pb2.CreateCollectionRequest) -> common_pb2.Status:
        self.requests.append(req)
        pb = schema_pb2.CollectionSchema()
        pb.ParseFromString(req.schema)
        self.schema = schema_from_proto(pb, collection_name=req.collection_name)
        return common_pb2.Status()

    def _describe(self, req: Any) -> milvus_pb2.DescribeCollectionResponse:
        assert self.schema is not None
        return milvus_pb2.DescribeCollectionResponse(
            status=common_pb2.Status(), schema=schema_to_proto(self.schema), collectionID=7
        )

    def _insert(self, req: milvus_pb2.InsertRequest) -> milvus_pb2.MutationResult:
        assert self.schema is not None
        self.requests.append(req)
        n = req.num_rows
        auto_ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        table = insert_to_table(req.fields_data, n, self.schema, auto_ids=auto_ids)
        self.tables.append(table)
        pk = self.schema.primary_field
        return milvus_pb2.MutationResult(
            status=common_pb2.Status(),
            IDs=ids_to_proto(table.column(pk.name), pk_type=pk.dtype),
            insert_cnt=n,
        )

    def _query(self, req: milvus_pb2.QueryRequest) -> milvus_pb2.QueryResults:
        assert self.schema is not None
        self.requests.append(req)
        rows = self.rows()
        if is_count_query(req.output_fields):
            out = build_count_results(rows.num_rows, collection_name=self.schema.name)
        else:
            out = build_query_results(rows, self.schema, req.output_fields)
        out.status.CopyFrom(common_pb2.Status())
        return out

    def _search(self, req: milvus_pb2.SearchRequest) -> milvus_pb2.SearchResults:
        assert self.schema is not None
        self.requests.append(req)
        spec = parse_search_request(req, self.schema)
        rows = self.rows()
        stored = rows.column(spec.anns_field).combine_chunks().flatten().to_numpy()
        stored = stored.reshape(rows.num_rows, -1)
        dist = ((spec.vectors[:, None, :] - stored[None, :, :]) ** 2).sum(axis=-1)
        queries: list[int] = []
        picks: list[int] = []
        scores: list[float] = []
        for q in range(spec.nq):
            order = np.argsort(dist[q], kind="stable")[spec.offset : spec.offset + spec.topk]
            queries += [q] * len(order)
            picks += order.tolist()
            scores += dist[q][order].tolist()
        wanted = resolve_output_fields(self.schema, spec.output_fields, include_pk=True)
        hits = rows.take(pa.array(picks, type=pa.int64())).select(wanted.fields)
        hits = hits.append_column("query", pa.array(queries, type=pa.int32()))
        hits = hits.append_column("distance", pa.array(scores, type=pa.float32()))
        data = build_search_results(
            hits,
            spec.nq,
            spec.topk,
            self.schema,
            spec.output_fields,
            round_decimal=spec.round_decimal,
        )
        return milvus_pb2.SearchResults(
            status=common_pb2.Status(), results=data, collection_name=self.schema.name
        )


def fake_handler(fake: FakeMilvus) -> GrpcHandler:
    """pymilvus' real GrpcHandler talking to ``fake`` instead of a channel.

    Each handler gets its own address so pymilvus' global schema cache never
    serves one test's schema to another.
    """
    handler = GrpcHandler.__new__(GrpcHandler)
    handler._stub = fake
    handler._address = f"fake-{next(_addresses)}:19530"
    handler._channel = None
    return handler


@pytest.fixture
def connect() -> Callable[[OrmSchema], tuple[GrpcHandler, FakeMilvus]]:
    """Create a collection ``c`` from a pymilvus schema; return handler and fake."""

    def make(schema: OrmSchema, name: str = "c") -> tuple[GrpcHandler, FakeMilvus]:
        fake = FakeMilvus()
        handler = fake_handler(fake)
        handler.create_collection(name, schema)
        return handler, fake

    return make


class _CapturingConnection:
    """Stands in for MilvusClient's handler and keeps the CreateCollection request."""

    def __init__(self) -> None:
        self.requests: list[milvus_pb2.CreateCollectionRequest] = []

    def create_collection(self, name: str, schema: OrmSchema, **kwargs: Any) -> None:
        self.requests.append(Prepare.create_collection_request(name, schema, **kwargs))

    def create_index(self, *args: Any, **kwargs: Any) -> None:
        pass

    def load_collection(self, *args: Any, **kwargs: Any) -> None:
        pass


@pytest.fixture
def quick_create() -> Iterator[Callable[..., schema_pb2.CollectionSchema]]:
    """Run MilvusClient.create_collection's quick form; return the schema it sends."""
    conn = _CapturingConnection()
    client = MilvusClient.__new__(MilvusClient)
    client._handler = conn
    client._generate_call_context = lambda **kwargs: None  # type: ignore[method-assign]

    def create(name: str = "quick", **kwargs: Any) -> schema_pb2.CollectionSchema:
        client.create_collection(name, **kwargs)
        pb = schema_pb2.CollectionSchema()
        pb.ParseFromString(conn.requests[-1].schema)
        return pb

    yield create
