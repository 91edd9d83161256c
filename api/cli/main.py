"""The ``agentbus`` command line.

Each command lives in the module named for it (``api/cli/ask.py`` is ``agentbus ask``) and
is imported only when it runs: ``agentbus --help`` reads the summaries below and imports no
part of the system. ``tests/unit/api/test_cli_lazy.py`` checks that each summary is its
command's own first help line.

``agentbus bench`` and ``agentbus eval`` come with distributions of their own (api/bench,
api/evals; the ``bench`` and ``evals`` extras): they import the product, never the other way
round, so the command line finds them by name through the ``agentbus.commands`` entry
points, and says which extra to install when one is missing.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

# httpx imports its own command-line tool (``httpx._main``: click, rich, pygments) whenever
# those are installed, a quarter of a second that every command talking HTTP would pay
# first. agentbus never runs it; a ``None`` here makes that import fail, and httpx then
# defines a stand-in ``httpx.main`` instead.
sys.modules.setdefault("httpx._main", None)  # pyright: ignore[reportArgumentType]

import typer  # noqa: E402
from typer import _click as click  # noqa: E402  # pyright: ignore[reportPrivateUsage]
from typer.core import TyperCommand, TyperGroup  # noqa: E402

from api.cli.lazy_coercion import Group  # noqa: E402

# typer vendors click (``typer._click``): its groups, commands and contexts are those classes,
# so the root group's stand-ins and signatures use them too.


@dataclass(frozen=True, slots=True)
class Entry:
    """Where a command is defined: ``module``'s ``attr``, a ``typer.Typer`` or a function."""

    module: str
    attr: str
    summary: str


@dataclass(frozen=True, slots=True)
class Plugin:
    """A command another distribution provides, installed with agentbus's ``extra``: its
    entry point of the same name in :data:`PLUGIN_GROUP` names a ``typer.Typer``."""

    extra: str
    summary: str


#: The entry-point group of the commands other distributions provide.
PLUGIN_GROUP = "agentbus.commands"


COMMANDS: dict[str, Entry | Plugin] = {
    "up": Entry(
        "api.cli.serve", "up", "Start the whole system on embedded defaults (Ctrl-C stops it)."
    ),
    "worker": Entry(
        "api.cli.serve",
        "worker",
        "Run workers of one or more roles (scale out by starting more of them).",
    ),
    "api": Entry(
        "api.cli.serve",
        "api",
        "Serve the REST API, the websocket edge and /docs; scale out behind a load balancer.",
    ),
    "ask": Entry(
        "api.cli.ask",
        "ask",
        "Ask a question; the run's events stream to the terminal as they happen.",
    ),
    "mcp": Entry(
        "api.cli.mcp",
        "mcp_cmd",
        "Serve agentbus's MCP tools (ask, resume, search_docs) over stdio, through a running API.",
    ),
    "ingest": Entry(
        "api.cli.ingest",
        "ingest",
        "Ingest documents: chunk, embed and store them for search_docs (idempotent).",
    ),
    "login-url": Entry(
        "api.cli.login_url",
        "login_url_cmd",
        "Print a new one-time sign-in link to the web page of a running `agentbus up`.",
    ),
    "runs": Entry("api.cli.runs", "app", "Runs: resume a paused run."),
    "schedules": Entry(
        "api.cli.schedules", "app", "Scheduled questions: asked on a cron schedule."
    ),
    "teams": Entry(
        "api.cli.teams", "app", "Teams: agents and their hand-offs, declared as documents."
    ),
    "memory": Entry(
        "api.cli.memory",
        "app",
        "Long-term memories: what you said about yourself, given to runs as notes.",
    ),
    "keys": Entry(
        "api.cli.keys", "app", "API keys: each maps to a tenant, a subject, a role and ACL groups."
    ),
    "tools": Entry("api.cli.tools", "app", "Gateway tools: list them, call one."),
    "audit": Entry("api.cli.audit", "app", "The gateway's audit log."),
    "retention": Entry(
        "api.cli.retention", "app", "Retention: delete what each tenant keeps no longer."
    ),
    "erase": Entry(
        "api.cli.erase",
        "erase",
        "Erase a user's data: conversations, runs, keys, documents, Redis state; audit redacted.",
    ),
    "graph": Entry("api.cli.graph", "app", "The agent graph."),
    "streams": Entry("api.cli.streams", "app", "Role streams: length, lag and pending per group."),
    "dlq": Entry("api.cli.dlq", "app", "The dead-letter streams."),
    "schema": Entry("api.cli.schema", "app", "Message JSON Schemas."),
    "db": Entry("api.cli.db", "app", "The state store."),
    "backup": Entry(
        "api.cli.backup",
        "backup",
        "Back up the embedded Redis, vector store and SQLite store, while `up` runs or not.",
    ),
    "restore": Entry(
        "api.cli.backup",
        "restore",
        "Restore a backup into the data folder (stop `up` first); the replaced data is kept.",
    ),
    "deploy": Entry("api.cli.deploy", "app", "Deployment files."),
    "eval": Plugin("evals", "Evaluations on data the project ships."),
    "bench": Plugin("bench", "Benchmarks; each prints its figures (one JSON line with --json)."),
}


def load(name: str) -> click.Command:
    """The click command of ``name``, importing its module (a plugin's, by entry point).

    Raises:
        click.ClickException: a plugin command whose distribution is not installed.
    """
    entry = COMMANDS[name]
    if isinstance(entry, Plugin):
        obj: Any = _plugin(name, entry)
    else:
        obj = getattr(importlib.import_module(entry.module), entry.attr)
    if isinstance(obj, typer.Typer):
        group = typer.main.get_group(obj)
        group.name = name
        return _plain(group)
    single = typer.Typer(add_completion=False)
    single.command(name=name)(obj)
    return _plain(typer.main.get_command(single))


def _plugin(name: str, plugin: Plugin) -> Any:
    """The object the entry point ``name`` of :data:`PLUGIN_GROUP` names."""
    from importlib.metadata import entry_points

    found = entry_points(group=PLUGIN_GROUP, name=name)
    if not found:
        raise click.ClickException(
            f"`agentbus {name}` comes with the {plugin.extra!r} extra, which is not installed: "
            f"pip install 'agentbus[{plugin.extra}]' (in a checkout: make install)"
        )
    return next(iter(found)).load()


def _plain(command: click.Command) -> click.Command:
    """``command`` and its subcommands with plain help, as the root's (no rich: see below)."""
    if isinstance(command, TyperCommand | TyperGroup):
        command.rich_markup_mode = None
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _plain(sub)
    return command


class LazyGroup(Group):
    """The root group: lists commands from their summaries, imports one only to run it."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, in the order of ``COMMANDS``."""
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A summary stand-in (for help and completion listings); never imports."""
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        return TyperCommand(cmd_name, help=entry.summary, short_help=entry.summary)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Plain help: rich's renderer alone takes ~0.4 s to import, twice the rest."""
        super(TyperGroup, self).format_help(ctx, formatter)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The real command that ``args`` name, imported now."""
        if args and args[0] in COMMANDS:
            return args[0], load(args[0]), args[1:]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=LazyGroup,
    no_args_is_help=True,
    help="agentbus: multi-agent question answering on Redis.",
)


@app.callback()
def main() -> None:
    """agentbus: multi-agent question answering on Redis."""


if __name__ == "__main__":
    app()
