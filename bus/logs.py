"""structlog JSON logging with run id, tenant, role and step bound through contextvars."""

from __future__ import annotations

import io
import logging
import sys
from typing import TextIO, cast

import structlog


class _Stderr(io.TextIOBase):
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up (a
    test runner swaps and closes it between tests; cached loggers keep their file)."""

    def write(self, s: str) -> int:
        return sys.stderr.write(s)

    def flush(self) -> None:
        sys.stderr.flush()


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
        logger_factory=structlog.PrintLoggerFactory(cast(TextIO, _Stderr())),
        cache_logger_on_first_use=True,
    )


def get(name: str) -> structlog.stdlib.BoundLogger:
    """A logger for one module."""
    return structlog.get_logger(name)  # type: ignore[no-any-return]
