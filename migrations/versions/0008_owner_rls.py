"""Runs and conversations belong to a user; row-level security on every tenant table (issue 13).

Indexes for the per-user lists (a user's runs, a user's conversations) and the audit log's
run filter. On Postgres, row-level security on every table that holds a tenant's rows,
keyed on the transaction's settings that the store sets (see ``bus.store.scope``):

* ``runs``, ``conversations``, ``checkpoints``, ``audit_log``: the scope's tenant and its
  user, or every user of the tenant when ``app.all_subjects`` is on;
* ``messages``: the scope's tenant, and only while its conversation is visible;
* ``audit_heads``, ``tenant_settings``: the scope's tenant;
* every one of them: everything when ``app.all_tenants`` is on (operator tools only).

``api_keys`` stays without a policy: authentication finds a key by its id before anyone
knows the tenant, and only a digest is stored.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# current_setting(..., true) is NULL when the setting was never made in the session and ''
# after a transaction-local one ended: neither equals a tenant id, so no scope, no rows.
_TENANT = "current_setting('app.tenant_id', true)"
_SUBJECT = "current_setting('app.subject', true)"
_ALL_SUBJECTS = "current_setting('app.all_subjects', true) = 'on'"
_ALL_TENANTS = "current_setting('app.all_tenants', true) = 'on'"

_OWNED = f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND ({_ALL_SUBJECTS} OR subject = {_SUBJECT}))"
_TENANT_ONLY = f"{_ALL_TENANTS} OR tenant_id = {_TENANT}"
# The subquery on conversations is itself filtered by that table's policy.
_MESSAGES = (
    f"{_ALL_TENANTS} OR (tenant_id = {_TENANT} AND EXISTS "
    "(SELECT 1 FROM conversations c WHERE c.id = messages.conversation_id))"
)
POLICIES = {
    "runs": _OWNED,
    "conversations": _OWNED,
    "checkpoints": _OWNED,
    "audit_log": _OWNED,
    "messages": _MESSAGES,
    "audit_heads": _TENANT_ONLY,
    "tenant_settings": _TENANT_ONLY,
}
# Migration 0006's policy on checkpoints (tenant only), replaced here, restored on downgrade.
_OLD_CHECKPOINTS = "checkpoints_tenant_isolation"
_OLD_CHECKPOINTS_RULE = "tenant_id = current_setting('app.tenant_id', true)"
_INDEXES = (
    ("ix_runs_tenant_id_subject_created_at", "runs", ["tenant_id", "subject", "created_at"]),
    (
        "ix_conversations_tenant_id_subject_updated_at",
        "conversations",
        ["tenant_id", "subject", "updated_at"],
    ),
    ("ix_audit_log_tenant_id_run_id", "audit_log", ["tenant_id", "run_id"]),
)


def _policy(table: str) -> str:
    return f"{table}_scope"


def upgrade() -> None:
    """Add the per-user indexes; on Postgres, the row-level security policies."""
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)
    if op.get_context().dialect.name != "postgresql":
        return  # SQLite has no row-level security; the store's WHERE clauses scope it
    op.execute(f"DROP POLICY IF EXISTS {_OLD_CHECKPOINTS} ON checkpoints")
    for table, rule in POLICIES.items():
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        # FORCE: the table's owner (usually the app's own role) is bound by the policy too.
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY {_policy(table)} ON {table} USING ({rule}) WITH CHECK ({rule})")


def downgrade() -> None:
    """Drop the policies (restoring 0006's on checkpoints) and the indexes."""
    if op.get_context().dialect.name == "postgresql":
        for table in POLICIES:
            op.execute(f"DROP POLICY IF EXISTS {_policy(table)} ON {table}")
            if table != "checkpoints":
                op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
                op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {_OLD_CHECKPOINTS} ON checkpoints"
            f" USING ({_OLD_CHECKPOINTS_RULE}) WITH CHECK ({_OLD_CHECKPOINTS_RULE})"
        )
    for name, table, _ in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
