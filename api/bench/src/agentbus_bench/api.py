"""REST edge benchmark: ``POST /api/v1/runs``, then follow the run's events (SSE) to ``done``.

Two phases against one system:

* **one at a time**: ``--sequential`` runs, each posted only after the previous one is
  done, so each POST meets an idle system: POST latency (request sent → 202 read) and
  time to first answer token (POST sent → first ``answer`` event read by the client).
* **burst**: ``--runs`` runs posted with ``--concurrency`` POSTs in flight, each followed
  to ``done``: accepted/s (202s over the time until the last 202), answered/s (202s and
  429s with Retry-After, over the time until the last of them), connection errors
  (a reset or a refused connection: the client got no answer), other refusals by code,
  runs done, the time until the last run is done, and first-token latency under load.
  The burst's runs share a connection pool per ``PER_POOL`` of them, as that many
  separate clients would.

Without ``--url`` a temporary ``agentbus up`` (workers, embedded Redis, the API in one
process, limits off) is started and its log searched for ``database is locked``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from agentbus_bench.relay import key_from_environment, pct, temporary_system

# The API's own figures (/metrics): each stage of a POST (api.app.post_stages), the whole
# request in the app, and the process's CPU.
_STAGE_FAMILY = "agentbus_api_post_stage_seconds"
_REQUEST_FAMILY = "agentbus_api_request_seconds"
_POST_ROUTE = "/api/v1/runs"


@dataclass
class ServerFigures:
    """Cumulative sums and counts read from the API's /metrics."""

    stages: dict[str, tuple[float, float]]
    request: tuple[float, float]
    cpu_s: float


async def server_figures(client: httpx.AsyncClient) -> ServerFigures | None:
    """The API's stage sums, POST request sum and CPU seconds; None without /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        resp = await client.get("/metrics")
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    stages: dict[str, list[float]] = {}
    request, cpu = [0.0, 0.0], 0.0
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            kind = sample.name.rpartition("_")[2]
            if kind not in ("sum", "count"):
                if sample.name == "process_cpu_seconds_total":
                    cpu = sample.value
                continue
            at = 0 if kind == "sum" else 1
            if family.name == _STAGE_FAMILY:
                stages.setdefault(sample.labels["stage"], [0.0, 0.0])[at] = sample.value
            elif family.name == _REQUEST_FAMILY and sample.labels.get("route") == _POST_ROUTE:
                request[at] = sample.value
    return ServerFigures(
        {k: (v[0], v[1]) for k, v in stages.items()}, (request[0], request[1]), cpu
    )


def stage_breakdown(
    before: ServerFigures | None, after: ServerFigures | None, runs: int
) -> dict[str, object]:
    """Mean ms of each POST stage in the app between two readings, and API CPU per run."""
    if before is None or after is None:
        return {}
    means: dict[str, float] = {}
    for stage, (total, count) in after.stages.items():
        total0, count0 = before.stages.get(stage, (0.0, 0.0))
        if count > count0:
            means[stage] = round((total - total0) / (count - count0) * 1000, 3)
    posts = after.request[1] - before.request[1]
    in_app = (after.request[0] - before.request[0]) / posts * 1000 if posts else 0.0
    return {
        "stage_mean_ms": means,
        "in_app_mean_ms": round(in_app, 3),
        "api_cpu_ms_per_run": round((after.cpu_s - before.cpu_s) / runs * 1000, 2) if runs else 0,
    }


QUESTION = "What is 23 × 19?"


@dataclass
class RunResult:
    """What one posted question gave."""

    accepted_at: float = 0.0
    answered_at: float = 0.0  # a 202, or a 429 with Retry-After
    post_ms: float | None = None
    first_token_ms: float | None = None
    status: str | None = None
    error: str | None = None
    reconnects: int = 0
    reconnect_causes: list[str] = field(default_factory=list[str])


async def _one_run(client: httpx.AsyncClient, body: dict[str, object]) -> RunResult:
    result = RunResult()
    sent = time.perf_counter()
    try:
        resp = await client.post("/api/v1/runs", json=body)
    except httpx.TransportError as e:
        result.error = f"connection: {type(e).__name__}"
        return result
    result.post_ms = (time.perf_counter() - sent) * 1000
    if resp.status_code == 202 or (resp.status_code == 429 and "retry-after" in resp.headers):
        result.answered_at = time.perf_counter()
    if resp.status_code != 202:
        code = (
            resp.json().get("code")
            if resp.headers.get("content-type", "").startswith("application/json")
            else None
        )
        result.error = f"{resp.status_code} {code or ''}".strip()
        return result
    result.accepted_at = time.perf_counter()
    events_url = resp.json()["events_url"]
    last_id: str | None = None
    # As a browser's EventSource would: a dropped stream reconnects with Last-Event-ID
    # (an idle pooled connection the server closed meanwhile is the usual cause).
    for _ in range(3):
        headers = {"Last-Event-ID": last_id} if last_id else {}
        ended: str | None = None
        try:
            async with client.stream("GET", events_url, headers=headers) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("id: "):
                        last_id = line[4:]
                    if line.startswith("event: "):
                        ended = line[7:]  # a snapshot or slow_consumer frame
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[6:])
                    if event.get("type") == "answer" and result.first_token_ms is None:
                        result.first_token_ms = (time.perf_counter() - sent) * 1000
                    if event.get("type") == "done":
                        result.status = event.get("status")
                        result.error = None
                # The server ends a run's stream after its done: read to that end, as
                # a client that keeps its connection does (one left unread is closed,
                # and the next POST would open a new one).
                if result.status is not None:
                    return result
            result.reconnects += 1  # EventSource reconnects when a stream just ends
            result.error = f"events: ended before done after {ended or 'events'}"
        except httpx.TransportError as e:
            result.reconnects += 1
            result.error = f"events: {type(e).__name__}"
        result.reconnect_causes.append(result.error)
    return result


def _causes(results: list[RunResult]) -> dict[str, int]:
    causes: dict[str, int] = {}
    for r in results:
        for cause in r.reconnect_causes:
            causes[cause] = causes.get(cause, 0) + 1
    return causes


def _body(mode: str) -> dict[str, object]:
    settings: dict[str, object] = {"mode": mode}
    if mode == "multi":
        settings["accuracy"] = "accurate"
    return {"question": QUESTION, "settings": settings}


def _ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p99": 0.0}
    return {"p50": round(statistics.median(values), 2), "p99": pct(values, 0.99)}


#: Runs in flight per client connection pool in the burst. httpcore's pool scans every
#: connection it holds for each request it places, so one pool of 1,000 connections spent
#: ~75 % of the benchmark's CPU choosing connections and held the burst to the rate this
#: process could post at (~30/s on 2 busy cores). A pool per 10 runs is what 100 clients of
#: 10 users each would hold.
PER_POOL = 10


def _client(url: str, key: str, in_flight: int, tls: ssl.SSLContext) -> httpx.AsyncClient:
    # An idle connection is dropped before the server's keep-alive timeout (uvicorn's 5 s,
    # httpx's default too): with both at 5 s, a request sent on a connection the server is
    # closing at that moment fails (RemoteProtocolError) and its stream reconnects.
    limits = httpx.Limits(
        max_connections=in_flight * 2, max_keepalive_connections=in_flight, keepalive_expiry=2.0
    )
    return httpx.AsyncClient(
        base_url=url,
        verify=tls,
        headers={"Authorization": f"Bearer {key}"},
        limits=limits,
        timeout=httpx.Timeout(300.0, connect=60.0),
    )


async def drive(
    url: str, key: str, *, mode: str, sequential: int, runs: int, concurrency: int
) -> dict[str, object]:
    """Both phases against ``url``; returns the figures."""
    pools = -(-concurrency // PER_POOL)
    tls = ssl.create_default_context()  # one for every client: each costs ~10 ms to make
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(_client(url, key, -(-concurrency // pools), tls))
            for _ in range(pools)
        ]
        client = clients[0]
        body = _body(mode)
        at_start = await server_figures(client)
        alone = [await _one_run(client, body) for _ in range(sequential)]
        after_alone = await server_figures(client)
        gate = asyncio.Semaphore(concurrency)

        async def bounded(i: int) -> RunResult:
            async with gate:
                return await _one_run(clients[i % pools], body)

        started, own_cpu = time.perf_counter(), time.process_time()
        burst = await asyncio.gather(*(bounded(i) for i in range(runs)))
        all_done_s = time.perf_counter() - started
        own_cpu = time.process_time() - own_cpu
        after_burst = await server_figures(client)
    accepted = [r for r in burst if r.accepted_at]
    last_accept = max((r.accepted_at for r in accepted), default=started) - started
    answered = [r for r in burst if r.answered_at]
    last_answer = max((r.answered_at for r in answered), default=started) - started
    errors: dict[str, int] = {}
    for r in [*alone, *burst]:
        if r.error:
            errors[r.error] = errors.get(r.error, 0) + 1
    return {
        "mode": mode,
        "one_at_a_time": {
            "runs": sequential,
            "done": sum(r.status == "done" for r in alone),
            "post_ms": _ms([r.post_ms for r in alone if r.post_ms is not None]),
            "first_token_ms": _ms([r.first_token_ms for r in alone if r.first_token_ms]),
            "server": stage_breakdown(at_start, after_alone, sequential),
        },
        "burst": {
            "runs": runs,
            "concurrency": concurrency,
            "accepted": len(accepted),
            "accepted_per_s": round(len(accepted) / last_accept, 1) if last_accept else 0.0,
            # 202s and 429s with Retry-After, over the time until the last of them.
            "answered_per_s": round(len(answered) / last_answer, 1) if last_answer else 0.0,
            "connection_errors": sum(
                1 for r in burst if r.error and r.error.startswith(("connection", "events"))
            ),
            "done": sum(r.status == "done" for r in burst),
            "event_stream_reconnects": sum(r.reconnects for r in burst),
            "event_stream_reconnect_causes": _causes(burst),
            "all_done_s": round(all_done_s, 2),
            "post_ms": _ms([r.post_ms for r in burst if r.post_ms is not None]),
            "first_token_ms": _ms([r.first_token_ms for r in burst if r.first_token_ms]),
            "server": stage_breakdown(after_alone, after_burst, runs),
            # The driving client (httpx POST + SSE) shares the 2 cores with the system.
            "bench_cpu_ms_per_run": round(own_cpu / runs * 1000, 2),
        },
        "errors": errors,
    }


def main(
    *,
    url: str | None,
    api_key: str | None,
    mode: str,
    sequential: int,
    runs: int,
    concurrency: int,
    token_delay_s: float,
    as_json: bool,
) -> None:
    """Entry point for ``agentbus bench api``."""
    if url is None:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "up.log"
            with temporary_system(concurrency, token_delay_s, log) as (spawned, key):
                figures = asyncio.run(
                    drive(
                        spawned,
                        key,
                        mode=mode,
                        sequential=sequential,
                        runs=runs,
                        concurrency=concurrency,
                    )
                )
            figures["database_is_locked_lines"] = sum(
                "database is locked" in line
                for line in log.read_text(errors="replace").splitlines()
            )
    else:
        key = api_key or key_from_environment()
        if not key:
            raise SystemExit("no API key: pass --api-key or set AGENTBUS_API_KEY")
        figures = asyncio.run(
            drive(
                url.rstrip("/"),
                key,
                mode=mode,
                sequential=sequential,
                runs=runs,
                concurrency=concurrency,
            )
        )
    figures["load_avg_1m"] = round(os.getloadavg()[0], 2)
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>26}: {v}")
