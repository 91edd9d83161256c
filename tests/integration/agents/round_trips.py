"""Count what a run costs: SQL statements and Redis commands, per role.

Each statement or command is charged to the role whose step issued it (the ``role`` the
worker binds in structlog's contextvars for each step). A unit of work handed to the
store's group commit runs later, in the commit's own task: it is charged to the role
that handed it over, as the step that asked for the write. What no step issued (the
consumers' blocking reads, the reclaim and stats loops) is charged to ``-``.

The counts do not depend on the host's speed: they are what the code asks for.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Generator
from typing import Any

import structlog
from redis.asyncio.client import Pipeline, Redis
from sqlalchemy import Engine, event

from bus.redis_io.mux import Mux
from bus.runtime.reads import HeldConnection
from bus.store.group_commit import GroupCommit

NO_ROLE = "-"


def _role() -> str:
    return str(structlog.contextvars.get_contextvars().get("role", NO_ROLE))


class Costs:
    """SQL statements and Redis commands (and round trips), per role."""

    def __init__(self) -> None:
        self.sql: collections.Counter[str] = collections.Counter()
        self.sql_text: dict[str, list[str]] = collections.defaultdict(list)
        self.redis: collections.Counter[str] = collections.Counter()
        self.redis_trips: collections.Counter[str] = collections.Counter()
        self.redis_names: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        self.unit_role: str | None = None  # the role whose group-commit unit runs now

    def clear(self) -> None:
        """Forget everything counted so far."""
        self.sql.clear()
        self.sql_text.clear()
        self.redis.clear()
        self.redis_trips.clear()
        self.redis_names.clear()

    def redis_command(self, names: list[str], role: str | None = None) -> None:
        """Count one round trip carrying ``names``."""
        who = role or _role()
        self.redis[who] += len(names)
        self.redis_trips[who] += 1
        for name in names:
            self.redis_names[who][name] += 1

    def sql_statement(self, statement: str) -> None:
        """Count one SQL statement."""
        who = self.unit_role or _role()
        self.sql[who] += 1
        self.sql_text[who].append(" ".join(statement.split())[:80])

    def of(self, roles: tuple[str, ...]) -> dict[str, tuple[int, int, int]]:
        """Per role: (SQL statements, Redis commands, Redis round trips)."""
        return {r: (self.sql[r], self.redis[r], self.redis_trips[r]) for r in roles}


def _name(arg: Any) -> str:
    return arg.decode() if isinstance(arg, bytes) else str(arg)


def _packed_name(packed: bytes) -> str:
    """The name of a command packed in RESP."""
    return packed.split(b"\r\n")[2].decode().upper()


@contextlib.contextmanager
def counting() -> Generator[Costs]:
    """Count every SQL statement and Redis command issued inside, per role."""
    costs = Costs()
    patches: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        patches.append((owner, name, original))
        setattr(owner, name, make(original))

    def client_command(original: Any) -> Any:
        async def execute_command(self: Any, *args: Any, **options: Any) -> Any:
            costs.redis_command([_name(args[0]).upper()])
            return await original(self, *args, **options)

        return execute_command

    def pipeline_execute(original: Any) -> Any:
        async def execute(self: Any, *args: Any, **kwargs: Any) -> Any:
            names = [_name(c[0][0]).upper() for c in self.command_stack]
            if names:
                costs.redis_command(names)
            return await original(self, *args, **kwargs)

        return execute

    def mux_execute(original: Any) -> Any:
        async def execute(self: Any, *args: Any) -> Any:
            costs.redis_command([_name(args[0]).upper()])
            return await original(self, *args)

        return execute

    def mux_execute_then(original: Any) -> Any:
        async def execute_then(self: Any, then: tuple[Any, ...], *args: Any) -> Any:
            costs.redis_command([_name(args[0]).upper(), _name(then[0]).upper()])
            return await original(self, then, *args)

        return execute_then

    def held_call(original: Any) -> Any:
        async def call(self: Any, packed: bytes) -> Any:
            costs.redis_command([_packed_name(packed)])
            return await original(self, packed)

        return call

    def held_call_then(original: Any) -> Any:
        async def call_then(self: Any, packed: bytes, then: bytes) -> Any:
            costs.redis_command([_packed_name(packed), _packed_name(then)])
            return await original(self, packed, then)

        return call_then

    def group_run(original: Any) -> Any:
        async def run(self: Any, work: Any, action: str) -> Any:
            role = _role()

            def charged(conn: Any) -> Any:
                costs.unit_role = role
                try:
                    return work(conn)
                finally:
                    costs.unit_role = None

            return await original(self, charged, action)

        return run

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        costs.sql_statement(statement)

    patch(Redis, "execute_command", client_command)
    patch(Pipeline, "execute", pipeline_execute)
    patch(Mux, "execute", mux_execute)
    patch(Mux, "execute_then", mux_execute_then)
    patch(HeldConnection, "call", held_call)
    patch(HeldConnection, "call_then", held_call_then)
    patch(GroupCommit, "run", group_run)
    event.listen(Engine, "before_cursor_execute", on_statement)
    try:
        yield costs
    finally:
        event.remove(Engine, "before_cursor_execute", on_statement)
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)
