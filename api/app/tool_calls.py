"""One tool called through the gateway over the bus, as an agent's call is (``agentbus
tools call``): the gateway's policy chain, its audit and its exactly-once effects apply.

The call is a one-step run: a ``ToolCallBatch`` command to the gateway that ends the run
when the tool answers; its ``tool_result`` (or ``error``) event is the outcome.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bus.commands import (
    Command,
    Role,
    RunSettings,
    RunState,
    ToolCallBatch,
    ToolCallRequest,
    deadline_in,
    new_run_id,
)

if TYPE_CHECKING:
    from agentbus_contracts.events import ClientEvent
    from api.app.auth import Principal
    from api.app.ports import ReadRunEvents, SendCommand


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool to call, its arguments, and what the caller approves beforehand."""

    name: str
    arguments: dict[str, Any]
    approve_high_risk: bool = False
    approve_critical: bool = False


@dataclass(frozen=True, slots=True)
class CallStarted:
    """The run that carries the call, and the shard of its streams."""

    run_id: str
    shard: int


class ToolCalls:
    """Calls tools through the gateway, each in a run of its own.

    Args:
        send: publishes the command to the gateway's stream.
        events: reads a run's events.
        shard_of: the shard of a run's streams, from its id.
        run_deadline_s: the longest a run may take (a call's wait is capped by it).
    """

    def __init__(
        self,
        send: SendCommand,
        events: ReadRunEvents,
        *,
        shard_of: Callable[[str], int],
        run_deadline_s: float,
    ) -> None:
        self._send = send
        self._events = events
        self._shard_of = shard_of
        self._deadline_s = run_deadline_s

    async def start(
        self, who: Principal, call: ToolCall, *, agent: str, wait_s: float
    ) -> CallStarted:
        """Publish the call as ``agent`` for ``who``; it is dropped after ``wait_s``."""
        run_id = new_run_id()
        command = Command(
            run_id=run_id,
            tenant_id=who.tenant_id,
            subject=who.subject,
            shard=self._shard_of(run_id),
            role=Role.GATEWAY,
            deadline=deadline_in(min(wait_s, self._deadline_s)),
            groups=who.groups,
            payload=ToolCallBatch(
                agent=agent,
                calls=[
                    ToolCallRequest(call_id=f"{run_id}-0", name=call.name, arguments=call.arguments)
                ],
                state=RunState(
                    question=f"agentbus tools call {call.name}"[:200],
                    settings=RunSettings(
                        approve_high_risk=call.approve_high_risk,
                        approve_critical=[call.name] if call.approve_critical else [],
                    ),
                ),
                then="end",
            ),
        )
        await self._send(command)
        return CallStarted(run_id, command.shard)

    def events(self, started: CallStarted) -> AsyncIterator[tuple[str, ClientEvent]]:
        """The call's run's events until its ``done``."""
        return self._events(started.run_id, started.shard)
