"""Where the data coordinator keeps its state in etcd: the key prefixes and keys of segments, channel
checkpoints, jobs and row deltas, and the JSON of a value.
"""

from __future__ import annotations

import json

from common.segment import SegmentMeta

SEGMENT_PREFIX = "datacoord/segment/"
CHECKPOINT_PREFIX = "datacoord/channel-cp/"
JOB_PREFIX = "datacoord/job/"
ROW_DELTA_PREFIX = "datacoord/row-delta/"


def segment_key(meta: SegmentMeta) -> str:
    return f"{SEGMENT_PREFIX}{meta.collection_id}/{meta.segment_id}"


def job_key(job_id: int) -> str:
    return f"{JOB_PREFIX}{job_id}"


def json_of(raw: bytes) -> dict[str, object]:
    d = json.loads(raw)
    assert isinstance(d, dict)
    return d


def dumps(d: dict[str, object]) -> bytes:
    return json.dumps(d).encode()
