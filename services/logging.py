"""structlog set-up shared by every role."""

from __future__ import annotations

import logging
import os
import sys

import structlog


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
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(role=role)
