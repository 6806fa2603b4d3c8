"""``RunAnalyzer`` (pymilvus ``MilvusClient.run_analyzer``), mixed into ``MilvusProxy``.

The texts are analyzed with the request's ``analyzer_params``, or with those of
``collection_name``'s field ``field_name`` when they are given
(``common/fulltext/analyzer.py``). With ``with_detail`` each token carries
its byte offsets in the text, its position and position length; with
``with_hash`` the index the BM25 function gives it.
"""

from __future__ import annotations

import asyncio

import grpc
from pymilvus.grpc_gen import milvus_pb2

from common.errors import InvalidArgument
from common.fulltext.analyzer import Analyzer, Token, build_analyzer
from common.fulltext.bm25 import term_index
from common.fulltext.functions import analyzer_enabled, field_analyzer
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


def _result(analyzer: Analyzer, text: str, *, detail: bool, with_hash: bool) -> milvus_pb2.AnalyzerResult:
    tokens = analyzer.tokens(text)
    out = milvus_pb2.AnalyzerResult()
    byte_at = _byte_offsets(text, tokens) if detail else {}
    for t in tokens:
        pb = out.tokens.add(token=t.text)
        if detail:
            pb.start_offset, pb.end_offset = byte_at[t.start], byte_at[t.end]
            pb.position, pb.position_length = t.position, 1
        if with_hash:
            pb.hash = term_index(t.text)
    return out


def _byte_offsets(text: str, tokens: list[Token]) -> dict[int, int]:
    wanted = sorted({t.start for t in tokens} | {t.end for t in tokens})
    out: dict[int, int] = {}
    done, size = 0, 0
    for at in wanted:
        size += len(text[done:at].encode())
        done = at
        out[at] = size
    return out


class AnalyzerRPCs(ProxyParts):
    @milvus_rpc(milvus_pb2.RunAnalyzerResponse)
    async def RunAnalyzer(
        self, request: milvus_pb2.RunAnalyzerRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.RunAnalyzerResponse:
        if request.collection_name and request.field_name:
            coll = await self._coll(request.collection_name)
            try:
                field = coll.schema.field(request.field_name)
            except KeyError:
                raise InvalidArgument(f"field {request.field_name} not found in collection {request.collection_name}") from None
            if not analyzer_enabled(field):
                raise InvalidArgument(f"field {request.field_name} does not enable an analyzer")
            analyzer = field_analyzer(field)
        else:
            analyzer = build_analyzer(request.analyzer_params or None)
        try:
            texts = [raw.decode() for raw in request.placeholder]
        except UnicodeDecodeError:
            raise InvalidArgument("the texts to analyze are not UTF-8") from None

        def run() -> list[milvus_pb2.AnalyzerResult]:
            return [_result(analyzer, t, detail=request.with_detail, with_hash=request.with_hash) for t in texts]

        results = run() if sum(len(t) for t in texts) < 4096 else await asyncio.to_thread(run)
        return milvus_pb2.RunAnalyzerResponse(status=success(), results=results)
