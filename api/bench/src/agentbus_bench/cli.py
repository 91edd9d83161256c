"""``agentbus bench cli``: how fast the command line starts.

Three figures, each over ``runs`` fresh processes: the wall time of ``agentbus --help``, and
the time from starting each remote command (``agentbus ask --api-url URL "…"``, ``agentbus
mcp --api-url URL``) to its first request arriving at a local stand-in API (a socket that
records when the request line came in, then answers 401 so the command ends).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

_BODY = b'{"error": {"code": "unauthorized", "message": "bench", "hint": null}}'
_REFUSAL = (
    b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nconnection: close\r\n"
    + f"content-length: {len(_BODY)}\r\n\r\n".encode()
    + _BODY
)


def _command(*args: str) -> list[str]:
    """The ``agentbus`` script installed beside this interpreter, as a user runs it."""
    return [str(Path(sys.executable).with_name("agentbus")), *args]


async def _help_seconds() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *_command("--help"), stdout=asyncio.subprocess.DEVNULL
    )
    await proc.wait()
    return time.perf_counter() - started


#: The remote commands timed, by name: their arguments after ``--api-url URL``.
REMOTE = {"ask": ["What is 23 × 19?"], "mcp": []}


async def _request_seconds(command: str) -> float:
    arrived: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        if not arrived.done():
            arrived.set_result(time.perf_counter())
        writer.write(_REFUSAL)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = {**os.environ, "AGENTBUS_API_KEY": "abk_bench_bench"}
    async with server:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *_command(command, "--api-url", f"http://127.0.0.1:{port}", *REMOTE[command]),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        at = await asyncio.wait_for(arrived, 60)
        await proc.wait()
    return at - started


async def main(*, runs: int, as_json: bool) -> None:
    """Time ``runs`` of each and print the figures."""
    helps = [await _help_seconds() for _ in range(runs)]
    figures: dict[str, object] = {
        "bench": "cli",
        "runs": runs,
        "help_s_p50": round(statistics.median(helps), 3),
        "help_s_min": round(min(helps), 3),
    }
    for command in REMOTE:
        times = [await _request_seconds(command) for _ in range(runs)]
        figures[f"{command}_request_s_p50"] = round(statistics.median(times), 3)
        figures[f"{command}_request_s_min"] = round(min(times), 3)
    figures["load_1m"] = round(os.getloadavg()[0], 2)
    if as_json:
        print(json.dumps(figures))
        return
    print(f"agentbus --help: p50 {figures['help_s_p50']} s (min {figures['help_s_min']} s)")
    for command in REMOTE:
        print(
            f"agentbus {command} --api-url, start to request: "
            f"p50 {figures[f'{command}_request_s_p50']} s "
            f"(min {figures[f'{command}_request_s_min']} s)"
        )
    print(f"load {figures['load_1m']}")
