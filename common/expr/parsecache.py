"""Recently parsed short filters, so a filter repeated request after request is bound once per schema.

A read's filter is parsed by the proxy (to refuse a bad one early), the
delegator and each worker: three parses of about 0.25 ms for a short filter
on every request. An ``Expr`` is an immutable value, so the bound tree of a
filter without parameters is kept, keyed by its text and everything of the
schema the binder reads (names, types, element types, nullability, the
dynamic field, the version), and returned again. Errors are not cached.
Thread-safe (one lock around the dictionary); bounded (least recently used
out first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from common.expr.ast import Expr
from common.expr.parser import parse_filter
from common.schema import CollectionSchema

#: Filters kept; a short filter and its tree take a few KiB.
CAPACITY = 512
#: Longer filters are not kept (their parse dwarfs a lookup anyway, and they would crowd the cache).
MAX_TEXT = 512


def _schema_key(schema: CollectionSchema) -> Hashable:
    return (
        schema.name,
        schema.version,
        schema.enable_dynamic_field,
        tuple((f.name, f.dtype, f.element_type, f.nullable, f.is_dynamic, f.is_primary) for f in schema.fields),
    )


class ParseCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, Hashable], Expr] = OrderedDict()
        self._lock = threading.Lock()

    def parse(self, text: str, schema: CollectionSchema) -> Expr:
        """``parse_filter(text, schema)``, from the cache when seen before (raises as it does)."""
        if len(text) > MAX_TEXT:
            return parse_filter(text, schema)
        key = (text, _schema_key(schema))
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None:
                self._entries.move_to_end(key)
                return cached
        expr = parse_filter(text, schema)
        with self._lock:
            self._entries[key] = expr
            if len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return expr


#: The process's cache (filters of every collection; keyed by schema, so collections never mix).
PARSED = ParseCache()
