"""Retrieval (issue 6): no tables; chunks live in Qdrant, ingest job progress in Redis.

The revision stays in the chain (reserved for documents and ingest jobs) so later work can
add a durable ingest-job table here without renumbering.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Nothing: retrieval keeps no SQL state yet."""


def downgrade() -> None:
    """Nothing to undo."""
