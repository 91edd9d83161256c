"""``agentbus ask``: ask a question and render the run live.

On this machine (``api/cli/ask_local.py``) the run starts on the bus; with ``--api-url``
(``AGENTBUS_API_URL``) it goes through a remote deployment's API with the Python client
(``api/cli/ask_remote.py``). This module imports neither until it knows which, so a remote
question is sent before the rest of the system would have finished importing.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer


def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (id printed after a run).")
    ] = None,
    parent: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Branch the conversation after this answer (a message id; 0: its start): "
            "an edited question, or another answer to the same one.",
        ),
    ] = None,
    multitask: Annotated[
        str | None,
        typer.Option(help="If the conversation is busy: enqueue | reject | interrupt | rollback."),
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
    team: Annotated[
        str | None,
        typer.Option(help="Run this team of the tenant's (agentbus teams list), as it is now."),
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
    from api.settings import ApiSettings

    api = ApiSettings()
    url = api_url or api.api_url
    if parent is not None and conversation is None:
        raise typer.BadParameter("--parent needs --conversation")
    if not url:
        from api.cli.ask_local import ask_local

        ask_local(
            question,
            conversation=conversation,
            parent=parent,
            multitask=multitask,
            think=think,
            tools=tools,
            mode=mode,
            accuracy=accuracy,
            team=team,
            model=model,
            human_gate=human_gate,
            sources=sources,
            approve_high_risk=approve_high_risk,
            approve_critical=approve_critical,
            as_json=as_json,
        )
        return
    if api_key is None and api.api_key is not None:
        api_key = api.api_key.get_secret_value()
    if human_gate or sources:
        hint = "set human_gate and sources in the tenant's settings (PUT /api/v1/settings)"
        raise typer.BadParameter(f"not per question over the API: {hint}")
    if not api_key:
        raise typer.BadParameter("--api-url needs an API key: set AGENTBUS_API_KEY")
    options: dict[str, Any] = {"conversation_id": conversation, "mode": mode}
    options |= {"accuracy": accuracy, "team": team}
    options |= {"think": think, "use_tools": tools, "approve_high_risk": approve_high_risk}
    options["model"] = model
    options["approve_critical"] = sorted(set(approve_critical or []))
    options |= {"parent_message_id": parent, "multitask": multitask}
    from api.cli.ask_remote import run_remote

    if run_remote(url, api_key, question, options, as_json=as_json) != "done":
        raise typer.Exit(1)
