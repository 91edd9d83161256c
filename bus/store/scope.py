"""Who a store call acts for, and how that becomes SQL: WHERE clauses and RLS settings.

Every read and write of a tenant's rows names a :class:`Scope`. The repositories turn it
into WHERE clauses on every backend and, on Postgres, into the transaction's settings that
the row-level security policies read (migration 0008), so a statement that forgot its
WHERE still sees only the scope's rows:

* ``app.tenant_id``: the tenant;
* ``app.subject``: the user;
* ``app.all_subjects``: ``on`` for a scope that reads every user's rows of the tenant
  (an admin key, or the tenant's own bookkeeping such as its audit chain);
* ``app.all_tenants``: ``on`` only for operator tools that check every tenant (``agentbus
  audit verify``); no API request ever sets it.

The settings are transaction-local (``set_config(..., true)``): a pooled connection never
carries one caller's scope into another's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, TextClause, and_, text, true
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["ALL_TENANTS", "Scope", "apply_scope", "apply_scope_sync"]

# Tenant names follow the bus's name pattern, which has no '*': this can never be a tenant.
ALL_TENANTS = "*"

_SET = text(
    "SELECT set_config('app.tenant_id', :tenant, true),"
    " set_config('app.subject', :subject, true),"
    " set_config('app.all_subjects', :all_subjects, true),"
    " set_config('app.all_tenants', :all_tenants, true)"
)


@dataclass(frozen=True, slots=True)
class Scope:
    """The tenant and user a store call acts for.

    Attributes:
        tenant_id: the tenant; ``ALL_TENANTS`` only for operator tools (`Scope.operator`).
        subject: the user. Writes that need an owner (continue, delete, resume) always
            require it, whatever ``all_subjects`` says.
        all_subjects: reads see every user's rows of the tenant (admin keys, the tenant's
            bookkeeping); an admin still only writes as itself.
    """

    tenant_id: str
    subject: str
    all_subjects: bool = False

    @classmethod
    def user(cls, tenant_id: str, subject: str) -> Scope:
        """One user of a tenant: sees and changes only that user's rows."""
        return cls(tenant_id, subject)

    @classmethod
    def admin(cls, tenant_id: str, subject: str) -> Scope:
        """A tenant admin: reads every user's rows of the tenant, writes as ``subject``."""
        return cls(tenant_id, subject, all_subjects=True)

    @classmethod
    def tenant(cls, tenant_id: str) -> Scope:
        """The tenant's own bookkeeping (its audit chain, its settings): no particular user."""
        return cls(tenant_id, "", all_subjects=True)

    @classmethod
    def operator(cls) -> Scope:
        """Every tenant: for operator tools run with the database's credentials only."""
        return cls(ALL_TENANTS, "", all_subjects=True)

    @property
    def all_tenants(self) -> bool:
        """Whether this is the operator's scope over every tenant."""
        return self.tenant_id == ALL_TENANTS

    def sees(self, tenant_id: str, subject: str | None) -> bool:
        """Whether a row of ``tenant_id`` (owned by ``subject``, if it has one) is visible."""
        if self.all_tenants:
            return True
        if tenant_id != self.tenant_id:
            return False
        return subject is None or self.all_subjects or subject == self.subject

    def owns(self, subject: str) -> bool:
        """Whether this scope's user is ``subject`` (the owner check of writes)."""
        return not self.all_tenants and subject == self.subject

    def where(self, model: Any, *, owner: bool = False) -> ColumnElement[bool]:
        """The WHERE clause of the rows of ``model`` this scope sees (or owns, with ``owner``).

        Args:
            model: a mapped class or table with ``tenant_id`` and, if rows have an owner,
                ``subject`` columns.
            owner: only the rows whose subject is this scope's (for writes).
        """
        columns = getattr(model, "c", model)
        if self.all_tenants:
            return true()
        clauses: list[ColumnElement[bool]] = [columns.tenant_id == self.tenant_id]
        subject = getattr(columns, "subject", None)
        if subject is not None and (owner or not self.all_subjects):
            clauses.append(subject == self.subject)
        return and_(*clauses) if len(clauses) > 1 else clauses[0]

    def settings(self) -> dict[str, str]:
        """The values of the Postgres settings the row-level security policies read."""
        return {
            "tenant": "" if self.all_tenants else self.tenant_id,
            "subject": self.subject,
            "all_subjects": "on" if self.all_subjects else "off",
            "all_tenants": "on" if self.all_tenants else "off",
        }


async def apply_scope(session: AsyncSession, scope: Scope) -> None:
    """Set the scope for the rest of the session's transaction (Postgres; else nothing)."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(_SET, scope.settings())


def apply_scope_sync(conn: Connection, scope: Scope) -> None:
    """`apply_scope` for a group commit's unit, on its synchronous connection."""
    if conn.dialect.name == "postgresql":
        conn.execute(_SET, scope.settings())


def set_statement() -> TextClause:
    """The statement that sets a scope (for tests that set one by hand)."""
    return _SET
