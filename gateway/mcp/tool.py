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

from gateway.errors import ToolError
from gateway.mcp.config import McpServerConfig
from gateway.mcp.connection import McpConnection
from gateway.ports import EgressClient
from gateway.spec import ToolSpec

log = structlog.get_logger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_DESCRIPTION = 2_000
_MAX_ERROR_TEXT = 1_000
# Relative refs (#/$defs/...) inside a server's output schema resolve against this id once
# the schema is embedded under "structured" (an embedded schema resource, Draft 2020-12).
_EMBEDDED_ID = "urn:agentbus:mcp:structured"


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


def spec_for(config: McpServerConfig, info: McpToolInfo) -> ToolSpec | None:
    """The declaration of a server tool, or None when it cannot be offered (logged)."""
    name = registry_name(config.name, info.name)
    if name is None:
        log.warning("mcp_tool_skipped", server=config.name, tool=info.name, why="name too long")
        return None
    described = info.description or info.title or info.name
    try:
        return ToolSpec(
            name=name,
            description=f"{described[:_MAX_DESCRIPTION]} (MCP server {config.name!r})",
            input_schema=info.input_schema,
            output_schema=output_schema(info.output_schema),
            risk=config.risk,
            # Any server tool may change things; recording each outcome under its call id
            # (at most once) costs little, a repeated side effect can cost a lot.
            side_effects=True,
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
    """

    def __init__(self, spec: ToolSpec, remote_name: str, connection: McpConnection) -> None:
        self.spec = spec
        self.remote_name = remote_name
        self._connection = connection

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Call the server tool; an error result becomes a `ToolError` the model can read.

        Raises:
            ToolError: the tool reported an error, or the server refused the call.
            McpUnavailable: the server is not reachable.
        """
        result = await self._connection.call_tool(self.remote_name, args)
        text = text_of(result)
        if result.is_error:
            shown = text[:_MAX_ERROR_TEXT] or "no details"
            raise ToolError(f"the MCP tool {self.spec.name!r} failed: {shown}")
        out: dict[str, Any] = {"content": text}
        if result.structured_content is not None:
            out["structured"] = result.structured_content
        return out
