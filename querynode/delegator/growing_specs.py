"""The collection's scalar index definitions, as the delegator's growing stores index them per chunk
(``segcore/segments/growing_indexes.py``): the worker's specs of the same definitions, so that a
growing segment's filters answer from the same kind of index a sealed segment's do."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from common.schema import CollectionSchema
from protos import querynode_pb2 as qpb
from segcore.index.field_specs import listed_index_specs
from segcore.index.scalar.spec import ScalarIndexSpec

_lock = threading.Lock()
_MAX_ENTRIES = 64
#: Answers by schema object (reads ask at each filter), with the definitions they were computed from.
_memo: dict[int, tuple[CollectionSchema, tuple[object, ...], tuple[ScalarIndexSpec, ...]]] = {}


def scalar_specs(schema: CollectionSchema, indexes: Sequence[qpb.IndexSpec]) -> tuple[ScalarIndexSpec, ...]:
    """The scalar index specs among ``indexes`` (those whose params do not define one are left out)."""
    key = tuple((i.field_name, i.index_id, tuple(sorted(i.params.items()))) for i in indexes)
    with _lock:
        hit = _memo.get(id(schema))
        if hit is not None and hit[0] is schema and hit[1] == key:
            return hit[2]
    specs = listed_index_specs(schema, indexes)
    found = tuple(s.spec for s in specs if isinstance(s.spec, ScalarIndexSpec))
    with _lock:
        if len(_memo) >= _MAX_ENTRIES:
            del _memo[next(iter(_memo))]
        _memo[id(schema)] = (schema, key, found)
    return found
