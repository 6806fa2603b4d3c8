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


def configure_logging(role: str, level: str | None = None) -> None:
    """Log key=value lines to stderr, each tagged with the process role."""
    lvl = getattr(logging, (level or os.environ.get("STRATA_LOG_LEVEL", "INFO")).upper(), logging.INFO)
    logging.basicConfig(stream=sys.stderr, level=lvl, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(
                key_order=["timestamp", "level", "event", "component"], drop_missing=True
            ),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=_line_logger_factory(sys.stderr.fileno()),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(role=role)
