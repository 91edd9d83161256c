"""``agentbus tools call``'s command: the gateway gets the caller's tenant, subject and ACL
groups, the tool's arguments and what the caller approved, in a run of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentbus_contracts.events import ClientEvent
from api.app.auth import local_user
from api.app.tool_calls import ToolCall, ToolCalls
from bus import keys
from bus.commands import Command, ToolCallBatch


def _calls(sent: list[Command], *, deadline_s: float = 600) -> ToolCalls:
    async def send(command: Command) -> None:
        sent.append(command)

    async def events(run_id: str, shard: int) -> AsyncIterator[tuple[str, ClientEvent]]:
        return
        yield  # an empty stream

    return ToolCalls(
        send, events, shard_of=lambda run_id: keys.shard_of(run_id, 4), run_deadline_s=deadline_s
    )


async def test_the_call_goes_to_the_gateway_as_the_caller_with_their_groups() -> None:
    sent: list[Command] = []
    who = local_user("acme", "ops", ("finance", "hr"))
    call = ToolCall("calculator", {"expression": "6*7"}, approve_critical=True)
    started = await _calls(sent).start(who, call, agent="cli", wait_s=30)
    [command] = sent
    assert (command.run_id, command.shard) == (started.run_id, started.shard)
    assert command.shard == keys.shard_of(started.run_id, 4)
    assert (command.tenant_id, command.subject, command.groups) == (
        "acme",
        "ops",
        ("finance", "hr"),
    )
    assert command.role is keys.Role.GATEWAY
    batch = command.payload
    assert isinstance(batch, ToolCallBatch) and batch.agent == "cli" and batch.then == "end"
    [request] = batch.calls
    assert (request.name, request.arguments) == ("calculator", {"expression": "6*7"})
    assert batch.state.settings.approve_critical == ["calculator"]
    assert not batch.state.settings.approve_high_risk


async def test_each_call_is_a_run_of_its_own() -> None:
    sent: list[Command] = []
    calls = _calls(sent)
    who = local_user("acme", "ops")
    first = await calls.start(who, ToolCall("calculator", {}), agent="cli", wait_s=30)
    second = await calls.start(who, ToolCall("calculator", {}), agent="cli", wait_s=30)
    assert first.run_id != second.run_id
