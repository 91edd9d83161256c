"""The API process's GC pause metric and the startup-heap freeze."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from api.app import metrics
from api.compose import gc_pauses


@pytest.fixture
def restore_gc() -> Iterator[None]:
    callbacks = list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.unfreeze()


def _observed() -> float:
    total = 0.0
    for family in metrics.GC_PAUSE.collect():
        for sample in family.samples:
            if sample.name.endswith("_count"):
                total += sample.value
    return total


@pytest.mark.usefixtures("restore_gc")
def test_every_collection_is_timed_once() -> None:
    gc_pauses.watch_gc_pauses()
    gc_pauses.watch_gc_pauses()  # idempotent: one callback, one observation per pass
    before = _observed()
    gc.collect()
    assert _observed() == before + 1


@pytest.mark.usefixtures("restore_gc")
def test_freeze_moves_the_live_heap_out_of_collections() -> None:
    gc.unfreeze()
    gc_pauses.freeze_startup_heap()
    assert gc.get_freeze_count() > 0
    # A full collection now walks only what was allocated since, not the startup heap.
    assert len(gc.get_objects(generation=2)) < gc.get_freeze_count() // 100
