"""Arrow IPC encoding: how tables travel inside protobuf ``bytes`` fields."""

from __future__ import annotations

import pyarrow as pa


def table_to_ipc(table: pa.Table) -> bytes:
    """Serialise ``table`` as one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def ipc_to_table(data: bytes) -> pa.Table:
    """Inverse of :func:`table_to_ipc`."""
    with pa.ipc.open_stream(pa.py_buffer(data)) as reader:
        return reader.read_all()
