"""structlog JSON logging with run id, tenant, role and step bound through contextvars.

Records of the standard library's loggers (uvicorn, httpx, alembic...) go through the same
processors, so every line on stderr is one JSON object; with tracing on, each carries the
current ``trace_id`` and ``span_id``.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO, cast

import structlog

from bus import tracing


def add_trace_ids(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """The current span's ``trace_id`` and ``span_id`` (nothing when tracing is off)."""
    if tracing.ENABLED and (found := tracing.ids()) is not None:
        event["trace_id"], event["span_id"] = found
    return event


class _Stderr(io.TextIOBase):
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up (a
    test runner swaps and closes it between tests; cached loggers keep their file)."""

    def write(self, s: str) -> int:
        return sys.stderr.write(s)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(level: str = "info", *, json: bool = True) -> None:
    """Set up structlog once per process (JSON lines on stderr), stdlib loggers included."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        add_trace_ids,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(cast(TextIO, _Stderr())),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(cast(TextIO, _Stderr()))
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, "_agentbus", False)]
    handler._agentbus = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic", "httpx"):
        logger = logging.getLogger(name)
        logger.handlers = []  # their own plain-text handlers would print the line twice
        logger.propagate = True
    # httpx logs every request at INFO (one line per model or tool request), alembic each
    # migration step on every start: noise unless asked for with AGENTBUS_LOG_LEVEL=debug.
    for chatty in ("httpx", "alembic"):
        logging.getLogger(chatty).setLevel(numeric if numeric <= logging.DEBUG else logging.WARNING)


def get(name: str) -> structlog.stdlib.BoundLogger:
    """A logger for one module."""
    return structlog.get_logger(name)  # type: ignore[no-any-return]
