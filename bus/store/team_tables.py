"""The table of teams: every version of every tenant's team documents.

Kept apart from ``bus.store.tables`` (same ``Base``, same metadata), as the turn and
schedule tables are; ``bus.store`` imports it, so alembic and the ORM always see it. Read
``bus.store.teams`` for what the rows mean.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from bus.store.tables import Base, UTCDateTime


class TeamRow(Base):
    """One version of a tenant's team, as it was stored (never changed afterwards).

    A run keeps the version it started with, so a version is never deleted while the
    store keeps the team's name: deleting a team marks its versions ``deleted_at``.
    """

    __tablename__ = "teams"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The checked document (``agents.teams.document.TeamDocument`` as JSON).
    document: Mapped[dict[str, Any]] = mapped_column(JSON())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_by: Mapped[str] = mapped_column(String(255))
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
