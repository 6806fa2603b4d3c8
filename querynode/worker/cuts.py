"""Cuts on the wire: an Arrow IPC stream of ``pk`` and ``ts`` (uint64) per segment."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.arrowio import ipc_to_table, table_to_ipc


def encode_cuts(pks: pa.Array, ts: np.ndarray) -> bytes:
    return table_to_ipc(pa.table({"pk": pks, "ts": pa.array(np.asarray(ts, dtype=np.uint64))}))


def decode_cuts(raw: bytes) -> tuple[pa.Array, np.ndarray]:
    t = ipc_to_table(raw)
    return t.column("pk").combine_chunks(), np.asarray(t.column("ts").to_numpy(), dtype=np.uint64)
