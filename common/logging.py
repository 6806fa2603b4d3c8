"""structlog set-up shared by every role."""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

import structlog


class LineLogger:
    """structlog's logger: one ``os.write`` of each line to a file descriptor, never raising.

    The log file may sit on a disk that is full (``DIR/logs`` beside the WAL):
    a line that cannot be written is dropped and counted instead of raising
    ``OSError`` into whatever code was logging (an RPC handler, the WAL's
    writer), and the next line that gets through says how many were lost.
    Unbuffered, so a failed write leaves nothing behind to retry later.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()  # worker threads log too
        self.dropped = 0
        self._torn = False

    def msg(self, message: str) -> None:
        with self._lock:
            line = message + "\n"
            if self.dropped:
                line = f"log_lines_dropped={self.dropped} (the log could not be written)\n" + line
            if self._torn:
                line = "\n" + line  # the end of a line cut short
            data = memoryview(line.encode("utf-8", "replace"))
            whole = len(data)
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                self.dropped += 1
                self._torn = self._torn or len(data) < whole
                return
            self.dropped, self._torn = 0, False

    log = debug = info = warn = warning = error = err = fatal = exception = critical = msg


def _line_logger_factory(fd: int) -> Any:
    logger = LineLogger(fd)
    return lambda *args: logger


#: Names accepted for a log level, lowest first (``/log/level`` and ``STRATA_LOG_LEVEL``).
LEVELS = ("debug", "info", "warning", "error", "critical")
#: ``STRATA_LOG_FORMAT``: ``text`` (key=value, the default) or ``json`` (one JSON object a line).
FORMATS = ("text", "json")
_LEVEL_NUMBERS = {name: getattr(logging, name.upper()) for name in LEVELS}
_METHOD_NUMBERS = {**_LEVEL_NUMBERS, "warn": logging.WARNING, "fatal": logging.CRITICAL,
                   "exception": logging.ERROR, "err": logging.ERROR, "msg": logging.INFO, "log": logging.INFO}


class _Threshold:
    """The process's log level, changeable while it runs (``set_level``).

    Loggers are cached on first use, so the level is checked by a processor
    on every call rather than baked into the loggers' classes.
    """

    number = logging.INFO


_threshold = _Threshold()


def _drop_below_level(logger: Any, method_name: str, event_dict: Any) -> Any:
    if _METHOD_NUMBERS.get(method_name, logging.INFO) < _threshold.number:
        raise structlog.DropEvent
    return event_dict


def parse_level(name: str) -> int:
    """The ``logging`` number of a level name (any case; ``warn`` is ``warning``); ``ValueError`` otherwise."""
    key = name.strip().lower()
    key = "warning" if key == "warn" else key
    if key not in _LEVEL_NUMBERS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {name!r}")
    return _LEVEL_NUMBERS[key]


def set_level(name: str) -> str:
    """Log at ``name`` and above from now on, in every logger of the process; returns the level's name."""
    number = parse_level(name)
    _threshold.number = number
    logging.getLogger().setLevel(number)
    return current_level()


def current_level() -> str:
    return logging.getLevelName(_threshold.number).lower()


def configure_logging(role: str, level: str | None = None, fmt: str | None = None) -> None:
    """Log lines to stderr, each tagged with the process role.

    ``level`` (else ``STRATA_LOG_LEVEL``, else info) can be changed later with
    ``set_level``; ``fmt`` (else ``STRATA_LOG_FORMAT``) is ``text`` (key=value)
    or ``json``. An unknown level or format falls back to info or text.
    """
    try:
        lvl = parse_level(level or os.environ.get("STRATA_LOG_LEVEL", "INFO"))
    except ValueError:
        lvl = logging.INFO
    _threshold.number = lvl
    kind = (fmt or os.environ.get("STRATA_LOG_FORMAT", "text")).strip().lower()
    renderer: Any
    if kind == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.processors.KeyValueRenderer(
            key_order=["timestamp", "level", "event", "component"], drop_missing=True
        )
    logging.basicConfig(stream=sys.stderr, level=lvl, format="%(message)s")
    structlog.configure(
        processors=[
            _drop_below_level,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        # Every level reaches the processors; _drop_below_level applies the current threshold.
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=_line_logger_factory(sys.stderr.fileno()),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(role=role)
