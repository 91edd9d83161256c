"""HTTP requests with the client's retry rules.

* A 429 is retried after its ``Retry-After`` (seconds or an HTTP date), for any method: the
  API refused the request before doing anything.
* A 502/503/504, a dropped connection or a timeout is retried only for requests that are
  safe to repeat (reads, and starts that carry an ``Idempotency-Key``), with exponential
  backoff.
* Anything else that is not 2xx becomes the typed error of its code (``errors.error_from``).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any, cast

import httpx

from agentbus_client.errors import AgentbusError, ConnectionFailed, error_from

_TRANSIENT = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryRules:
    """How hard the client tries before raising.

    Attributes:
        max_retries: retries after the first attempt.
        backoff_s: first delay between retries of a transient failure (doubling).
        max_wait_s: the longest single wait, ``Retry-After`` included; a longer
            ``Retry-After`` is raised as ``RateLimited`` at once.
    """

    max_retries: int = 3
    backoff_s: float = 0.25
    max_wait_s: float = 60.0


def retry_after(response: httpx.Response) -> float | None:
    """The response's ``Retry-After`` in seconds, if it has a usable one."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error(response: httpx.Response) -> AgentbusError:
    try:
        doc = response.json().get("error")
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        doc = {"code": f"http_{response.status_code}", "message": response.text[:200]}
    error = error_from(cast("dict[str, Any]", doc), response.status_code)  # the server's JSON
    if error.retry_after is None:
        error.retry_after = retry_after(response)
    return error


async def send(
    http: httpx.AsyncClient,
    rules: RetryRules,
    method: str,
    path: str,
    *,
    repeatable: bool,
    **kwargs: Any,
) -> httpx.Response:
    """Send one request under the retry rules; the 2xx response, or a typed error."""
    attempt = 0
    while True:
        try:
            response = await http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            if not repeatable or attempt >= rules.max_retries:
                raise ConnectionFailed(
                    f"{method} {path} failed: {type(e).__name__}: {e}",
                    code="connection_failed",
                    hint="check the API URL and that the API is up",
                ) from e
            await asyncio.sleep(min(rules.backoff_s * 2**attempt, rules.max_wait_s))
            attempt += 1
            continue
        if response.is_success:
            return response
        wait = _wait(response, rules, attempt, repeatable)
        if wait is None:
            raise _error(response)
        await asyncio.sleep(wait)
        attempt += 1


def _wait(
    response: httpx.Response, rules: RetryRules, attempt: int, repeatable: bool
) -> float | None:
    """How long to wait before retrying ``response``, or None to raise it now."""
    if attempt >= rules.max_retries:
        return None
    status = response.status_code
    after = retry_after(response)
    if status == 429:
        wait = after if after is not None else rules.backoff_s * 2**attempt
        return wait if wait <= rules.max_wait_s else None
    if status in _TRANSIENT and repeatable:
        backoff = rules.backoff_s * 2**attempt
        return min(after if after is not None else backoff, rules.max_wait_s)
    return None
