"""Retention policies: how many days a tenant keeps each kind of data (None: forever).

The deployment's default is ``AGENTBUS_RETENTION``; a tenant's admin overlays it with the
``retention`` preference (``PUT /api/v1/settings``). `bus.store.retention` deletes what a
policy lets go; `bus.retention_passes` runs the passes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["runs", "messages", "checkpoints", "blobs", "audit"]
#: Every kind a tenant keeps for a time, in the order a pass prunes them.
KINDS: tuple[Kind, ...] = ("runs", "messages", "checkpoints", "blobs", "audit")
#: The longest retention accepted: a hundred years.
MAX_DAYS = 36_500


def _days(description: str) -> Any:
    return Field(default=None, ge=1, le=MAX_DAYS, description=description)


class RetentionPolicy(BaseModel):
    """Days each kind is kept; None keeps it forever (the default of every kind)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: int | None = _days("Days an ended run (answer, events, results) is kept.")
    messages: int | None = _days("Days a conversation nobody touched is kept.")
    checkpoints: int | None = _days("Days a gate that ended or expired is kept.")
    blobs: int | None = _days("Days an ended run's stored blobs (bulky tool results) are kept.")
    audit: int | None = _days("Days an audit row is kept (the chain's anchor moves past it).")

    def over(self, defaults: RetentionPolicy) -> RetentionPolicy:
        """This policy where it says something, ``defaults`` elsewhere."""
        return defaults.model_copy(update=self.model_dump(exclude_none=True))

    def cutoff(self, kind: Kind, now: datetime) -> datetime | None:
        """What of ``kind`` older than this is deleted (None: keep it all)."""
        days: int | None = getattr(self, kind)
        return None if days is None else now - timedelta(days=days)
