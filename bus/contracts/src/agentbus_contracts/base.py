"""The bases of the wire models: what the API answers with (tolerant of fields it does not
know), and what a request or a message carries (no unknown field)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer


class Frozen(BaseModel):
    """Base of every message and request model: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class View(BaseModel):
    """Base of what the API answers with.

    Unknown fields are ignored, so a newer server does not break an older client; the
    server builds these from its own records (``from_attributes``).
    """

    model_config = ConfigDict(extra="ignore", frozen=True, from_attributes=True)


#: A timestamp written as Python's ``isoformat()`` (``...+00:00``), as runs always were.
IsoTime = Annotated[
    datetime, PlainSerializer(datetime.isoformat, return_type=str, when_used="json")
]
