"""``size_bound``: never below the encoded size, and close to it for the messages the WAL carries."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import example, given
from hypothesis import strategies as st

from common.message import Insert, size_bound
from protos.common_pb2 import Message, MessageType

_text = st.text(max_size=300)
_bytes = st.binary(max_size=3000)
_u64 = st.integers(min_value=0, max_value=2**64 - 1)

messages = st.builds(
    Message,
    type=st.sampled_from(list(MessageType.values())),
    vchannel=_text,
    timetick=_u64,
    last_confirmed=_bytes,
    wal_term=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    header=_bytes,
    body=_bytes,
    properties=st.dictionaries(_text, _text, max_size=5),
)


@given(messages)
@example(  # every varint at its longest
    Message(
        type=max(MessageType.values()),
        vchannel="v" * 200,
        timetick=2**64 - 1,
        last_confirmed=b"c" * 200,
        wal_term=-1,
        header=b"h" * 200,
        body=b"b" * 20_000,
        properties={"k" * 200: "p" * 200, "": ""},
    )
)
def test_the_bound_is_never_below_the_encoded_size(msg: Message) -> None:
    assert size_bound(msg) >= msg.ByteSize()


def test_an_insert_is_bounded_within_a_few_bytes() -> None:
    table = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([[0.5] * 16] * 1000)})
    msg = Insert.of(vchannel="by-dml_0_1v0", collection_id=1, partition_id=2, table=table).encode()
    msg.timetick, msg.wal_term, msg.last_confirmed = 2**62, 7, b"\x00" * 8
    assert msg.ByteSize() <= size_bound(msg) <= msg.ByteSize() + 64
