"""One MCP server tool as a gateway `Tool`: its declaration, and a call through the session."""

from __future__ import annotations

import re
from typing import Any

import structlog
from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp.types import Tool as McpToolInfo
from pydantic import ValidationError

from bus.json_values import is_array
from gateway.errors import ToolError
from gateway.mcp.connection import McpConnection
from gateway.mcp_config.servers import McpServerConfig
from gateway.ports import Caller, EgressClient
from gateway.spec import ToolSpec

log = structlog.get_logger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_DESCRIPTION = 2_000
_MAX_ERROR_TEXT = 1_000
# Relative refs (#/$defs/...) inside a server's output schema resolve against this id once
# the schema is embedded under "structured" (an embedded schema resource, Draft 2020-12).
_EMBEDDED_ID = "urn:agentbus:mcp:structured"
#: Where a call's idempotency key travels in an MCP request's ``_meta`` (every call of a
#: tool that takes a key, beside the key argument).
META_KEY = "io.agentbus/idempotency-key"
#: The tool version of a stdio server run without its sandbox (each audit row shows it).
UNSANDBOXED = "unsandboxed"


def registry_name(server: str, tool: str) -> str | None:
    """``<server>__<tool>`` with unsafe characters as ``_``; None when it would be too long."""
    name = f"{server}__{_UNSAFE.sub('_', tool)}"
    return name if len(name) <= 64 else None


def output_schema(declared: dict[str, Any] | None) -> dict[str, Any]:
    """What an MCP tool returns through the gateway: its text, and its structured content.

    When the server declares an output schema, ``structured`` is required and must match it.
    """
    structured: dict[str, Any] = {}
    if declared is not None:
        structured = {**declared, "$id": declared.get("$id", _EMBEDDED_ID)}
    return {
        "type": "object",
        "properties": {"content": {"type": "string"}, "structured": structured},
        "required": ["content", "structured"] if declared is not None else ["content"],
        "additionalProperties": False,
    }


def key_arg_of(config: McpServerConfig, info: McpToolInfo) -> str | None:
    """The argument through which this server tool takes an idempotency key, if it does."""
    arg = config.idempotency_key_arg
    properties: Any = info.input_schema.get("properties")
    return arg if arg is not None and isinstance(properties, dict) and arg in properties else None


def model_schema(schema: dict[str, Any], key_arg: str | None) -> dict[str, Any]:
    """The input schema offered to the model: without the key argument (the gateway's)."""
    if key_arg is None:
        return schema
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    properties.pop(key_arg, None)
    shown = {**schema, "properties": properties}
    required: Any = schema.get("required")
    if is_array(required):
        shown["required"] = [r for r in required if r != key_arg]
    return shown


def spec_for(config: McpServerConfig, info: McpToolInfo) -> ToolSpec | None:
    """The declaration of a server tool, or None when it cannot be offered (logged)."""
    name = registry_name(config.name, info.name)
    if name is None:
        log.warning("mcp_tool_skipped", server=config.name, tool=info.name, why="name too long")
        return None
    described = info.description or info.title or info.name
    key_arg = key_arg_of(config, info)
    try:
        return ToolSpec(
            name=name,
            description=f"{described[:_MAX_DESCRIPTION]} (MCP server {config.name!r})",
            input_schema=model_schema(info.input_schema, key_arg),
            output_schema=output_schema(info.output_schema),
            risk=config.risk,
            # Any server tool may change things; recording each outcome under its call id
            # (at most once) costs little, a repeated side effect can cost a lot.
            side_effects=True,
            takes_idempotency_key=key_arg is not None,
            # The audit row of every call names the version: an unsandboxed server's say so.
            version=UNSANDBOXED if config.command and config.unsandboxed else "1.0.0",
            timeout_s=config.timeout_s,
            max_output_bytes=config.max_output_bytes,
        )
    except ValidationError as e:
        log.warning("mcp_tool_skipped", server=config.name, tool=info.name, why=str(e)[:300])
        return None


def text_of(result: CallToolResult) -> str:
    """The result's content blocks as text (non-text blocks are named, not inlined)."""
    parts: list[str] = []
    for block in result.content:
        match block:
            case TextContent():
                parts.append(block.text)
            case ImageContent() | AudioContent():
                parts.append(f"[{block.type}: {block.mime_type}]")
            case EmbeddedResource():
                inner = block.resource
                shown = inner.text if isinstance(inner, TextResourceContents) else "binary"
                parts.append(f"[resource {inner.uri}] {shown}")
            case ResourceLink():
                parts.append(f"[resource link {block.uri}]")
    return "\n".join(parts)


class McpTool:
    """Calls `remote_name` on the server behind `connection`.

    Args:
        spec: the declaration (see `spec_for`).
        remote_name: the tool's name on the server.
        connection: the open session.
        key_arg: the argument that carries the gateway's idempotency key (`key_arg_of`).
    """

    def __init__(
        self,
        spec: ToolSpec,
        remote_name: str,
        connection: McpConnection,
        key_arg: str | None = None,
    ) -> None:
        self.spec = spec
        self.remote_name = remote_name
        self._connection = connection
        self._key_arg = key_arg

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Call the server tool without a caller (no idempotency key); see `run_as`."""
        return await self._call(args, None)

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Call the server tool; a call with an idempotency key carries it in the key
        argument (when the tool takes one) and in the request's ``_meta`` (`META_KEY`).

        Raises:
            ToolError: the tool reported an error, or the server refused the call.
            McpUnavailable: the server is not reachable.
        """
        return await self._call(args, caller.idempotency_key)

    async def _call(self, args: dict[str, Any], key: str | None) -> dict[str, Any]:
        meta: dict[str, Any] | None = None
        if key is not None:
            meta = {META_KEY: key}
            if self._key_arg is not None:
                args = {**args, self._key_arg: key}
        result = await self._connection.call_tool(self.remote_name, args, meta=meta)
        text = text_of(result)
        if result.is_error:
            shown = text[:_MAX_ERROR_TEXT] or "no details"
            raise ToolError(f"the MCP tool {self.spec.name!r} failed: {shown}")
        out: dict[str, Any] = {"content": text}
        if result.structured_content is not None:
            out["structured"] = result.structured_content
        return out
