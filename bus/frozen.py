"""The base of every message model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of every message: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
