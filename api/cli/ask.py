"""``agentbus ask``: publish a question onto the bus and render the run live."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from typing import Annotated

import typer
from rich.console import Console

from api import bootstrap
from api.cli.common import run_async, settings
from api.cli.render import LiveRenderer
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish, read_events, request_cancel


@run_async
async def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (id printed after a run).")
    ] = None,
    think: Annotated[bool, typer.Option(help="Ask the model to reason first.")] = False,
    tools: Annotated[bool, typer.Option(help="Let the model call tools.")] = True,
    mode: Annotated[str, typer.Option(help="single | multi | custom")] = "single",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
) -> None:
    """Ask a question; the run's events stream to the terminal as they happen."""
    s = settings()
    run_id = new_run_id()
    conversation_id = conversation or new_run_id()
    command = Command(
        run_id=run_id,
        tenant_id=s.tenant,
        subject=s.subject,
        shard=keys.shard_of(run_id, s.shards),
        role=keys.Role.INTAKE,
        deadline=deadline_in(s.run_deadline_s),
        payload=AgentTask(
            state=RunState(
                question=question,
                conversation_id=conversation_id,
                settings=RunSettings(mode=mode, think=think, use_tools=tools),  # type: ignore[arg-type]
            )
        ),
    )
    console = Console(highlight=False)
    renderer = LiveRenderer(console)
    async with bootstrap.connect(s) as conn:
        await publish(conn.redis, command, s)
        loop = asyncio.get_running_loop()
        cancel = lambda: asyncio.ensure_future(request_cancel(conn.redis, run_id, s))  # noqa: E731
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, cancel)
        status = "done"
        async for event_id, event in read_events(conn.redis, run_id, command.shard):
            if as_json:
                print(json.dumps({"id": event_id, **event.model_dump(mode="json")}), flush=True)
            else:
                renderer.show(event)
            if event.type == "done":
                status = event.status
    if not as_json:
        console.print(f"conversation: {conversation_id}", style="dim")
    if status != "done":
        raise typer.Exit(1)
