"""A run's events, narrowed: the events are a union, a test asks for the kind it checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from bus.events import ClientEvent, Done, Event

E = TypeVar("E", bound=Event)


def of_type(events: Sequence[ClientEvent], kind: type[E]) -> list[E]:
    """The events of one kind, in order."""
    return [e for e in events if isinstance(e, kind)]


def only(events: Sequence[ClientEvent], kind: type[E]) -> E:
    """The one event of a kind (fails when there are none or several)."""
    found = of_type(events, kind)
    assert len(found) == 1, f"{len(found)} {kind.__name__} events"
    return found[0]


def last_of(events: Sequence[ClientEvent], kind: type[E]) -> E:
    """The last event, which is of this kind (fails when it is not)."""
    event = events[-1]
    assert isinstance(event, kind), f"the last event is {type(event).__name__}, not {kind.__name__}"
    return event


def final(events: Sequence[ClientEvent]) -> Done:
    """The run's last event, which is ``done``."""
    return last_of(events, Done)
