"""``agentbus ask`` on this machine: start the run on the bus and render it live."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys

import typer
from pydantic import ValidationError
from rich.console import Console

from agentbus_contracts.questions import QuestionSettings
from api.app.ask import Ask, Started
from api.app.auth import local_user
from api.app.errors import ApiError
from api.cli.common import cli_groups, run_async, settings
from api.cli.render import LiveRenderer
from api.compose.commands import LocalRuns, local_runs
from api.compose.settings import AppSettings


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
    async with local_runs(s) as runs:
        started = await _start(s, runs, ask_)
        run_id, conversation_id = started.run_id, started.conversation_id
        loop = asyncio.get_running_loop()
        cancel = lambda: asyncio.ensure_future(runs.cancel(run_id))  # noqa: E731
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, cancel)
        status = "done"
        async for event_id, event in runs.events(run_id, started.shard):
            if as_json:
                print(json.dumps({"id": event_id, **event.model_dump(mode="json")}), flush=True)
            else:
                renderer.show(event)
            if event.type == "approval_request":
                if as_json or not sys.stdin.isatty():
                    hint = f"agentbus runs resume {run_id} DECISION"
                    typer.echo(f"paused at a gate; decide with: {hint}", err=True)
                    raise typer.Exit(3)
                await _decide(s, runs, run_id, event.reason)
            if event.type == "done":
                status = event.status
    if not as_json:
        console.print(f"conversation: {conversation_id}", style="dim")
    if status != "done":
        raise typer.Exit(1)


async def _start(s: AppSettings, runs: LocalRuns, ask: Ask) -> Started:
    """Start the run through the API's own starter: the same defaults (tenant settings,
    default sources), limits and checks as ``POST /api/v1/runs``, as the CLI's identity."""
    who = local_user(s.api.tenant, s.api.subject, cli_groups(s), key_id="cli")
    try:
        return await runs.starter.start(who, ask)
    except ApiError as e:
        hint = f" ({e.hint})" if e.hint else ""
        typer.echo(f"error [{e.code}]: {e.message}{hint}", err=True)
        raise typer.Exit(2) from e


async def _decide(s: AppSettings, runs: LocalRuns, run_id: str, reason: str) -> None:
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
    me = local_user(s.api.tenant, s.api.subject)
    while True:
        decision = await asyncio.to_thread(
            typer.prompt, f"decision ({' / '.join(choices)})", default=choices[0]
        )
        if decision == "more_info":
            info = await runs.resumes.more_info(me.scope, run_id)
            typer.echo(json.dumps(info, indent=2))
            continue
        if decision in choices:
            break
    await runs.resumes.decide(me.scope, cli_groups(s), run_id, decision)
