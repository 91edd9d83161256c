"""What a run's judges concluded (issue 28): runs.verified (true/false/NULL) and why.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add runs.verified (NULL: unknown or not judged) and runs.verified_reason."""
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("verified", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("verified_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop the two columns."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("verified_reason")
        batch.drop_column("verified")
