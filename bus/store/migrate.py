"""Schema migrations, run in code: there is no alembic.ini, the URL comes from the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from bus.errors import StoreError
from bus.store.engine import safe_url

# The repository's top-level ``migrations/`` folder (the layout is fixed by the brief).
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` up to ``revision``; a no-op when already there.

    Blocks; call it from synchronous code (the CLI) or use ``upgrade_async``.

    Raises:
        StoreError: the database is unreachable or a migration failed.
        RuntimeError: called from inside a running event loop.
    """
    _run(command.upgrade, url, revision)


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``"base"`` drops everything).

    Raises:
        StoreError: the database is unreachable or a migration failed.
        RuntimeError: called from inside a running event loop.
    """
    _run(command.downgrade, url, revision)


async def upgrade_async(url: str, revision: str = "head") -> None:
    """``upgrade`` for async callers: runs in a worker thread with its own event loop."""
    await asyncio.to_thread(upgrade, url, revision)


async def downgrade_async(url: str, revision: str) -> None:
    """``downgrade`` for async callers: runs in a worker thread with its own event loop."""
    await asyncio.to_thread(downgrade, url, revision)


def make_config(url: str) -> Config:
    """An alembic ``Config`` for the database at ``url``, built without an ini file."""
    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise StoreError(
            f"migration scripts not found in {MIGRATIONS_DIR}",
            hint="run agentbus from a checkout or an install that includes migrations/",
        )
    config = Config()
    # Config values go through configparser interpolation, where '%' is special.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    # The URL travels in ``attributes``, untouched by interpolation: percent-encoded
    # passwords would otherwise break, and it never lands in a config dump.
    config.attributes["url"] = url
    return config


def _run(step: Callable[[Config, str], None], url: str, revision: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # env.py drives the async driver with asyncio.run(), which can't nest in a loop.
        raise RuntimeError("called inside a running event loop; await the *_async variant")
    try:
        step(make_config(url), revision)
    except (SQLAlchemyError, OSError, CommandError) as e:
        cause = e.orig if isinstance(e, DBAPIError) else e
        raise StoreError(f"migrating {safe_url(url)} to {revision!r} failed: {cause}") from e
