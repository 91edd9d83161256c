"""One checked answer on every surface: what each client receives is what the store keeps.

An answer full of code (indexes, list literals, a link, a year in brackets) with one
invented citation goes through a real API and workers; the stored answer, the REST run,
the websocket events, server-sent events, the Python client, the official `openai`
client (streamed and not) and the webhook payload must all carry the same text: the
code byte for byte, the invented ``[3]`` gone everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from agentbus_client import AsyncAgentbusClient, Snapshot
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from bus.events import parse_event
from bus.transcript import fold
from tests.integration.api.conftest import until_done
from tests.integration.api.test_webhooks import HOOK_SETTINGS, Receiver, hook_tenant, receiver

__all__ = ["receiver"]  # the fixture, shared with the webhook tests

CODE = (
    "Use `nums[0]` for the first item:\n\n```python\nnums = [1, 2, 3]\nprint(nums[1:3])\n"
    "```\n\nIn JS, `const a = [1, 2, 3]; a[2]` is 3; x)[2] and arr[1] are indexes too."
)
#: What the model writes: the code, a link, a year, and a citation of nothing retrieved.
RAW = CODE + " See [the docs](https://docs.python.org/3/) [3]. In [2024] nothing changed."
#: What every surface must show.
CHECKED = CODE + " See [the docs](https://docs.python.org/3/). In [2024] nothing changed."
DRAFT = "A first draft [7] that the critic sends back."


def scripted() -> ScriptedLLM:
    """Single mode: the answer. Multi mode: a draft the critic sends back, then the answer."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Any:
        first = messages[0].content
        if first.startswith("You are the planner"):
            return turn(text("- answer with code"))
        if first.startswith("You are the critic"):
            first_draft = any("A first draft" in m.content for m in messages)
            return turn(text("REVISE: show the code" if first_draft else "OK"))
        revising = any("asked for another attempt" in m.content for m in messages)
        multi = any(m.role == "system" and m.content.startswith("Plan") for m in messages)
        return turn(text(RAW if revising or not multi else DRAFT))

    return ScriptedLLM(script)


def sse_events(body: str) -> list[Any]:
    """The run events of a server-sent events body."""
    docs = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    return [parse_event(json.dumps({k: v for k, v in d.items() if k != "id"})) for d in docs]


async def test_every_surface_shows_the_checked_answer_in_single_mode(
    start_api: Any, receiver: Receiver
) -> None:
    api = await start_api(scripted(), **HOOK_SETTINGS)
    _, key = await hook_tenant(api, receiver)
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("One line of Python for a list of 1, 2 and 3?", mode="single")
        streamed = [e async for e in client.join(run.id) if not isinstance(e, Snapshot)]
    sse = await api.http.get(f"/api/v1/runs/{run.id}/events", headers=api.auth(key))
    ws = await api.ws(key)
    await ws.send(json.dumps({"type": "join", "run_id": run.id, "last_event_id": "0-0"}))
    frames = [f for f in await until_done(ws) if f.get("run_id") == run.id]
    ws_answer = "".join(f["delta"] for f in frames if f["type"] == "answer")
    posted = await api.http.post(
        "/api/v1/runs",
        json={"question": "And again?", "webhook_url": receiver.url},
        headers=api.auth(key),
    )
    [payload] = await receiver.wait_for(1)
    async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key) as oai:
        completion = await oai.chat.completions.create(
            model="agentbus",
            messages=[{"role": "user", "content": "A list of 1, 2, 3 in Python?"}],
        )
        stream = await oai.chat.completions.create(
            model="agentbus",
            messages=[{"role": "user", "content": "A list of 1, 2, 3 in Python, streamed?"}],
            stream=True,
        )
        chunks = [c async for c in stream]

    assert run.answer == CHECKED  # the stored answer
    assert fold(streamed).answer == CHECKED  # Python client's events, token by token
    [citations] = [e for e in streamed if e.type == "citations"]
    assert citations.stripped == 1 and citations.items == []
    assert fold(sse_events(sse.text)).answer == CHECKED
    assert ws_answer == CHECKED and frames[-1]["answer"] == CHECKED
    assert payload["data"]["run_id"] == posted.json()["run_id"]
    assert payload["data"]["answer"] == CHECKED
    assert completion.choices[0].message.content == CHECKED
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == CHECKED
    assert "[3]" not in str([c.model_dump() for c in chunks])  # never sent, even in part


async def test_multi_mode_never_shows_the_superseded_draft_as_the_answer(start_api: Any) -> None:
    api = await start_api(scripted())
    key = await api.key()
    async with AsyncAgentbusClient(api.base, key) as client:
        run = await client.ask("A list of 1, 2 and 3 in Python?", mode="multi")
        events = [e async for e in client.join(run.id) if not isinstance(e, Snapshot)]
    async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key) as oai:
        completion = await oai.chat.completions.create(
            model="agentbus-multi",
            messages=[{"role": "user", "content": "A list of 1, 2 and 3 in Python?"}],
        )
        stream = await oai.chat.completions.create(
            model="agentbus-multi",
            messages=[{"role": "user", "content": "A list of 1, 2 and 3, streamed?"}],
            stream=True,
        )
        chunks = [c async for c in stream]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    content = "".join(d.content or "" for d in deltas)
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)

    assert any(e.type == "draft_superseded" for e in events)
    assert run.answer == CHECKED and fold(events).answer == CHECKED
    assert completion.choices[0].message.content == CHECKED
    assert content == CHECKED  # the final answer only, once the run is done
    # The drafts streamed as reasoning, labelled; the invented [7] never left the server.
    assert "[draft 1]" in reasoning and "A first draft that the critic" in reasoning
    assert "[draft 1 sent back: show the code]" in reasoning and "[draft 2]" in reasoning
    assert "[7]" not in reasoning and "[3]" not in reasoning


async def test_the_websocket_ask_streams_the_checked_answer(start_api: Any) -> None:
    api = await start_api(scripted())
    key = await api.key()
    ws = await api.ws(key)
    await ws.send(json.dumps({"type": "ask", "question": "A list in Python?"}))
    frames = await until_done(ws)
    answer = "".join(f["delta"] for f in frames if f["type"] == "answer")
    run_id = frames[-1]["run_id"]
    stored = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
    assert answer == stored["answer"] == CHECKED
