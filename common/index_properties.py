"""Index properties: the index parameters ``alter_index_properties`` may change after creation.

Milvus lets a released collection's index change ``mmap.enabled`` (whether a
query node maps the index file instead of reading it into memory) and nothing
else: the index type, metric and build parameters are fixed once segments are
built with them. The property is kept with the index's parameters and shown by
``describe_index``; it changes no build (``segcore/index/spec.py`` builds from
the type, metric and build parameters only). Strata's query nodes hold every
index in memory, so the property is recorded and has no effect on a load.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from common.errors import InvalidArgument

MMAP_ENABLED = "mmap.enabled"
#: Milvus' ``IsConfigableIndexParam`` keys.
CONFIGURABLE = frozenset({MMAP_ENABLED})
#: What Go's ``strconv.ParseBool`` accepts, which Milvus parses ``mmap.enabled`` with.
_BOOLEANS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"})


def check_configurable(keys: Iterable[str]) -> None:
    """Refuse a key ``alter_index_properties`` / ``drop_index_properties`` may not touch.

    >>> check_configurable(["mmap.enabled"])
    >>> check_configurable(["index_type"])
    Traceback (most recent call last):
    ...
    common.errors.InvalidArgument: index_type is not a configable index property: invalid parameter
    """
    for key in keys:
        if key not in CONFIGURABLE:
            raise InvalidArgument(f"{key} is not a configable index property: invalid parameter")


def check_values(params: Mapping[str, str]) -> None:
    """Refuse a value of a configurable key that Milvus would not parse (``mmap.enabled``: a boolean).

    >>> check_values({"mmap.enabled": "True"})
    >>> check_values({"mmap.enabled": "20"})
    Traceback (most recent call last):
    ...
    common.errors.InvalidArgument: invalid mmap.enabled value: 20, expected: true, false
    """
    value = params.get(MMAP_ENABLED)
    if value is not None and value not in _BOOLEANS:
        raise InvalidArgument(f"invalid {MMAP_ENABLED} value: {value}, expected: true, false")


def without_properties(params: Mapping[str, str]) -> dict[str, str]:
    """``params`` less the configurable keys: what defines the built index.

    >>> without_properties({"index_type": "HNSW", "mmap.enabled": "True"})
    {'index_type': 'HNSW'}
    """
    return {k: v for k, v in params.items() if k not in CONFIGURABLE}
