"""``agentbus ask --api-url``: the same live rendering, against a remote deployment's API.

Everything goes through the Python client (``agentbus_client``): the question is published over
REST, its events stream over the websocket (rejoined with the last event id if the
connection drops), Ctrl-C cancels the run, and a gate is decided at the prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import TYPE_CHECKING, Any

import typer

from agentbus_client import AgentbusError, AsyncAgentbusClient, EventStream, Snapshot

if TYPE_CHECKING:
    from api.cli.render import LiveRenderer

_CHOICES = {
    "approve_answer": ["approve", "reject"],
    "egress_approval": ["egress_allow_once", "egress_allow_always", "egress_deny", "more_info"],
}


def run_remote(
    api_url: str, api_key: str, question: str, options: dict[str, Any], *, as_json: bool
) -> str:
    """:func:`ask_remote` on an event loop of its own (Ctrl-C before the run exists: 130)."""
    try:
        with asyncio.Runner() as runner:
            return runner.run(ask_remote(api_url, api_key, question, options, as_json=as_json))
    except KeyboardInterrupt:
        sys.exit(130)


async def ask_remote(
    api_url: str, api_key: str, question: str, options: dict[str, Any], *, as_json: bool
) -> str:
    """Ask through the API at ``api_url``; the run's final status (raises ``typer.Exit`` on
    an API error or a gate it cannot decide here).

    The terminal renderer (rich) is imported once the question is sent, not before.
    """
    async with AsyncAgentbusClient(api_url, api_key) as client:
        try:
            stream = await client.stream(question, **options)
            from rich.console import Console

            from api.cli.render import LiveRenderer

            console = Console(highlight=False)
            renderer = LiveRenderer(console)
            status = await _follow(client, stream, renderer, as_json=as_json)
        except AgentbusError as e:
            typer.echo(
                f"error [{e.code}]: {e.message}" + (f" ({e.hint})" if e.hint else ""), err=True
            )
            raise typer.Exit(2) from e
    if not as_json:
        renderer.console.print(f"conversation: {stream.conversation_id}", style="dim")
    return status


async def _follow(
    client: AsyncAgentbusClient, stream: EventStream, renderer: LiveRenderer, *, as_json: bool
) -> str:
    loop = asyncio.get_running_loop()
    cancels: set[asyncio.Task[None]] = set()

    def cancel() -> None:
        cancels.add(asyncio.ensure_future(client.cancel(stream.run_id)))

    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, cancel)
    status = "done"
    async with stream:
        async for item in stream:
            if isinstance(item, Snapshot):
                status = _show_snapshot(item, renderer, as_json=as_json)
                continue
            if as_json:
                doc = {"id": stream.last_event_id, **item.model_dump(mode="json")}
                print(json.dumps(doc), flush=True)
            else:
                renderer.show(item)
            if item.type == "approval_request":
                if as_json or not sys.stdin.isatty():
                    where = f"POST /api/v1/runs/{stream.run_id}/resume"
                    typer.echo(f"paused at a gate; decide with: {where}", err=True)
                    raise typer.Exit(3)
                await _decide(client, stream.run_id, item.reason)
            if item.type == "done":
                status = item.status
    await asyncio.gather(*cancels, return_exceptions=True)
    return status


def _show_snapshot(snapshot: Snapshot, renderer: LiveRenderer, *, as_json: bool) -> str:
    if as_json:
        print(snapshot.model_dump_json(), flush=True)
    else:
        renderer.console.print(f"(missed events were trimmed; run is {snapshot.run.status})")
        if snapshot.run.answer:
            renderer.text(snapshot.run.answer + "\n")
    return snapshot.run.status


async def _decide(client: AsyncAgentbusClient, run_id: str, reason: str) -> None:
    """Ask the person at the terminal for the gate's decision, then resume the run."""
    choices = _CHOICES.get(reason, ["approve", "reject"])
    while True:
        decision = await asyncio.to_thread(
            typer.prompt, f"decision ({' / '.join(choices)})", default=choices[0]
        )
        if decision == "more_info":
            typer.echo(json.dumps(await client.gate(run_id), indent=2))
            continue
        if decision in choices:
            break
    await client.resume(run_id, decision)
