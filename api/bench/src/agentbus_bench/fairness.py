"""Fairness benchmark: does one tenant's flood delay another tenant's questions?

Against a temporary ``agentbus up`` (scripted model with ``--latency`` before each call,
rate and concurrent-run limits off, one user key per tenant):

1. **alone**: tenant B asks one question every ``--interval`` seconds, ``--questions``
   times, on an idle system; each is followed (SSE) to ``done``;
2. **flood**: tenant A posts ``--flood`` runs at once (``--post-concurrency`` POSTs in
   flight, not followed), and while they are posted B asks the same way again;
3. **flood, posted**: once A's POSTs are all answered (most of its runs still waiting), B
   asks once more: the queues' share of B's wait without the POST storm's.

It reports B's time to the first answer token and to ``done`` (from its POST), p50 and
p99, alone and during the flood, their ratios (flood / alone), where B's wait goes (p50 of
its POST's answer, and of its ``run_started`` event: admitted and through intake), A's
accepted and refused POSTs (a refusal with ``Retry-After`` is backpressure), and the
host's load. One JSON line
with ``--json``. ``--processes 2`` runs the workers in two processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass

import httpx

from agentbus_bench.relay import pct, temporary_tenants

QUESTION = "What is 23 × 19?"


@dataclass
class Timing:
    """One of B's questions: seconds from its POST to its first answer token and to done."""

    post_s: float | None = None
    started_s: float | None = None
    first_token_s: float | None = None
    done_s: float | None = None
    status: str | None = None
    error: str | None = None


async def ask_and_follow(client: httpx.AsyncClient, body: dict[str, object]) -> Timing:
    """POST one question and read its events (SSE) to ``done``."""
    timing = Timing()
    sent = time.perf_counter()
    try:
        resp = await client.post("/api/v1/runs", json=body)
        timing.post_s = time.perf_counter() - sent
        if resp.status_code != 202:
            timing.error = f"{resp.status_code} {resp.text[:80]}"
            return timing
        async with client.stream("GET", resp.json()["events_url"]) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event.get("type") == "run_started" and timing.started_s is None:
                    timing.started_s = time.perf_counter() - sent  # admitted, intake done
                if event.get("type") == "answer" and timing.first_token_s is None:
                    timing.first_token_s = time.perf_counter() - sent
                if event.get("type") == "done":
                    timing.done_s = time.perf_counter() - sent
                    timing.status = event.get("status")
                    return timing
        timing.error = "events ended before done"
    except httpx.HTTPError as e:
        timing.error = type(e).__name__
    return timing


async def tenant_b(
    client: httpx.AsyncClient, questions: int, interval_s: float, body: dict[str, object]
) -> list[Timing]:
    """B's questions, one every ``interval_s``, each followed to its end."""
    tasks: list[asyncio.Task[Timing]] = []
    for _ in range(questions):
        tasks.append(asyncio.create_task(ask_and_follow(client, body)))
        await asyncio.sleep(interval_s)
    return await asyncio.gather(*tasks)


@dataclass
class Flood:
    """A's posts: accepted, refused (by code), and Retry-After seconds suggested."""

    accepted: int = 0
    refused: dict[str, int] | None = None
    retry_after_s: list[float] | None = None
    posted_s: float = 0.0


async def tenant_a(client: httpx.AsyncClient, runs: int, concurrency: int) -> Flood:
    """A's flood: ``runs`` POSTs, ``concurrency`` in flight, none followed."""
    flood = Flood(refused={}, retry_after_s=[])
    gate = asyncio.Semaphore(concurrency)
    body: dict[str, object] = {"question": QUESTION}
    started = time.perf_counter()

    async def post() -> None:
        async with gate:
            try:
                resp = await client.post("/api/v1/runs", json=body)
            except httpx.HTTPError as e:
                code = type(e).__name__
            else:
                if resp.status_code == 202:
                    flood.accepted += 1
                    return
                code = str(resp.json().get("error", {}).get("code", resp.status_code))
                if "retry-after" in resp.headers and flood.retry_after_s is not None:
                    flood.retry_after_s.append(float(resp.headers["retry-after"]))
            assert flood.refused is not None
            flood.refused[code] = flood.refused.get(code, 0) + 1

    await asyncio.gather(*(post() for _ in range(runs)))
    flood.posted_s = time.perf_counter() - started
    return flood


@dataclass
class Summary:
    """B's figures in one phase (seconds)."""

    done: int
    failed: int
    post_p50: float
    started_p50: float
    first_token_p50: float
    first_token_p99: float
    done_p50: float
    done_p99: float


def summary(timings: list[Timing]) -> Summary:
    """p50 and p99 of B's runs that ended ``done``."""
    done = [t for t in timings if t.done_s is not None and t.status == "done"]
    firsts = [t.first_token_s for t in done if t.first_token_s is not None]
    dones = [t.done_s for t in done if t.done_s is not None]
    posts = [t.post_s for t in done if t.post_s is not None]
    starts = [t.started_s for t in done if t.started_s is not None]
    return Summary(
        done=len(done),
        failed=len(timings) - len(done),
        post_p50=_p50(posts),
        started_p50=_p50(starts),
        first_token_p50=_p50(firsts),
        first_token_p99=pct(firsts, 0.99),
        done_p50=_p50(dones),
        done_p99=pct(dones, 0.99),
    )


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def _ratio(top: float, bottom: float) -> float:
    return round(top / bottom, 2) if bottom else 0.0


def _ratios(flood: Summary, alone: Summary) -> dict[str, float]:
    return {
        "first_token_p50": _ratio(flood.first_token_p50, alone.first_token_p50),
        "first_token_p99": _ratio(flood.first_token_p99, alone.first_token_p99),
        "done_p50": _ratio(flood.done_p50, alone.done_p50),
        "done_p99": _ratio(flood.done_p99, alone.done_p99),
    }


async def drive(
    url: str,
    keys: dict[str, str],
    *,
    flood: int,
    questions: int,
    interval_s: float,
    post_concurrency: int,
) -> dict[str, object]:
    """Both phases against ``url``; the figures."""
    timeout = httpx.Timeout(900.0, connect=60.0)
    limits = httpx.Limits(max_connections=post_concurrency + questions + 8)
    body: dict[str, object] = {"question": QUESTION}
    a_headers = {"Authorization": f"Bearer {keys['a']}"}
    b_headers = {"Authorization": f"Bearer {keys['b']}"}
    async with (
        httpx.AsyncClient(base_url=url, headers=a_headers, timeout=timeout, limits=limits) as a,
        httpx.AsyncClient(base_url=url, headers=b_headers, timeout=timeout, limits=limits) as b,
    ):
        await ask_and_follow(b, body)  # warm: first-run costs are not B's figures
        alone = summary(await tenant_b(b, questions, interval_s, body))
        load_alone = os.getloadavg()[0]
        flooding = asyncio.create_task(tenant_a(a, flood, post_concurrency))
        await asyncio.sleep(interval_s)  # A's first posts are in before B asks
        during = summary(await tenant_b(b, questions, interval_s, body))
        posted = await flooding
        load_flood = os.getloadavg()[0]
        # A's runs are all in and most still wait: the queues alone, no POST storm beside.
        queued = summary(await tenant_b(b, questions, interval_s, body))
    return {
        "alone": asdict(alone),
        "flood": asdict(during),
        "flood_posted": asdict(queued),
        "ratio": _ratios(during, alone),
        "ratio_posted": _ratios(queued, alone),
        "a_accepted": posted.accepted,
        "a_refused": posted.refused,
        "a_retry_after_s_p50": _p50(posted.retry_after_s or []),
        "a_posted_s": round(posted.posted_s, 2),
        "load_1m": {"alone": round(load_alone, 2), "flood": round(load_flood, 2)},
    }


def main(
    *,
    flood: int,
    questions: int,
    interval_s: float,
    latency_s: float,
    concurrency: int,
    processes: int,
    post_concurrency: int,
    as_json: bool,
) -> None:
    """Start a temporary system, run both phases, print the figures."""
    env = {"AGENTBUS_LLM_LATENCY_S": str(latency_s)}
    with temporary_tenants(
        concurrency, 0.0, processes=processes, tenants=("a", "b"), env_extra=env
    ) as (url, keys):
        figures = asyncio.run(
            drive(
                url,
                keys,
                flood=flood,
                questions=questions,
                interval_s=interval_s,
                post_concurrency=post_concurrency,
            )
        )
    figures = {
        "bench": "fairness",
        "flood": flood,
        "questions": questions,
        "interval_s": interval_s,
        "latency_s": latency_s,
        "concurrency": concurrency,
        "processes": processes,
        **figures,
    }
    if as_json:
        print(json.dumps(figures))
        return
    for phase in ("alone", "flood", "flood_posted"):
        f = figures[phase]
        assert isinstance(f, dict)
        print(f"B {phase}: {f}")
    print(f"ratios (flood / alone): {figures['ratio']}; posted: {figures['ratio_posted']}")
    print(
        f"A: {figures['a_accepted']} accepted, refused {figures['a_refused']}, "
        f"posted in {figures['a_posted_s']} s; load {figures['load_1m']}"
    )
