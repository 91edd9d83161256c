"""Checkpoints record the version of the run state they hold.

``checkpoints.state_version`` is the run-state version the pausing worker wrote; a resume
upcasts an older one (``bus.readers.RUN_STATE``). NULL: a row written by 0.2.0 or
earlier, whose run state is version 2. Additive: 0.2.0's workers keep writing rows (NULL)
while the upgrade rolls.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable column."""
    op.add_column("checkpoints", sa.Column("state_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("state_version")
