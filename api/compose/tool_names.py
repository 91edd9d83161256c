"""The names of the gateway's own tools, as the edge knows them: a tool a client declares
for its run may not take one (`api.http.client_tool_requests`)."""

from __future__ import annotations

from gateway.plugins import load_plugins
from gateway.settings import GatewaySettings
from gateway.tools import builtin_tools
from retrieval.citations import GRAPH_TOOL, SEARCH_TOOL


def server_tool_names(settings: GatewaySettings) -> frozenset[str]:
    """Built-ins, document and graph search (whether or not this deployment has them) and
    the configured plugins' tools (a plugin that does not load fails here as it fails the
    gateway's start)."""
    tools = [*builtin_tools(), *load_plugins(settings.tool_plugins)]
    return frozenset({SEARCH_TOOL, GRAPH_TOOL, *(t.spec.name for t in tools)})
