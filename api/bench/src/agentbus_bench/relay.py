"""Relay benchmark: N concurrent websocket clients, each asking one question (scripted model).

Every client connects to ``/api/v1/ws``, asks, and reads its run's events live until
``done``; then it joins the run again from ``0-0`` and compares: an id it never got live
is *lost*, an id it got twice is *duplicated*. Relay latency is event written (the event's
``ts``) → frame received by the client.

Against a running API give ``--url`` and a key (``--api-key``, ``AGENTBUS_API_KEY`` or
``<data_dir>/local-api-key``); its tenant's rate and concurrent-run limits must allow
``--clients`` runs at once. Without ``--url`` a temporary system is started: ``agentbus up``
(the workers, and the API process it starts), limits off, on embedded Redis and SQLite or
on the Redis / cluster / database a `Deployment` names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

from agentbus_bench.deployment import Deployment, temporary_data, wait_for_up

QUESTION = "What is 23 × 19?"


@dataclass
class ClientResult:
    """What one client saw."""

    status: str = "failed"
    error: str | None = None
    lost: int = 0
    duplicated: int = 0
    latencies_ms: list[float] = field(default_factory=list[float])
    since_xadd_ms: list[float] = field(default_factory=list[float])
    by_type: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    received_at: list[float] = field(default_factory=list[float])  # time.time() of each event


@dataclass
class _Start:
    """All clients connect first, then ask together: the handshakes don't blur the figures."""

    waiting: int
    go: asyncio.Event = field(default_factory=asyncio.Event)
    go_at: float = 0.0  # time.time() when every client may ask

    def arrived(self) -> None:
        self.waiting -= 1
        if self.waiting <= 0 and not self.go.is_set():
            self.go_at = time.time()
            self.go.set()


async def _one_client(
    ws_url: str, key: str, timeout_s: float, start: _Start, delay_s: float = 0.0
) -> ClientResult:
    result = ClientResult()
    arrived = False
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with (
            asyncio.timeout(timeout_s),
            connect(
                ws_url, additional_headers=headers, max_queue=None, open_timeout=timeout_s
            ) as ws,
        ):
            assert json.loads(await ws.recv())["type"] == "ready"
            arrived = True
            start.arrived()
            await start.go.wait()
            if delay_s:
                await asyncio.sleep(delay_s)
            await ws.send(json.dumps({"type": "ask", "question": QUESTION}))
            live: list[str] = []
            while True:
                raw = await ws.recv()
                received = time.time()  # before parsing: the client's own cost is not relay
                frame = json.loads(raw)
                if "id" not in frame:
                    if frame["type"] == "request_error":
                        result.error = frame["code"]
                        return result
                    continue
                latency = (received - frame["ts"]) * 1000
                result.latencies_ms.append(latency)
                # The entry id's first part is Redis's clock (ms) when the event was added.
                written_ms = int(frame["id"].partition("-")[0])
                result.since_xadd_ms.append(received * 1000 - written_ms)
                result.received_at.append(received)
                result.by_type.setdefault(frame["type"], []).append(latency)
                live.append(frame["id"])
                if frame["type"] == "done":
                    result.status = frame["status"]
                    break
            await ws.send(json.dumps({"type": "join", "run_id": frame["run_id"]}))
            truth: list[str] = []
            while True:
                replay = json.loads(await ws.recv())
                if "id" in replay:
                    truth.append(replay["id"])
                    if replay["type"] == "done":
                        break
            result.lost = len(set(truth) - set(live))
            result.duplicated = len(live) - len(set(live))
    except Exception as e:  # a client's failure is a figure, not a crash of the bench
        result.error = f"{type(e).__name__}: {e}"[:200]
    if not arrived:
        start.arrived()
    return result


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 2)


async def drive(
    url: str, key: str, clients: int, timeout_s: float, stagger_s: float = 0.0
) -> dict[str, object]:
    """Run the clients (asking at once, or spread over ``stagger_s``) and summarise."""
    ws_url = url.replace("http://", "ws://").replace("https://", "wss://") + "/api/v1/ws"
    before = _buckets(url)
    cpu_before = _api_cpu_s(url)
    started = time.perf_counter()
    start = _Start(clients)
    results = await asyncio.gather(
        *(
            _one_client(ws_url, key, timeout_s, start, stagger_s * i / clients)
            for i in range(clients)
        )
    )
    wall = time.perf_counter() - started
    stages = stage_figures(before, _buckets(url))
    cpu_after = _api_cpu_s(url)
    api_cpu_ms = (
        None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000
    )
    latencies = [ms for r in results for ms in r.latencies_ms]
    by_type: dict[str, list[float]] = {}
    for r in results:
        for kind, values in r.by_type.items():
            by_type.setdefault(kind, []).extend(values)
    errors: dict[str, int] = {}
    for r in results:
        if r.error:
            errors[r.error] = errors.get(r.error, 0) + 1
    return {
        "clients": clients,
        # "burst": every client asks at the same instant; else the asks' spread in seconds.
        "arrival": "burst" if not stagger_s else f"staggered over {stagger_s:g} s",
        "runs_done": sum(r.status == "done" for r in results),
        "runs_failed": sum(r.status != "done" for r in results),
        "events_lost": sum(r.lost for r in results),
        "events_duplicated": sum(r.duplicated for r in results),
        "p50_ms": round(statistics.median(latencies), 2) if latencies else 0.0,
        "p99_ms": pct(latencies, 0.99),
        "events": len(latencies),
        # From the entry id (Redis's clock at XADD, whole ms, so up to 1 ms too high): the
        # relay's share alone, without work done between an event's ts and its XADD.
        "p50_ms_since_xadd": pct([ms for r in results for ms in r.since_xadd_ms], 0.5),
        "p99_ms_since_xadd": pct([ms for r in results for ms in r.since_xadd_ms], 0.99),
        # Server-side stages from the API's histograms (XADD -> relay read -> socket
        # write); the client's receive is p50_ms_since_xadd.
        "stages_ms_since_xadd": stages,
        "wall_s": round(wall, 2),
        # The API process's own CPU over the run (its process_cpu_seconds_total; None when
        # the API is not on this host's /proc), per event delivered: the relay's cost.
        "api_cpu_ms": None if api_cpu_ms is None else round(api_cpu_ms),
        "api_cpu_us_per_event": None
        if api_cpu_ms is None or not latencies
        else round(api_cpu_ms * 1000 / len(latencies), 1),
        "errors": errors,
        # Where the time goes: events written before a SQL write (run_started, done) or
        # inside a busy step carry an earlier ts than the moment they reach Redis.
        "p50_ms_by_type": {k: round(statistics.median(v), 2) for k, v in sorted(by_type.items())},
        "p99_ms_by_type": {k: pct(v, 0.99) for k, v in sorted(by_type.items())},
        "since_xadd_over_time": over_time(results, start.go_at),
    }


def over_time(
    results: list[ClientResult], go_at: float, window_s: float = 0.25
) -> dict[str, dict[str, float]]:
    """Latency since XADD per window of arrival after the clients asked: the burst's share.

    Keys are the window's start in ms after "go"; values the events received in it and
    their p50/p99 since XADD (ms).
    """
    windows: dict[int, list[float]] = {}
    for r in results:
        for at, ms in zip(r.received_at, r.since_xadd_ms, strict=True):
            windows.setdefault(int((at - go_at) / window_s), []).append(ms)
    return {
        str(int(w * window_s * 1000)): {"n": len(v), "p50": pct(v, 0.5), "p99": pct(v, 0.99)}
        for w, v in sorted(windows.items())
    }


STAGES = {
    "relay_read": "agentbus_relay_read_delay_seconds",
    "ws_send": "agentbus_ws_send_delay_seconds",
    "gc_pause": "agentbus_gc_pause_seconds",
}


def _buckets(url: str) -> dict[str, list[tuple[float, float]]]:
    """The API's stage histograms as cumulative (upper bound, count) pairs."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=10).text
    found: dict[str, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(text):
        for stage, name in STAGES.items():
            if family.name == name.removesuffix("_seconds") or family.name == name:
                summed: dict[float, float] = {}
                for s in family.samples:
                    if s.name.endswith("_bucket"):
                        le = float(s.labels["le"])
                        summed[le] = summed.get(le, 0.0) + s.value
                found[stage] = sorted(summed.items())
    return found


def _api_cpu_s(url: str) -> float | None:
    """The API process's CPU seconds so far, from its /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == "process_cpu_seconds":
            return sum(s.value for s in family.samples)
    return None


def _quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus' histogram_quantile over cumulative buckets, in ms."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if upper == float("inf"):
                return round(lower * 1000, 2)
            share = (rank - below) / (count - below) if count > below else 1.0
            return round((lower + (upper - lower) * share) * 1000, 2)
        lower, below = upper, count
    return None


def stage_figures(
    before: dict[str, list[tuple[float, float]]], after: dict[str, list[tuple[float, float]]]
) -> dict[str, dict[str, float | None]]:
    """p50/p99 (ms, from the buckets) of each server-side stage during the run."""
    out: dict[str, dict[str, float | None]] = {}
    for stage, cumulative in after.items():
        earlier = dict(before.get(stage, []))
        delta = [(le, n - earlier.get(le, 0.0)) for le, n in cumulative]
        n = delta[-1][1] if delta else 0.0
        # The smallest bucket bound holding every observation: a rare long stall shows here.
        top = next((le for le, c in delta if c >= n), None) if n else None
        out[stage] = {
            "p50": _quantile(delta, 0.5),
            "p99": _quantile(delta, 0.99),
            "n": n,
            "max_le": None if top is None else top * 1000,
        }
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def temporary_system(
    clients: int,
    token_delay_s: float,
    log: Path | None = None,
    deployment: Deployment | None = None,
    processes: int = 1,
) -> Generator[tuple[str, str], None, None]:
    """``agentbus up`` (workers and the API) on a temporary data folder.

    Yields (url, key). ``log``: where the process's output goes (default: the data folder).
    """
    with temporary_tenants(clients, token_delay_s, log, deployment, processes) as (url, keys):
        yield url, keys["bench"]


@contextlib.contextmanager
def temporary_tenants(
    clients: int,
    token_delay_s: float,
    log: Path | None = None,
    deployment: Deployment | None = None,
    processes: int = 1,
    *,
    tenants: tuple[str, ...] = ("bench",),
    env_extra: dict[str, str] | None = None,
) -> Generator[tuple[str, dict[str, str]], None, None]:
    """`temporary_system` with a user key for each of ``tenants`` and more environment
    (``env_extra``, e.g. the scripted model's latency). Yields (url, keys by tenant)."""
    from api import credentials
    from bus.store import KeyRole, open_store

    agentbus = str(Path(sys.executable).with_name("agentbus"))
    target = deployment or Deployment()
    with temporary_data() as tmp, target.started(Path(tmp)) as target:
        data = Path(tmp)
        port = _free_port()
        env = target.env(data)
        env.update(
            AGENTBUS_LLM="scripted",
            AGENTBUS_LLM_TOKEN_DELAY_S=str(token_delay_s),
            AGENTBUS_LOG_LEVEL="warning",
            AGENTBUS_API_RATE_PER_MINUTE="0",
            AGENTBUS_API_MAX_ACTIVE_RUNS="0",
            AGENTBUS_API_PORT=str(port),  # the API process `agentbus up` starts
        )
        env.update(env_extra or {})
        log = log or data / "up.log"
        start = log.stat().st_size if log.exists() else 0
        with log.open("ab") as out:
            command = [agentbus, "up", "--concurrency", str(clients)]
            command += ["--processes", str(processes)]
            up = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for_up(up, log, within=120, offset=start)

            async def make_keys() -> dict[str, str]:
                async with open_store(target.settings(data)) as stores:
                    minted: dict[str, str] = {}
                    for tenant in tenants:
                        key = await credentials.create_key(
                            stores.keys, tenant, "bench", KeyRole.USER
                        )
                        minted[tenant] = key.key
                    return minted

            keys = asyncio.run(make_keys())
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                        break
                if up.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("agentbus up did not serve the API")
                time.sleep(0.2)
            yield url, keys
        finally:
            up.send_signal(signal.SIGTERM)
            try:
                up.wait(30)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait(5)


def key_from_environment() -> str | None:
    if key := os.environ.get("AGENTBUS_API_KEY"):
        return key
    from api.compose.local_key import read_local_key
    from api.settings import ApiSettings

    return read_local_key(ApiSettings())


def main(
    *,
    url: str | None,
    clients: int,
    api_key: str | None,
    timeout_s: float,
    token_delay_s: float,
    as_json: bool,
    deployment: Deployment | None = None,
    processes: int = 1,
    stagger_s: float = 0.0,
) -> None:
    """Entry point for ``agentbus bench relay``."""
    if url is None:
        system = temporary_system(
            clients, token_delay_s, deployment=deployment, processes=processes
        )
        with system as (spawned_url, key):
            figures = asyncio.run(drive(spawned_url, key, clients, timeout_s, stagger_s))
    else:
        key = api_key or key_from_environment()
        if not key:
            raise SystemExit("no API key: pass --api-key or set AGENTBUS_API_KEY")
        figures = asyncio.run(drive(url.rstrip("/"), key, clients, timeout_s, stagger_s))
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>20}: {v}")
