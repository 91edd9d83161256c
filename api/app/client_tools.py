"""Tools a client declares for its run (OpenAI ``tools``, AG-UI ``RunAgentInput.tools``):
checked once at the edge, then carried in the run's settings (`bus.run_state.ClientTool`).

A declaration is refused, naming the field, when its name is not a tool name, is declared
twice, or is the name of one of the gateway's own tools (``tool_name_taken``: a client's
tool never stands in for the server's), or when its parameters are not an object JSON
Schema the gateway can check calls against. The call ids a client is sent name the run
they belong to (`client_call_id`), so the client's result finds its paused run whatever
the protocol keeps of the conversation.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from api.app.errors import InvalidRequest, ToolNameTaken
from bus.run_state import MAX_CLIENT_TOOLS, TOOL_NAME_PATTERN, ClientTool
from gateway.client_tools import client_spec

_NAME = re.compile(TOOL_NAME_PATTERN)
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: Between the run id and the run's own call id in the ids a client is sent.
SEPARATOR = ":"


@dataclass(frozen=True, slots=True)
class Declared:
    """One tool as a protocol declares it, and where in the request it was (for errors)."""

    name: str
    description: str
    parameters: Any
    where: str


def client_tools(declared: Iterable[Declared], server_tools: Collection[str]) -> list[ClientTool]:
    """The run's client tools, each checked (see the module docstring).

    Raises:
        InvalidRequest: a name, a duplicate, too many tools or parameters that are not an
            object schema.
        ToolNameTaken: a name of one of the gateway's tools.
    """
    tools: list[ClientTool] = []
    for given in declared:
        name = given.name
        if not _NAME.match(name):
            raise InvalidRequest(
                f"{given.where}.name: a tool name is 1-64 letters, digits, _ or -",
                field=f"{given.where}.name",
            )
        if name in server_tools:
            raise ToolNameTaken(
                f"{given.where}.name: {name!r} is the name of one of agentbus's own tools",
                field=f"{given.where}.name",
            )
        if any(t.name == name for t in tools):
            raise InvalidRequest(
                f"{given.where}.name: {name!r} is declared twice", field=given.where
            )
        tools.append(_tool(given))
    if len(tools) > MAX_CLIENT_TOOLS:
        raise InvalidRequest(f"at most {MAX_CLIENT_TOOLS} tools may be declared", field="tools")
    return tools


def _tool(given: Declared) -> ClientTool:
    parameters: Any = given.parameters
    if parameters is None:
        parameters = dict[str, Any](type="object", properties={})
    where = f"{given.where}.parameters"
    try:
        tool = ClientTool(name=given.name, description=given.description, parameters=parameters)
        client_spec(tool)  # the gateway checks calls against it: it must be one it can
    except (ValidationError, ValueError) as e:
        raise InvalidRequest(
            f"{where}: not an object JSON Schema ({_first(e)})", field=where
        ) from e
    return tool


def _first(error: ValueError) -> str:
    if isinstance(error, ValidationError):
        return str(error.errors()[0]["msg"])
    return str(error)


def client_call_id(run_id: str, call_id: str) -> str:
    """The id a client is sent for a call of its tool: the run's and the call's."""
    return f"{run_id}{SEPARATOR}{call_id}"


def parse_call_id(given: str) -> tuple[str, str] | None:
    """The run and call a client's call id names, or None if agentbus did not issue it."""
    run_id, sep, call_id = given.rpartition(SEPARATOR)
    if not sep or not call_id or not _RUN_ID.match(run_id):
        return None
    return run_id, call_id


def results_run(results: Iterable[tuple[str, str]], where: str) -> tuple[str, dict[str, str]]:
    """The run the client's results resume, and each result by the run's call id.

    Args:
        results: (the call id the client was sent, the result's text), in order.
        where: the request field that holds them, for errors.

    Raises:
        InvalidRequest: an id agentbus did not issue, or ids of two runs.
    """
    runs: set[str] = set()
    by_call: dict[str, str] = {}
    for given, text in results:
        parsed = parse_call_id(given)
        if parsed is None:
            raise InvalidRequest(
                f"{where}: the tool call id {given[:80]!r} is not one agentbus sent",
                field=where,
            )
        runs.add(parsed[0])
        by_call[parsed[1]] = text
    if len(runs) != 1:
        raise InvalidRequest(f"{where}: the tool results answer calls of several runs", field=where)
    return runs.pop(), by_call
