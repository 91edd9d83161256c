"""Adapter for any OpenAI-compatible ``/v1/chat/completions`` endpoint, streamed over SSE.

Works with OpenAI, vLLM, Ollama, llama.cpp's server and the like. Transient failures (429,
5xx, dropped or refused connections) are retried with exponential backoff and jitter,
honouring ``Retry-After``, but only until the first event has been yielded: after that a
retry would show the consumer the same tokens twice, so the error is raised instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agents.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMError,
    LLMNotFound,
    LLMTimeout,
    LLMUnavailable,
)
from agents.llm.openai_stream import StreamFailed, parse_stream
from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition, check_request
from bus.json_values import is_object

_RETRY_STATUSES = frozenset({408, 425, 429})


class OpenAICompatConfig(BaseModel):
    """Where and how to reach the endpoint.

    Attributes:
        base_url: the API root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: sent as a bearer token; ``None`` sends no Authorization header.
        model: the model name the server knows.
        connect_timeout: seconds to open a connection.
        read_timeout: longest silence, in seconds, between two pieces of the response
            (including the wait for the first token while the prompt is processed).
        max_retries: retries after the first attempt, for transient failures only.
        backoff_s: first backoff; doubles each retry, with jitter, up to ``backoff_max_s``.
        max_retry_after_s: a ``Retry-After`` longer than this fails at once instead of waiting.
        think_param: how ``LLMOptions.think`` reaches the server: not at all, as
            ``chat_template_kwargs.enable_thinking`` (vLLM, llama.cpp, Qwen3-style templates),
            or as ``reasoning_effort`` (OpenAI reasoning models).
        extra_body: merged into every request body last (server-specific knobs).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str
    api_key: SecretStr | None = None
    model: str
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=20.0, ge=0)
    max_retry_after_s: float = Field(default=60.0, ge=0)
    think_param: Literal["none", "chat_template_kwargs", "reasoning_effort"] = "none"
    extra_body: dict[str, Any] = Field(default_factory=dict)


class _Transient(Exception):
    """An attempt failed in a way another attempt may not; carries the final error."""

    def __init__(self, error: LLMError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAICompatLLM:
    """Streams chat completions from an OpenAI-compatible endpoint.

    Args:
        config: endpoint, model, timeouts and retry policy.
        client: an httpx client to share; by default the adapter owns one (close it with
            :meth:`aclose` or ``async with``).
    """

    def __init__(self, config: OpenAICompatConfig, *, client: httpx.AsyncClient | None = None):
        self.config = config
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
        )
        self._url = config.base_url.rstrip("/") + "/chat/completions"

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self.config.model}"

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAICompatLLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """Stream one completion; see the module docstring for the retry rule.

        Raises:
            LLMAuthError: 401/403. LLMNotFound: 404 or an unknown model.
            LLMBadRequest: other 4xx. LLMTimeout: connect or read timeout.
            LLMUnavailable: 429/5xx/connection failures that outlasted the retries, or
                any failure after the first event. LLMBadResponse: not a chat stream.
        """
        check_request(messages, tools)
        body = build_body(self.config, messages, tools, options or LLMOptions())
        attempt = 0
        while True:
            yielded = False
            try:
                # aclosing: if our consumer stops early, the response is closed right away.
                async with contextlib.aclosing(self._attempt(body)) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except _Transient as t:
                if yielded or attempt >= self.config.max_retries:
                    raise t.error from t.__cause__
                delay = self._delay(attempt, t.retry_after)
                if delay is None:
                    raise t.error from t.__cause__
            attempt += 1
            await asyncio.sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next attempt, or None to give up now."""
        if retry_after is not None:
            return retry_after if retry_after <= self.config.max_retry_after_s else None
        ceiling = min(self.config.backoff_max_s, self.config.backoff_s * 2**attempt)
        # "Equal jitter": at least half the backoff, so retries never bunch up at zero.
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def _attempt(self, body: dict[str, Any]) -> AsyncGenerator[LLMEvent]:
        headers = {"Accept": "text/event-stream"}
        if self.config.api_key is not None:
            headers["Authorization"] = f"Bearer {self.config.api_key.get_secret_value()}"
        try:
            async with self._client.stream("POST", self._url, json=body, headers=headers) as r:
                if r.status_code >= 400:
                    await r.aread()
                    raise _status_error(r, self.config)
                if "text/event-stream" not in r.headers.get("content-type", ""):
                    raise LLMBadResponse(
                        f"{self._url} answered {r.headers.get('content-type')!r}, not an SSE stream"
                    )
                async with contextlib.aclosing(parse_stream(r.aiter_lines())) as events:
                    async for event in events:
                        yield event
        except httpx.ConnectTimeout as e:
            raise _Transient(LLMTimeout(f"no connection to {self._url} in time")) from e
        except httpx.ReadTimeout as e:
            raise LLMTimeout(f"{self._url} sent nothing for {self.config.read_timeout:g}s") from e
        except (httpx.WriteTimeout, httpx.PoolTimeout) as e:
            raise LLMTimeout(f"{self._url} timed out ({type(e).__name__})") from e
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
            raise _Transient(LLMUnavailable(f"connection to {self._url} failed: {e}")) from e
        except StreamFailed as e:
            raise _Transient(LLMUnavailable(f"{self._url}: {e}")) from e


def build_body(
    config: OpenAICompatConfig,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolDefinition],
    options: LLMOptions,
) -> dict[str, Any]:
    """The JSON request body for one streamed chat completion."""
    body: dict[str, Any] = {
        "model": options.model or config.model,
        "messages": [_wire_message(m) for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    if options.require_tool and tools:
        body["tool_choice"] = "required"
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.response_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": options.response_schema},
        }
    if config.think_param == "chat_template_kwargs":
        body["chat_template_kwargs"] = {"enable_thinking": options.think}
    elif config.think_param == "reasoning_effort" and options.think:
        body["reasoning_effort"] = "medium"
    body.update(config.extra_body)
    return body


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        # OpenAI matches results by tool_call_id; "name" is not part of its tool message.
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    return wire


def _status_error(response: httpx.Response, config: OpenAICompatConfig) -> Exception:
    """Map an HTTP error status to the error to raise (wrapped in _Transient if retryable)."""
    status = response.status_code
    message, code = _error_detail(response)
    where = f"{response.request.url} answered {status}: {message}"
    if status in (401, 403):
        return LLMAuthError(where)
    if status == 404 or code == "model_not_found":
        return LLMNotFound(f"model {config.model!r} or the endpoint was not found; {where}")
    if status in _RETRY_STATUSES or status >= 500:
        return _Transient(LLMUnavailable(where), _retry_after(response.headers))
    return LLMBadRequest(where)


def _error_detail(response: httpx.Response) -> tuple[str, str | None]:
    """The server's error message (truncated) and its error code, when it sent JSON."""
    text = response.text[:500] or response.reason_phrase
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return text, None
    if is_object(error):
        code = error.get("code")
        return str(error.get("message") or text)[:500], str(code) if code else None
    return str(error or text)[:500], None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``)."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        if value.strip().replace(".", "", 1).isdigit():
            return float(value)
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (ValueError, TypeError):
        return None
