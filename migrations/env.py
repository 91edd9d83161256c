"""Alembic environment: async engines (aiosqlite, asyncpg), the URL given in code."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection, make_url

from bus.settings import BusSettings
from bus.store.engine import make_engine
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


def do_run_migrations(connection: Connection) -> None:
    """Run the migrations on a sync facade of the async connection."""
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


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
