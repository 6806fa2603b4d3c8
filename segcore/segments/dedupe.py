"""One row per primary key when query answers of several segments are merged.

Within a segment a read sees one row per key (``mvcc``). Across segments a key
has several live rows when it was inserted into more than one partition: as in
Milvus, each row is live (``count(*)`` counts them) and a query returns the
newest (Milvus's ``MergeSegcoreRetrieveResults`` keeps the largest timestamp).
Pure and vectorised; the worker and the delegator call it on the ``_ts`` their
segments return.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN


def newest_per_key(table: pa.Table, pk: str, *, limit: int | None = None) -> pa.Table:
    """``table``'s rows sorted by ``pk``, one per key (the largest ``_ts``), at most ``limit``.

    Each input's rows hold one row per key; a key found in two of them keeps the newer row
    (equal timestamps: the one first in ``table``).
    """
    if table.num_rows == 0:
        return table
    order = pc.sort_indices(table, sort_keys=[(pk, "ascending"), (TIMESTAMP_COLUMN, "descending")])
    ordered = table.take(order)
    keys = ordered.column(pk).combine_chunks()
    first = np.ones(len(keys), dtype=bool)
    if len(keys) > 1:
        first[1:] = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(zero_copy_only=False)
    kept = ordered if first.all() else ordered.filter(pa.array(first))
    return kept if limit is None else kept.slice(0, limit)
