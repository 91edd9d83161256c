"""`verified` is a promise: an answer every judge approved but nothing established ends
unknown, on the `done` event and the REST run alike (a real API, workers and store)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentbus_client import AsyncAgentbusClient
from agentbus_contracts.events import Done
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, text, turn
from api.cli.render import verified_line

ANSWER = "Mirela Okafor leads Project Halcyon."


def approving() -> ScriptedLLM:
    """Judges that approve whatever they read, and an answer with no figure to recompute."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = agent_of(messages, options)
        if role == "planner":
            return turn(text('{"plan": ["Answer who leads the project."]}'))
        if role == "critic":
            return turn(text('{"verdict": "OK", "reason": "reads as supported"}'))
        if role == "verifier":
            return turn(text('{"verdict": "pass", "reasons": ["reads as supported"]}'))
        if role == "recompute":
            return turn(text('{"checks": []}'))
        return turn(text(ANSWER))

    return ScriptedLLM(script)


async def test_an_approved_answer_nothing_established_ends_verified_unknown(
    start_api: Any,
) -> None:
    api = await start_api(approving())
    key = await api.key("t1", "alice")
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("Who leads Project Halcyon?", mode="multi", accuracy="accurate")
        events = [e async for e in client.join(run.id)]
    [done] = [e for e in events if isinstance(e, Done)]
    assert done.status == "done" and done.answer == ANSWER
    assert done.verified is None  # both judges approved; no check established it
    reason = done.verified_reason or ""
    assert reason.startswith("verifier pass") and "not established" in reason
    shown = await api.http.get(f"/api/v1/runs/{run.id}", headers=api.auth(key))
    assert shown.status_code == 200
    body = shown.json()
    assert (body["verified"], body["verified_reason"]) == (None, reason)
    assert verified_line(done.verified, reason).startswith("verified: unknown (verifier pass")
