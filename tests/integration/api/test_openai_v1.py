"""The OpenAI-compatible endpoint, driven by the official `openai` package against a real API."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM
from bus.store import KeyRole
from tests.support import wait_for

QUESTION: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is 23 × 19?"}]


def client(api: Any, key: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key, **options)


async def test_models_and_a_plain_completion(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with client(api, key) as oai:
        models = await oai.models.list()
        multi = await oai.models.retrieve("agentbus-multi")
        with pytest.raises(openai.NotFoundError):
            await oai.models.retrieve("gpt-4o")
        raw = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
        )
    completion = raw.parse()
    run_id = raw.headers["x-agentbus-run"]
    stored = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()

    assert [m.id for m in models.data] == ["agentbus", "agentbus-multi", "agentbus-multi-accurate"]
    assert multi.id == "agentbus-multi" and multi.owned_by == "agentbus"
    assert completion.choices[0].message.content == BENCHMARK_ANSWER == stored["answer"]
    assert completion.choices[0].finish_reason == "stop"
    assert completion.id == f"chatcmpl-{run_id}" and completion.model == "agentbus"
    assert completion.usage is not None and completion.usage.total_tokens == (
        stored["usage"]["prompt_tokens"] + stored["usage"]["completion_tokens"]
    )
    assert stored["mode"] == "single"
    # What the judges concluded rides in the response's metadata: single mode has none.
    meta = (completion.model_extra or {})["agentbus"]
    assert meta == {
        "run_id": run_id,
        "status": "done",
        "verified": None,
        "verified_reason": "not judged: single mode has no judges",
    }
    assert (stored["verified"], stored["verified_reason"]) == (None, meta["verified_reason"])


async def test_streaming_sends_content_and_reasoning_deltas_and_usage(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    async with client(api, key) as oai:
        stream = await oai.chat.completions.create(
            model="agentbus-multi-accurate",
            messages=QUESTION,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]

    deltas = [c.choices[0].delta for c in chunks if c.choices]
    content = "".join(d.content or "" for d in deltas)
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    run_id = chunks[0].id.removeprefix("chatcmpl-")
    stored = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()

    assert deltas[0].role == "assistant" and len(deltas) > 10  # token by token, not at once
    assert content == stored["answer"] and "437" in content
    assert "plan:" in reasoning and "→ calculator" in reasoning and "verifier:" in reasoning
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0
    assert stored["mode"] == "multi"
    # The finishing chunk says what the judges concluded (the scripted verifier passes).
    [last] = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    meta = (last.model_extra or {})["agentbus"]
    assert meta["verified"] is True and meta["verified_reason"].startswith("verifier pass")
    assert (stored["verified"], stored["verified_reason"]) == (True, meta["verified_reason"])


async def test_earlier_messages_and_the_user_field_map_to_conversations(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    history: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "ignored: the tenant's prompts apply"},
        {"role": "user", "content": "Let us do arithmetic."},
        {"role": "assistant", "content": "Sure."},
        *QUESTION,
    ]
    async with client(api, key) as oai:
        seeded = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=history,
        )
        conversation = seeded.headers["x-agentbus-conversation"]
        by_header = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=[{"role": "user", "content": "And 24 × 19?"}],
            extra_headers={"X-Agentbus-Conversation": conversation},
        )
        first = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
            user="crm-ticket-7",
        )
        second = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
            user="crm-ticket-7",
        )
        with pytest.raises(openai.NotFoundError) as unknown:
            await oai.chat.completions.create(
                model="agentbus",
                messages=QUESTION,
                extra_headers={"X-Agentbus-Conversation": "no-such-conversation"},
            )
    stored = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
    roles = [m["role"] for m in stored.json()["messages"]]
    by_user = second.headers["x-agentbus-conversation"]
    kept = await api.http.get(f"/api/v1/conversations/{by_user}", headers=api.auth(key))

    assert by_header.headers["x-agentbus-conversation"] == conversation
    assert roles == ["user", "assistant"] * 3  # seeded turn, first run, the header's run
    assert stored.json()["messages"][0]["content"] == "Let us do arithmetic."
    assert first.headers["x-agentbus-conversation"] == by_user
    assert len(kept.json()["messages"]) == 4
    assert unknown.value.code == "conversation_not_found"


async def test_a_run_paused_at_a_gate_ends_the_completion_with_how_to_resume(
    start_api: Any,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    await api.http.put("/api/v1/settings", json={"human_gate": True}, headers=api.auth(admin))
    key = await api.key("t1", "alice")
    async with client(api, key) as oai:
        completion = await oai.chat.completions.create(
            model="agentbus-multi",
            messages=QUESTION,
        )
        stream = await oai.chat.completions.create(
            model="agentbus-multi",
            messages=QUESTION,
            stream=True,
        )
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    run_id = completion.id.removeprefix("chatcmpl-")
    run = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()

    text = completion.choices[0].message.content or ""
    assert "paused for approval (approve_answer)" in text and run_id in text
    assert f"/api/v1/runs/{run_id}/resume" in text and run["status"] == "suspended"
    assert (completion.model_extra or {})["agentbus"]["status"] == "suspended"
    assert "paused for approval" in streamed


async def test_errors_come_in_openais_shape(start_api: Any) -> None:
    # One run a minute: the second start is refused however slowly this host runs.
    api = await start_api(api_rate_per_minute=1, api_rate_burst=1)
    key = await api.key()
    async with client(api, "ab_not_a_key_12345") as bad:
        with pytest.raises(openai.AuthenticationError) as unauthorized:
            await bad.models.list()
    async with client(api, key, max_retries=0) as oai:
        with pytest.raises(openai.NotFoundError) as no_model:
            await oai.chat.completions.create(model="gpt-4o", messages=QUESTION)
        with pytest.raises(openai.BadRequestError) as not_a_question:
            await oai.chat.completions.create(
                model="agentbus", messages=[{"role": "assistant", "content": "hi"}]
            )
        await oai.chat.completions.create(model="agentbus", messages=QUESTION)
        with pytest.raises(openai.RateLimitError) as limited:
            await oai.chat.completions.create(model="agentbus", messages=QUESTION)

    assert unauthorized.value.body == {
        "message": unauthorized.value.body["message"],  # type: ignore[index]
        "type": "invalid_request_error",
        "code": "invalid_api_key",
        "param": None,
    }
    assert no_model.value.code == "model_not_found" and no_model.value.param == "model"
    assert not_a_question.value.param == "messages"
    assert limited.value.code == "rate_limited" and limited.value.type == "rate_limit_error"
    assert 1 <= int(limited.value.response.headers["retry-after"]) <= 60


async def test_a_client_that_leaves_mid_stream_cancels_its_run(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(token_delay=0.05))
    key = await api.key()
    async with client(api, key) as oai:
        stream = await oai.chat.completions.create(
            model="agentbus",
            messages=QUESTION,
            stream=True,
        )
        received, run_id = 0, ""
        async for chunk in stream:
            received += bool(chunk.choices and chunk.choices[0].delta.content)
            if received == 3:
                run_id = chunk.id.removeprefix("chatcmpl-")
                break
        await stream.close()

    async def cancelled() -> bool:
        got = await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))
        return got.json()["status"] == "cancelled"

    await wait_for(cancelled, within=60, interval=0.1)


async def test_conversations_belong_to_their_user(start_api: Any) -> None:
    api = await start_api()
    alice, bob = await api.key("t1", "alice"), await api.key("t1", "bob")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    async with client(api, alice) as oai:
        mine = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
        )
    conversation = mine.headers["x-agentbus-conversation"]
    async with client(api, bob) as oai:
        with pytest.raises(openai.NotFoundError) as by_header:
            await oai.chat.completions.create(
                model="agentbus",
                messages=QUESTION,
                extra_headers={"X-Agentbus-Conversation": conversation},
            )
        by_user = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
            user=conversation,
        )
    async with client(api, admin) as oai:
        with pytest.raises(openai.PermissionDeniedError) as admin_adds:
            await oai.chat.completions.create(
                model="agentbus",
                messages=QUESTION,
                extra_headers={"X-Agentbus-Conversation": conversation},
            )
    stored = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(alice))

    assert by_header.value.code == "conversation_not_found"
    assert by_user.headers["x-agentbus-conversation"] != conversation
    assert admin_adds.value.code == "not_owner"
    assert len(stored.json()["messages"]) == 2  # only alice's own turn


async def test_a_retry_after_a_429_does_not_seed_the_conversation_twice(start_api: Any) -> None:
    # One start per five seconds: the second start comes within them even on a loaded host.
    api = await start_api(api_rate_per_minute=12, api_rate_burst=1)
    key = await api.key()
    history: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "Let us do arithmetic."},
        {"role": "assistant", "content": "Sure."},
        *QUESTION,
    ]
    async with client(api, key) as oai:  # the package retries the 429 after Retry-After
        # Streamed, so it returns once the run started: the next start comes well within
        # the five seconds the rate limit needs to allow another.
        first = await oai.chat.completions.create(
            model="agentbus",
            messages=QUESTION,
            stream=True,
        )
        raw = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=history,
        )
        async for _ in first:  # let the first run finish before its conversation is listed
            pass
    conversation = raw.headers["x-agentbus-conversation"]
    stored = await api.http.get(f"/api/v1/conversations/{conversation}", headers=api.auth(key))
    listed = await api.http.get("/api/v1/conversations", headers=api.auth(key))

    assert raw.retries_taken >= 1
    assert len(listed.json()["conversations"]) == 2  # no orphan left by the refused attempt
    assert [m["content"] for m in stored.json()["messages"]][:2] == [
        "Let us do arithmetic.",
        "Sure.",
    ]
    assert len(stored.json()["messages"]) == 4


async def test_an_idempotency_key_makes_a_retry_follow_the_same_run(start_api: Any) -> None:
    api = await start_api()
    key = await api.key()
    same = {"Idempotency-Key": "crm-4711"}
    async with client(api, key) as oai:
        first = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
            extra_headers=same,
        )
        again = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
            extra_headers=same,
        )
        other = await oai.chat.completions.with_raw_response.create(
            model="agentbus",
            messages=QUESTION,
        )
    runs = (await api.http.get("/api/v1/runs", headers=api.auth(key))).json()["runs"]

    assert first.headers["x-agentbus-run"] == again.headers["x-agentbus-run"]
    assert other.headers["x-agentbus-run"] != first.headers["x-agentbus-run"]
    assert again.parse().choices[0].message.content == BENCHMARK_ANSWER
    assert len(runs) == 2
