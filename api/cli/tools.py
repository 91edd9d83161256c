"""``agentbus tools``: list the gateway's tools, or call one through the gateway over the bus."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from api.cli.common import cli_groups, run_async, settings
from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from agentbus_contracts.events import ToolResult

app = typer.Typer(cls=Group, help="Gateway tools: list them, call one.", no_args_is_help=True)
#: Who the gateway (and its audit log) sees calling.
CLI_AGENT = "cli"


@app.command("list")
@run_async
async def tools_list(
    tenant: Annotated[
        str | None, typer.Option(help="Whose tools (default AGENTBUS_TENANT).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per tool.")] = False,
) -> None:
    """List the tools a tenant may call: built-ins, plugins and its MCP servers' tools."""
    from api.compose.roles import gateway_policies, make_registry
    from gateway.mcp.hub import McpHub

    s = settings()
    policy = await gateway_policies(s.gateway).for_tenant(tenant or s.api.tenant)
    hub = McpHub(hidden=s.bus.private_paths())
    try:
        registry = await hub.registry_for(make_registry(s.gateway), policy.mcp_servers)
    finally:
        await hub.aclose()
    for spec in registry.list():
        if policy.enabled_tools is not None and spec.name not in policy.enabled_tools:
            continue
        if as_json:
            typer.echo(json.dumps(spec.model_dump(mode="json")))
            continue
        flags = [spec.risk.value] + (["side effects"] if spec.side_effects else [])
        flags += [f"hosts: {', '.join(spec.hosts)}"] if spec.hosts else []
        typer.echo(f"{spec.name:28} [{'; '.join(flags)}]  {spec.description[:80]}")


def _outcome(result: ToolResult, run_id: str) -> dict[str, Any]:
    return {"run_id": run_id} | result.model_dump(
        mode="json",
        include={
            "call_id",
            "tool",
            "status",
            "code",
            "message",
            "result",
            "truncated",
            "blocked_host",
            "duration_ms",
        },
    )


@app.command("call")
@run_async
async def tools_call(
    name: Annotated[str, typer.Argument(help="The tool, as `agentbus tools list` names it.")],
    args: Annotated[str, typer.Argument(help="The arguments, a JSON object.")] = "{}",
    tenant: Annotated[str | None, typer.Option(help="Call as this tenant.")] = None,
    approve_high_risk: Annotated[
        bool, typer.Option("--approve-high-risk", help="Allow HIGH (not CRITICAL) risk tools.")
    ] = False,
    approve_critical: Annotated[
        bool,
        typer.Option(
            "--approve-critical",
            help="Ask for this CRITICAL tool (runs only if the tenant approved it).",
        ),
    ] = False,
    wait: Annotated[float, typer.Option(min=1, help="Seconds to wait for the gateway.")] = 60,
) -> None:
    """Call one tool through the gateway over the bus and print the outcome as JSON.

    The call takes the path an agent's call takes: the gateway's policy chain, audit and
    exactly-once effects. Exit status: 0 when the outcome is ok, 1 when it is not, 2 when
    the call could not be made.
    """
    import asyncio  # here, not at the top: a tenth of the time to print a help

    from api.app.auth import local_user
    from api.app.tool_calls import ToolCall
    from api.compose.commands import tool_calls

    try:
        arguments = json.loads(args)
    except ValueError as e:
        raise typer.BadParameter(f"ARGS is not JSON: {e}", param_hint="ARGS") from e
    if not isinstance(arguments, dict):
        raise typer.BadParameter("ARGS must be a JSON object", param_hint="ARGS")
    s = settings()
    who = local_user(tenant or s.api.tenant, s.api.subject, cli_groups(s))
    call = ToolCall(name, cast("dict[str, Any]", arguments), approve_high_risk, approve_critical)
    found: dict[str, Any] | None = None
    async with tool_calls(s) as calls:
        started = await calls.start(who, call, agent=CLI_AGENT, wait_s=wait)
        run_id = started.run_id
        try:
            async with asyncio.timeout(wait):
                async for _, event in calls.events(started):
                    if event.type == "tool_result":
                        found = _outcome(event, run_id)
                    elif event.type == "error" and found is None:
                        found = {"run_id": run_id, "status": "error", "code": event.code}
                        found["message"] = event.message
        except TimeoutError:
            typer.echo(
                f"error [no_gateway]: no gateway answered within {wait:g}s; start "
                "`agentbus worker gateway` (or `agentbus up`) against the same Redis",
                err=True,
            )
            raise typer.Exit(2) from None
    typer.echo(json.dumps(found, indent=2, ensure_ascii=False))
    if found is None or found.get("status") != "ok":
        raise typer.Exit(1 if found is not None and "call_id" in found else 2)
