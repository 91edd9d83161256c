"""``agentbus ask``: publish a question onto the bus and render the run live."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from redis.asyncio import Redis
from rich.console import Console

from agents import gates
from api.app.auth import Principal
from api.app.errors import ApiError
from api.app.starter import Ask, Started
from api.cli.ask_remote import ask_remote
from api.cli.common import cli_groups, run_async, settings
from api.cli.render import LiveRenderer
from api.compose.connection import connect
from api.compose.settings import AppSettings
from api.compose.starter import make_starter
from bus.publish import read_events, request_cancel
from bus.run_state import QuestionSettings
from bus.store import KeyRole, Scope, open_store


@run_async
async def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (id printed after a run).")
    ] = None,
    # Unset (None) leaves the choice to the tenant's settings over --api-url, and to the
    # deployment's defaults (AGENTBUS_AGENT_MODE and the like) locally.
    think: Annotated[
        bool | None, typer.Option(help="Ask the model to reason first (default: off).")
    ] = None,
    tools: Annotated[bool | None, typer.Option(help="Let the model call tools.")] = None,
    mode: Annotated[
        str | None, typer.Option(help="single | multi | custom (default: AGENTBUS_AGENT_MODE)")
    ] = None,
    accuracy: Annotated[
        str | None,
        typer.Option(help="standard | accurate (multi; default: AGENTBUS_AGENT_ACCURACY)"),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="One of AGENTBUS_LLM_MODELS (default: the first).")
    ] = None,
    human_gate: Annotated[bool, typer.Option(help="Approve the answer before it is final.")] = (
        False
    ),
    sources: Annotated[
        str, typer.Option(help="Retrieval sources for multi mode, comma-separated.")
    ] = "",
    approve_high_risk: Annotated[
        bool | None,
        typer.Option(help="Allow HIGH-risk tools (default: AGENTBUS_APPROVE_HIGH_RISK)."),
    ] = None,
    approve_critical: Annotated[
        list[str] | None,
        typer.Option(
            help="A CRITICAL tool the run may use (repeatable; the tenant must have approved it)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON event per line.")] = False,
    api_url: Annotated[
        str | None,
        typer.Option(help="Ask a remote deployment's API instead (AGENTBUS_API_URL)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(help="Its API key (prefer AGENTBUS_API_KEY: arguments are visible)."),
    ] = None,
) -> None:
    """Ask a question; the run's events stream to the terminal as they happen.

    The run is the CLI's identity's: ``AGENTBUS_TENANT``, ``AGENTBUS_SUBJECT`` and the ACL
    groups in ``AGENTBUS_GROUPS``. It starts through the API's own starter, so it gets what
    ``POST /api/v1/runs`` would: the tenant's settings, the default sources, the limits.
    With ``--api-url`` (``AGENTBUS_API_URL``) it asks a
    remote deployment's API instead, as the holder of ``AGENTBUS_API_KEY``.
    """
    s = settings()
    served = s.agents.served_models()
    if model is not None and model not in served:
        typer.echo(f"model {model!r} is not served here; choose one of: {served}", err=True)
        raise typer.Exit(2)
    api_url = api_url or s.api.api_url
    if api_url:
        if api_key is None and s.api.api_key is not None:
            api_key = s.api.api_key.get_secret_value()
        if human_gate or sources:
            hint = "set human_gate and sources in the tenant's settings (PUT /api/v1/settings)"
            raise typer.BadParameter(f"not per question over the API: {hint}")
        if not api_key:
            raise typer.BadParameter("--api-url needs an API key: set AGENTBUS_API_KEY")
        options: dict[str, Any] = {"conversation_id": conversation, "mode": mode}
        options["accuracy"] = accuracy
        options |= {"think": think, "use_tools": tools, "approve_high_risk": approve_high_risk}
        options["model"] = model
        options["approve_critical"] = sorted(set(approve_critical or []))
        status = await ask_remote(api_url, api_key, question, options, as_json=as_json)
        if status != "done":
            raise typer.Exit(1)
        return
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
            }
        )
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        typer.echo(f"error [invalid_request]: --{where.replace('_', '-')}: {err['msg']}", err=True)
        raise typer.Exit(2) from e
    picked = [x.strip() for x in sources.split(",") if x.strip()]
    ask_ = Ask(question, conversation, chosen, sources=picked or None, human_gate=human_gate)
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
