"""structlog JSON logging with run id, tenant, role and step bound through contextvars."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info", *, json: bool = True) -> None:
    """Set up structlog once per process (JSON lines on stderr)."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def get(name: str) -> structlog.stdlib.BoundLogger:
    """A logger for one module."""
    return structlog.get_logger(name)  # type: ignore[no-any-return]
