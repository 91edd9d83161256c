"""Schema migrations, run in code: there is no alembic.ini, the URL comes from the caller."""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from bus.errors import StoreError
from bus.store.engine import make_engine, safe_url

#: A Postgres role name agentbus will put into a GRANT (quoted, and checked first).
ROLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

# The repository's top-level ``migrations/`` folder (the layout is fixed by the brief).
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def upgrade(url: str, revision: str = "head", *, grant_to: str | None = None) -> None:
    """Migrate the database at ``url`` up to ``revision``; a no-op when already there.

    Blocks; call it from synchronous code (the CLI) or use ``upgrade_async``. On Postgres,
    concurrent upgrades wait for each other (an advisory lock), and ``grant_to`` names the
    application's role, which gets read and write access to the tables (not their
    ownership: row-level security binds a role that does not own the table).

    Raises:
        StoreError: the database is unreachable or a migration failed.
        RuntimeError: called from inside a running event loop.
    """
    if grant_to is not None and not ROLE_NAME.match(grant_to):
        raise StoreError(
            f"not a Postgres role name: {grant_to!r}",
            hint="letters, digits and underscores, starting with a letter or underscore",
        )
    _run(command.upgrade, url, revision, grant_to=grant_to)


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``"base"`` drops everything).

    Raises:
        StoreError: the database is unreachable or a migration failed.
        RuntimeError: called from inside a running event loop.
    """
    _run(command.downgrade, url, revision)


async def upgrade_async(url: str, revision: str = "head", *, grant_to: str | None = None) -> None:
    """``upgrade`` for async callers: runs in a worker thread with its own event loop."""
    await asyncio.to_thread(functools.partial(upgrade, url, revision, grant_to=grant_to))


async def downgrade_async(url: str, revision: str) -> None:
    """``downgrade`` for async callers: runs in a worker thread with its own event loop."""
    await asyncio.to_thread(downgrade, url, revision)


def head_revision() -> str:
    """The newest migration this code ships."""
    head = ScriptDirectory.from_config(make_config("sqlite://")).get_current_head()
    if head is None:
        raise StoreError(f"no migrations in {MIGRATIONS_DIR}")
    return head


def known_revision(revision: str) -> bool:
    """True when this code ships the migration ``revision`` (false for a newer version's)."""
    try:
        script = ScriptDirectory.from_config(make_config("sqlite://"))
        script.get_revision(revision)
    except (CommandError, RevisionError):
        return False
    return True


async def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at (None before the first migration)."""
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(
                lambda sync: MigrationContext.configure(sync).get_current_revision()
            )
    finally:
        await engine.dispose()


async def wait_for_head(url: str, timeout_s: float, poll_s: float = 2.0) -> str:
    """Wait until the database at ``url`` is migrated to this code's head (or past it, by a
    later release); the revision.

    A worker's init step: the migration runs once elsewhere (a Job), and the process
    starts only on the schema it was written for, or on a later release's: migrations are
    additive within a rolling upgrade (docs/upgrades.md), so a pod of the release being
    replaced that restarts after the migration still starts.

    Raises:
        StoreError: the head was not reached within ``timeout_s``.
    """
    head = head_revision()
    deadline = time.monotonic() + timeout_s
    seen: str | None = None
    while True:
        try:
            seen = await current_revision(url)
        except (SQLAlchemyError, OSError) as e:
            seen = f"unreachable ({type(e).__name__})"
        if seen == head:
            return head
        if seen is not None and _later_than(seen, head):
            return seen
        if time.monotonic() >= deadline:
            raise StoreError(
                f"store at {safe_url(url)} is at {seen!r}, not {head!r}, after {timeout_s:g} s",
                hint="run `agentbus db upgrade` (the migration Job) with this image's version",
            )
        await asyncio.sleep(poll_s)


def _later_than(seen: str, head: str) -> bool:
    # Revisions are numbered (0001, 0002, ...): one numbered past this code's head is a
    # later release's, which this code cannot know.
    return seen.isdigit() and head.isdigit() and int(seen) > int(head)


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


def _run(
    step: Callable[[Config, str], None], url: str, revision: str, *, grant_to: str | None = None
) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # env.py drives the async driver with asyncio.run(), which can't nest in a loop.
        raise RuntimeError("called inside a running event loop; await the *_async variant")
    try:
        config = make_config(url)
        config.attributes["grant_to"] = grant_to
        step(config, revision)
    except (SQLAlchemyError, OSError, CommandError) as e:
        cause = e.orig if isinstance(e, DBAPIError) else e
        raise StoreError(f"migrating {safe_url(url)} to {revision!r} failed: {cause}") from e
