"""Helpers shared by the command-line modules.

Every command module imports this one to print its help, so it imports nothing of the
system at module level, nor asyncio: the settings, logging and error classes come in when a command
runs (``tests/unit/api/test_cli_lazy.py`` checks that).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer

if TYPE_CHECKING:
    import asyncio

    from api.compose.settings import AppSettings

P = ParamSpec("P")
T = TypeVar("T")


def settings() -> AppSettings:
    """Every package's settings from the environment (``AGENTBUS_*``)."""
    from api.compose.settings import AppSettings

    return AppSettings.load()


def cli_groups(s: AppSettings) -> tuple[str, ...]:
    """The ACL groups of runs the CLI starts (``AGENTBUS_GROUPS``, comma-separated)."""
    return tuple(sorted({g.strip() for g in s.api.groups.split(",") if g.strip()}))


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (not on Windows), else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_async(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """Run an async command body; turn agentbus errors into one clear line and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio  # here, not at the top: a tenth of the time to print a help

        from bus import logs, tracing
        from bus.errors import CodedError
        from bus.settings import BusSettings

        logs.configure(BusSettings().log_level)
        tracing.configure()
        try:
            with asyncio.Runner(loop_factory=loop_factory()) as runner:
                return runner.run(fn(*args, **kwargs))
        except CodedError as e:  # every package's errors: a code, a message, a hint
            typer.echo(f"error [{e.code}]: {e}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            sys.exit(130)

    return wrapper
