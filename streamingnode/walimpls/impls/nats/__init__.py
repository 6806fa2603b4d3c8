"""The ``nats`` WAL backend: one JetStream stream per channel, fenced by term markers."""

from .nats_wal import NatsWAL
from .opener import NatsWALOpener, NatsWALOptions, nats_opener, parse_servers
from .scanner import NatsScanner

__all__ = [
    "NatsScanner",
    "NatsWAL",
    "NatsWALOpener",
    "NatsWALOptions",
    "nats_opener",
    "parse_servers",
]
