"""Garbage-collector pauses of a serving process: measured, and kept short.

A full (generation 2) collection walks every object the process holds. After startup that
is mostly the imported modules, pydantic schemas and SQLAlchemy metadata, none of which
ever becomes garbage; a collection that walks them stops the event loop (and so every
relay delivery) for as long as the walk takes. :func:`freeze_startup_heap` moves what
startup allocated into the permanent generation, so later collections walk only what
serving allocates. :func:`watch_gc_pauses` times each collection into
``agentbus_gc_pause_seconds`` so a pause shows up next to the relay's stage delays.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from api.app import metrics

_started: list[float] = []


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _started.append(time.perf_counter())
    elif _started:
        pause = time.perf_counter() - _started.pop()
        metrics.GC_PAUSE.labels(str(info.get("generation", "?"))).observe(pause)


def watch_gc_pauses() -> None:
    """Time every collection of this process (idempotent)."""
    if _on_gc not in gc.callbacks:
        gc.callbacks.append(_on_gc)


def freeze_startup_heap() -> None:
    """Exempt everything allocated so far from future collections (call once, when ready).

    Collects first, so no garbage is frozen with the live objects.
    """
    gc.collect()
    gc.freeze()
