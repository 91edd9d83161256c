"""``agentbus ask`` on this machine: start the run on the bus and render it live."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys

import typer
from pydantic import ValidationError
from redis.asyncio import Redis
from rich.console import Console

from agentbus_contracts.questions import QuestionSettings
from agents import gates
from api.app.ask import Ask, Started
from api.app.auth import Principal
from api.app.errors import ApiError
from api.cli.common import cli_groups, run_async, settings
from api.cli.render import LiveRenderer
from api.compose.connection import connect
from api.compose.settings import AppSettings
from api.compose.starter import make_starter
from bus.publish import read_events, request_cancel
from bus.store import KeyRole, Scope, open_store


@run_async
async def ask_local(
    question: str,
    *,
    conversation: str | None,
    parent: int | None,
    multitask: str | None,
    think: bool | None,
    tools: bool | None,
    mode: str | None,
    accuracy: str | None,
    team: str | None,
    model: str | None,
    human_gate: bool,
    sources: str,
    approve_high_risk: bool | None,
    approve_critical: list[str] | None,
    as_json: bool,
) -> None:
    """Ask through this machine's bus: start the run through the API's own starter, as the
    CLI's identity (``AGENTBUS_TENANT``, ``AGENTBUS_SUBJECT``, ``AGENTBUS_GROUPS``), and
    render its events from the run's event stream."""
    s = settings()
    served = s.agents.served_models()
    if model is not None and model not in served:
        typer.echo(f"model {model!r} is not served here; choose one of: {served}", err=True)
        raise typer.Exit(2)
    try:
        chosen = QuestionSettings.model_validate(
            {
                "model": model,
                "mode": mode,
                "accuracy": accuracy,
                "think": think,
                "use_tools": tools,
                "approve_high_risk": approve_high_risk,
                "approve_critical": approve_critical or [],
                "multitask": multitask,
                "team": team,
            }
        )
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        typer.echo(f"error [invalid_request]: --{where.replace('_', '-')}: {err['msg']}", err=True)
        raise typer.Exit(2) from e
    picked = [x.strip() for x in sources.split(",") if x.strip()]
    ask_ = Ask(
        question,
        conversation,
        chosen,
        sources=picked or None,
        human_gate=human_gate,
        parent_message_id=parent,
    )
    console = Console(highlight=False)
    renderer = LiveRenderer(console)
    async with connect(s.bus) as conn:
        started = await _start(s, conn.redis, ask_)
        run_id, conversation_id = started.run_id, started.conversation_id
        loop = asyncio.get_running_loop()
        cancel = lambda: asyncio.ensure_future(request_cancel(conn.redis, run_id, s.bus))  # noqa: E731
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, cancel)
        status = "done"
        async for event_id, event in read_events(conn.redis, run_id, started.shard):
            if as_json:
                print(json.dumps({"id": event_id, **event.model_dump(mode="json")}), flush=True)
            else:
                renderer.show(event)
            if event.type == "approval_request":
                if as_json or not sys.stdin.isatty():
                    hint = f"agentbus runs resume {run_id} DECISION"
                    typer.echo(f"paused at a gate; decide with: {hint}", err=True)
                    raise typer.Exit(3)
                await _decide(s, conn.redis, run_id, event.reason)
            if event.type == "done":
                status = event.status
    if not as_json:
        console.print(f"conversation: {conversation_id}", style="dim")
    if status != "done":
        raise typer.Exit(1)


async def _start(s: AppSettings, redis: Redis, ask: Ask) -> Started:
    """Start the run through the API's own starter: the same defaults (tenant settings,
    default sources), limits and checks as ``POST /api/v1/runs``, as the CLI's identity."""
    who = Principal(
        tenant_id=s.api.tenant,
        subject=s.api.subject,
        role=KeyRole.USER,
        key_id="cli",
        groups=cli_groups(s),
    )
    async with open_store(s.bus) as stores:
        try:
            return await make_starter(s, redis, stores).start(who, ask)
        except ApiError as e:
            hint = f" ({e.hint})" if e.hint else ""
            typer.echo(f"error [{e.code}]: {e.message}{hint}", err=True)
            raise typer.Exit(2) from e


async def _decide(s: AppSettings, redis: Redis, run_id: str, reason: str) -> None:
    """Ask the person at the terminal for the gate's decision, then resume the run."""
    choices = (
        ["approve", "reject"]
        if reason == "approve_answer"
        else [
            "egress_allow_once",
            "egress_allow_always",
            "egress_deny",
            "more_info",
        ]
    )
    from api.compose.edge import allow_always_hook  # only when a gate is decided here

    me = Scope.user(s.api.tenant, s.api.subject)
    async with open_store(s.bus) as stores:
        assert stores.checkpoints is not None
        while True:
            decision = await asyncio.to_thread(
                typer.prompt, f"decision ({' / '.join(choices)})", default=choices[0]
            )
            if decision == "more_info":
                info = await gates.more_info(stores.checkpoints, me, run_id)
                typer.echo(json.dumps(info, indent=2))
                continue
            if decision in choices:
                break
        await gates.resume(
            stores.checkpoints,
            stores.runs,
            redis,
            s.bus,
            scope=me,
            groups=cli_groups(s),
            run_id=run_id,
            decision=decision,
            allow_always=allow_always_hook(stores),
        )
