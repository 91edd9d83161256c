"""What the ``multitask`` tests share: a slow echoing model and the checks a user makes.

The model answers ``A[question] saw[earlier questions]`` (and `` cut`` when an earlier
answer it was shown was interrupted), then padding tokens that make each answer take a
while, so a second question arrives while the first still streams.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from agents import prompts
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from bus import keys
from tests.integration.api.conftest import Api
from tests.support import wait_for

#: Tokens after the part of an answer the tests read: they make each answer take a while.
PADDING = 30
DELAY_S = 0.05


def answer_for(question: str, history: Sequence[ChatMessage]) -> str:
    """What the test model answers: the question, and the earlier questions it was shown."""
    asked = [m.content for m in history if m.role == "user"]
    cut = any(prompts.INTERRUPTED_ANSWER in m.content for m in history if m.role == "assistant")
    return f"A[{question}] saw[{'|'.join(asked)}]" + (" cut" if cut else "")


def echo(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> list[Any]:
    first = messages[0].content if messages and messages[0].role == "system" else ""
    question = next(m.content for m in reversed(messages) if m.role == "user")
    if "Rewrite the user's last message" in first:  # intake's contextualize call
        return turn(text(question))
    history = [m for m in messages[1:-1] if m.role in ("user", "assistant")]
    return turn(text(answer_for(question, history) + " ." * PADDING))


def slow_model() -> ScriptedLLM:
    return ScriptedLLM(echo, token_delay=DELAY_S, record=False)


async def post(api: Api, key: str, question: str, conversation: str | None = None, **settings: Any):  # type: ignore[no-untyped-def]
    body: dict[str, Any] = {"question": question}
    if conversation:
        body["conversation_id"] = conversation
    if settings:
        body["settings"] = settings
    return await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))


async def events_of(api: Api, run_id: str) -> list[dict[str, Any]]:
    shard = keys.shard_of(run_id, api.settings.bus.shards)
    rows = await api.redis.xrange(keys.run_events(run_id, shard))
    return [json.loads(fields[b"data"]) for _, fields in rows]


async def until_event(api: Api, run_id: str, kind: str, within: float = 20) -> None:
    async def seen() -> bool:
        return any(e["type"] == kind for e in await events_of(api, run_id))

    await wait_for(seen, within=within, interval=0.02)


async def run_of(api: Api, key: str, run_id: str) -> dict[str, Any]:
    return (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()


async def ended(api: Api, key: str, run_id: str, within: float = 30) -> dict[str, Any]:
    async with asyncio.timeout(within):
        while True:
            run = await run_of(api, key, run_id)
            if run.get("status") not in ("queued", "running", None):
                return run
            await asyncio.sleep(0.05)


async def messages(api: Api, key: str, conversation: str) -> list[dict[str, Any]]:
    resp = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
    assert resp.status_code == 200, resp.text
    return resp.json()["messages"]


def said(found: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(role, text up to the padding, status) of each message."""
    return [(m["role"], m["content"].split(" .")[0], m.get("status")) for m in found]


async def first_run_streaming(api: Api, key: str) -> tuple[str, str]:
    """Start q1 and wait until its answer streams; its (run id, conversation id)."""
    first = (await post(api, key, "q1")).json()
    await until_event(api, first["run_id"], "answer")
    return first["run_id"], first["conversation_id"]
