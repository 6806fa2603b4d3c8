"""The ``local`` WAL backend: append-only segment files on a local disk."""

from .local_wal import LocalWAL
from .opener import DEFAULT_SEGMENT_BYTES, LocalWALOpener, LocalWALOptions, local_opener
from .scanner import LocalScanner

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "LocalScanner",
    "LocalWAL",
    "LocalWALOpener",
    "LocalWALOptions",
    "local_opener",
]
