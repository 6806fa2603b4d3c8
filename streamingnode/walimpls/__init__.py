"""WAL backends behind one small interface (see README.md)."""

from .registry import build_opener, register_backend, registered_backends
from .wal import (
    DeliverPolicy,
    DeliverPolicyKind,
    LogEntry,
    MessageID,
    Scanner,
    WALImpl,
    WALOpener,
)

__all__ = [
    "DeliverPolicy",
    "DeliverPolicyKind",
    "LogEntry",
    "MessageID",
    "Scanner",
    "WALImpl",
    "WALOpener",
    "build_opener",
    "register_backend",
    "registered_backends",
]
