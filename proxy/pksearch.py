"""Read the query vectors of a search by primary keys (see :mod:`proxy.convert.pkids`).

The keys' ``anns_field`` values are read through the same path as a ``query``
with ``output_fields=[anns_field]`` (the delegators of every vchannel, at the
search's guarantee timestamp and partitions, deleted and expired rows left
out), then put in the given key order and handed to the search as the
placeholder group a client would have sent. The search itself then runs
unchanged: filters, range search, group by, output fields and partitions
apply to it as to a search by vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from common.config import ProxyLimits
from common.readplan import ReadPlan
from proxy.convert.output import column_to_field_data
from proxy.convert.pkids import missing_keys_error, placeholder_from_field_data
from proxy.convert.search import SearchSpec, with_key_vectors
from proxy.metacache import CollectionEntry
from proxy.readplans import refiltered
from proxy.reads import ReadRouter

_KEYS_PARAM = "search_by_ids"


async def resolve_key_vectors(
    reads: ReadRouter, coll: CollectionEntry, spec: SearchSpec, read: ReadPlan, limits: ProxyLimits
) -> SearchSpec:
    """``spec`` with its primary keys' vectors as the query vectors (a spec with vectors: as is).

    ``read`` is the search's own read (guarantee timestamp, partitions); its
    filter and output fields are replaced for the lookup.

    Raises:
        InvalidArgument: a key is not visible to the search (never inserted,
            deleted, expired, or in a partition not searched), or its vector
            is null.
    """
    keys = spec.primary_keys
    if keys is None:
        return spec
    schema = coll.schema
    pk = schema.primary_field.name
    lookup = await refiltered(
        read, schema, filter=f"{pk} in {{{_KEYS_PARAM}}}", filter_params={_KEYS_PARAM: list(keys)},
        output_fields=[pk, spec.anns_field],
    )
    tables, _ = await reads.query(coll, read=lookup, limit=0, count_only=False)
    found = pa.concat_tables(tables) if tables else None
    rows = _rows_in_key_order(found, pk, keys)
    assert found is not None  # _rows_in_key_order raised otherwise
    column = found.column(spec.anns_field).take(pa.array(rows, type=pa.int64()))
    field_data = column_to_field_data(schema.field(spec.anns_field), column)
    group = placeholder_from_field_data(field_data, schema.field(spec.anns_field).dtype, keys)
    return with_key_vectors(spec, group, schema, limits)


def _rows_in_key_order(found: pa.Table | None, pk: str, keys: Sequence[int | str]) -> list[int]:
    """The row of ``found`` holding each key, in the keys' order.

    Raises:
        InvalidArgument: naming the keys that are not in ``found``.
    """
    if found is None or found.num_rows == 0:
        raise missing_keys_error(keys)
    at = pc.index_in(pa.array(list(keys), type=found.schema.field(pk).type), value_set=found.column(pk))
    rows = at.to_pylist()
    missing: list[int | str] = [k for k, row in zip(keys, rows, strict=True) if row is None]
    if missing:
        raise missing_keys_error(missing)
    return rows
