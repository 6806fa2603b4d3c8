"""Named WAL backends: the streaming node picks its backend by name.

A backend registers a factory that takes the backend's options as keyword
arguments and returns a :class:`WALOpener`. ``local`` and ``nats`` are always
registered.
The table is filled at import time and read afterwards; it holds factories
only, never opened resources.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.errors import InvalidArgument

from .impls.local import local_opener
from .impls.nats import nats_opener
from .wal import WALOpener

WALOpenerFactory = Callable[..., WALOpener]

_BACKENDS: dict[str, WALOpenerFactory] = {}


def register_backend(name: str, factory: WALOpenerFactory) -> None:
    """Make ``factory`` available as backend ``name``.

    Registering the same factory twice is a no-op; a different factory under
    a taken name is an error.
    """
    current = _BACKENDS.get(name)
    if current is not None and current is not factory:
        raise InvalidArgument(f"wal backend {name!r} is already registered")
    _BACKENDS[name] = factory


def build_opener(name: str, **options: Any) -> WALOpener:
    """Build an opener of backend ``name`` with its options.

    Raises ``InvalidArgument`` for an unknown backend or bad options.
    """
    factory = _BACKENDS.get(name)
    if factory is None:
        raise InvalidArgument(
            f"unknown wal backend {name!r}, known: {', '.join(registered_backends())}"
        )
    try:
        return factory(**options)
    except TypeError as err:
        raise InvalidArgument(f"bad options for wal backend {name!r}: {err}") from err


def registered_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    return sorted(_BACKENDS)


register_backend("local", local_opener)
register_backend("nats", nats_opener)
