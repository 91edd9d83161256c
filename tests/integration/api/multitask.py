"""What the ``multitask`` tests share: a held echoing model and the checks a user makes.

The model answers ``A[question] saw[earlier questions]`` (and `` cut`` when an earlier
answer it was shown was interrupted), then padding tokens. It holds an answer half way
through its padding until the test releases it, so a second question arrives while the
first still streams however slow the host is: a test releases the first answer once the
second question was admitted (queued, refused, or the first run asked to stop).
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
from tests import held_model
from tests.held_model import HeldModel
from tests.integration.api.conftest import Api
from tests.support import wait_for

#: Tokens after the part of an answer the tests read.
PADDING = 30
#: Seconds before each token: after a release, the rest of the padding streams for longer
#: than the token batcher's flush age, so a run asked to stop sees it before it ends.
DELAY_S = 0.01
#: The padding token an answer waits before for `HeldModel.release`: half way.
HELD_AT = PADDING // 2


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


def slow_model() -> HeldModel:
    """The echoing model, each answer held before its padding's second half."""
    echoing = ScriptedLLM(echo, token_delay=DELAY_S, record=False)
    return HeldModel(echoing, at=HELD_AT, counting=" .")


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


async def release_once_cut(api: Api, model: HeldModel, run_id: str) -> None:
    """Release the held answer once a later question asked ``run_id`` to stop."""
    await held_model.release_once_cut(model, api.redis, run_id, api.settings.bus.shards)


async def release_once_queued(api: Api, key: str, conversation: str, model: HeldModel) -> None:
    """Release the held answer once a question waits behind it in ``conversation``."""

    async def queued() -> bool:
        resp = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
        return any(p["state"] == "queued" for p in resp.json().get("pending", []))

    await wait_for(queued, within=20)
    model.release()
