"""The proxy's per-request limits (``ProxyLimits``): how each is set, checked and worded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pymilvus.client.prepare import Prepare

from common.config import DEFAULT_LIMITS, ProxyConfig, ProxyLimits, QueryNodeConfig
from common.configfile import ConfigError, Value, load
from common.errors import CODE_TABLE, ErrorCode, InvalidArgument, LimitExceeded
from common.grpcutil import message_size_options
from proxy.convert import parse_search_request
from proxy.limits import check_expr_length, check_result_size, check_search_output, hit_bytes
from tests.proxy.convert.test_convert_search import domain, make_schema

ENV = {
    "STRATA_COMMON_ETCD": "127.0.0.1:2379",
    "STRATA_QUERYNODE_STORAGE": "file:///data",
}
MIB = 1 << 20


def test_defaults_are_milvus_defaults() -> None:
    milvus = ProxyLimits(
        server_max_recv_size=64 * MIB,  # proxy.grpc.serverMaxRecvSize
        server_max_send_size=256 * MIB,  # proxy.grpc.serverMaxSendSize
        max_topk=16384,  # quotaAndLimits.limits.topK
        max_nq=16384,  # quotaAndLimits.limits.nq
        max_query_result_window=16384,  # quotaAndLimits.limits.maxQueryResultWindow
        max_output_size=100 * MIB,  # quotaAndLimits.limits.maxOutputSize
        max_expr_length=16 * MIB,  # Strata's own
        slow_request_ms=5000,  # proxy.slowQuerySpanInSeconds (5 s)
        access_log=False,  # proxy.accessLog.enable
    )
    assert milvus == DEFAULT_LIMITS


def test_the_proxy_section_sets_the_limits_of_a_proxy_and_of_a_standalone_nodes_proxy(tmp_path: Path) -> None:
    config_file = tmp_path / "strata.yaml"
    config_file.write_text("proxy:\n  max_nq: 7\n  server_max_recv_size: 1048576\n  accessLog:\n    enable: true\n")
    env = {**ENV, "STRATA_PROXY_MAX_TOPK": "100", "STRATA_PROXY_MAX_EXPR_LENGTH": "4096",
           "STRATA_PROXY_SLOW_REQUEST_MS": "250"}
    proxy = load("proxy", flags={}, config_file=str(config_file), environ=env)
    node = load("querynode", flags={"querynode.proxy_port": Value("19530", "flag")}, config_file=str(config_file),
                environ=env)  # fmt: skip
    assert isinstance(proxy, ProxyConfig) and isinstance(node, QueryNodeConfig)
    expected = ProxyLimits(max_nq=7, server_max_recv_size=MIB, max_topk=100, max_expr_length=4096, slow_request_ms=250,
                           access_log=True)
    assert proxy.limits == expected
    assert node.proxy_limits == expected


@pytest.mark.parametrize(
    ("env_var", "value", "message"),
    [
        ("STRATA_PROXY_MAX_TOPK", "0", "proxy.max_topk (from env STRATA_PROXY_MAX_TOPK): must be positive, got 0"),
        ("STRATA_PROXY_MAX_NQ", "many", "proxy.max_nq (from env STRATA_PROXY_MAX_NQ): expected an integer"),
        (
            "STRATA_PROXY_SERVER_MAX_RECV_SIZE",
            str(1 << 31),
            "proxy.server_max_recv_size (from env STRATA_PROXY_SERVER_MAX_RECV_SIZE): must be 1 to 2147483647 bytes",
        ),
    ],
)
def test_a_bad_limit_is_refused_naming_the_key(env_var: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load("proxy", flags={}, config_file=None, environ={**ENV, env_var: value})


def test_the_servers_message_sizes_come_from_the_limits() -> None:
    options = dict(message_size_options(max_receive=5, max_send=6))
    assert options["grpc.max_receive_message_length"] == 5
    assert options["grpc.max_send_message_length"] == 6


def _search(**kwargs: Any) -> Any:
    args: dict[str, Any] = {"collection_name": "c", "anns_field": "", "param": {}, "limit": 10}
    args.update(kwargs)
    return Prepare.search_requests_with_expr(**args)


def test_topk_and_nq_follow_the_configured_limits_with_milvus_messages() -> None:
    schema = domain(make_schema())
    limits = ProxyLimits(max_topk=5, max_nq=2)
    one = [[0.1, 0.2, 0.3, 0.4]]
    assert parse_search_request(_search(data=one, limit=5), schema, limits).topk == 5
    with pytest.raises(InvalidArgument) as info:
        parse_search_request(_search(data=one, limit=6), schema, limits)
    assert info.value.message == "topk [6] is invalid, it should be in range [1, 5], but got 6"
    with pytest.raises(InvalidArgument) as info:
        parse_search_request(_search(data=one, limit=3, offset=3), schema, limits)
    assert info.value.message == "offset+topk [6] is invalid, it should be in range [1, 5], but got 6"
    with pytest.raises(InvalidArgument) as info:
        parse_search_request(_search(data=one * 3, limit=1), schema, limits)
    assert info.value.message == (
        "nq [3] is invalid, nq (number of search vector per search request) should be in range [1, 2], but got 3"
    )


def test_nq_is_refused_from_the_request_header_before_the_vectors_are_decoded() -> None:
    schema = domain(make_schema())
    request = _search(data=[[0.1, 0.2, 0.3, 0.4]], limit=1)
    request.nq = 20_000
    request.placeholder_group = b"not a placeholder group"
    with pytest.raises(InvalidArgument, match=r"nq \[20000\] is invalid"):
        parse_search_request(request, schema)


def test_an_expression_longer_than_the_limit_is_refused_before_it_is_parsed() -> None:
    limits = ProxyLimits(max_expr_length=10)
    check_expr_length("id in [1]", limits)
    with pytest.raises(InvalidArgument) as info:
        check_expr_length("id in [1, 2]", limits)
    assert "12 characters long, more than the 10 this server accepts (proxy.max_expr_length)" in info.value.message


def test_a_search_whose_hits_cannot_fit_is_refused_with_milvus_message_and_code() -> None:
    schema = domain(make_schema())  # int64 key, a 4-dim vector
    assert hit_bytes(schema, []) == 12  # int64 key + float32 score
    assert hit_bytes(schema, ["vec", "title"]) == 12 + 16  # a vector of 4 float32s; strings not counted
    limits = ProxyLimits(max_output_size=1200)
    check_search_output(100, 12, limits)
    with pytest.raises(LimitExceeded) as info:
        check_search_output(101, 12, limits)
    assert info.value.message == "search results exceed the maxOutputSize Limit 1200"
    assert CODE_TABLE[info.value.code].milvus_code == 65535  # Milvus's errUnexpected, as it answers this


def test_an_answer_over_the_output_limit_is_refused() -> None:
    limits = ProxyLimits(max_output_size=100)
    check_result_size("query", 100, limits)
    with pytest.raises(LimitExceeded, match=r"^query results exceed the maxOutputSize Limit 100$"):
        check_result_size("query", 101, limits)
    assert LimitExceeded("x").code is ErrorCode.LIMIT_EXCEEDED
