"""Alembic environment: async engines (aiosqlite, asyncpg), the URL given in code."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection, make_url

from bus.settings import BusSettings
from bus.store.engine import make_engine
from bus.store.migrate import ROLE_NAME
from bus.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    # bus.store.migrate passes the URL in attributes; the settings are the fallback for a
    # hand-built Config.
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    return url or BusSettings().resolved_database_url()


def _configure(**kwargs: Any) -> None:
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        # SQLite can't ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=make_url(_url()).get_backend_name() == "sqlite",
        **kwargs,
    )


def run_migrations_offline() -> None:
    """Emit the SQL to stdout instead of running it (``alembic upgrade --sql``)."""
    _configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


#: Postgres advisory lock key of migrations: concurrent upgrades (several init steps, a
#: Job re-applied during a rollout) run one after another; the later ones find the head.
MIGRATION_LOCK = 0x61676E7462757300  # "agntbus\0"


def do_run_migrations(connection: Connection) -> None:
    """Run the migrations on a sync facade of the async connection."""
    _configure(connection=connection)
    postgres = connection.dialect.name == "postgresql"
    with context.begin_transaction():
        if postgres:
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        context.run_migrations()
        grant_to = config.attributes.get("grant_to")
        if grant_to and postgres:
            _grant(connection, grant_to)


def _grant(connection: Connection, role: str) -> None:
    # The application's role reads and writes rows; it owns nothing, so row-level
    # security applies to it (an owner or superuser would bypass it).
    if not ROLE_NAME.match(role):
        raise ValueError(f"not a role name: {role!r}")
    connection.execute(text(f'GRANT USAGE ON SCHEMA public TO "{role}"'))
    connection.execute(
        text(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"')
    )
    connection.execute(text(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO "{role}"'))
    # The schema version is the migrations' business; the app only reads it.
    connection.execute(text(f'REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM "{role}"'))


async def run_async_migrations() -> None:
    """Open an async engine, migrate through ``run_sync``, and always dispose of it."""
    engine = make_engine(_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(do_run_migrations)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    asyncio.run(run_async_migrations())
