"""Tools the client declared for its run: checked by the chain like the gateway's own, run
by the client.

A call of a client-declared tool (`bus.run_state.ClientTool`) goes through the same chain
as any other (lookup, permission, risk, input schema, timeout, output schema and size,
audit). Where a gateway tool would run, this one has nothing to run: without the client's
result the call ends ``client_pending`` (the researcher pauses the run and the client is
sent the call); with it (the run resumed with the client's result) the call ends ``ok``
with that result, audited like any other. A client tool never shadows a gateway tool: a
call of a name the registry holds is the gateway's tool's (the edge refuses such a
declaration, and the researcher does not offer one).
"""

from __future__ import annotations

from typing import Any

from bus.run_state import ClientTool, RunSettings
from gateway.errors import ClientToolPending
from gateway.ports import EgressClient
from gateway.registry import ToolRegistry
from gateway.spec import ToolSpec

#: What a client tool returns to the model: the client's result, as the client sent it.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"content": {"type": "string"}},
    "required": ["content"],
}


def client_spec(declared: ClientTool) -> ToolSpec:
    """The declaration the chain checks a client tool's calls against.

    Raises:
        ValueError: the parameters are not an object schema of Draft 2020-12.
    """
    return ToolSpec(
        name=declared.name,
        description=declared.description or f"{declared.name} (run by the client)",
        input_schema=declared.parameters,
        output_schema=OUTPUT_SCHEMA,
    )


class ClientSideTool:
    """One call's view of a client tool: pending until the client's result is given."""

    def __init__(self, spec: ToolSpec, result: str | None) -> None:
        self._spec = spec
        self._result = result

    @property
    def spec(self) -> ToolSpec:
        """The tool's declaration, from the client's."""
        return self._spec

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """The client's result, or `ClientToolPending` while the client has not sent one."""
        if self._result is None:
            raise ClientToolPending(f"the client runs {self._spec.name!r}; the run waits for it")
        return {"content": self._result}


def registry_for_call(
    registry: ToolRegistry, settings: RunSettings, name: str, result: str | None
) -> ToolRegistry:
    """The registry a call is looked up in: ``registry``, plus the run's client tool of that
    name (with the client's result, if it sent one).

    A name the registry holds stays the gateway's tool's, and a declaration the chain cannot
    check (parameters that are not an object schema) is left out: the lookup then answers
    as for any tool it does not know.
    """
    declared = settings.client_tool(name)
    if declared is None or name in registry:
        return registry
    try:
        spec = client_spec(declared)
    except ValueError:
        return registry
    return registry.plus(ClientSideTool(spec, result))
