"""``agentbus ask --api-url``: a real CLI process against a real API server, via the client."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from agents.llm.scripted import BENCHMARK_ANSWER
from tests import warm_cli


async def run_cli(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``agentbus ARGS`` in a process of its own, with ``env`` and no other ``AGENTBUS_*``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBUS_")}
    done = await asyncio.wait_for(warm_cli.run(args, {**clean, **env}), 240)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.timeout(300)
async def test_ask_renders_a_remote_run_live(start_api: Any) -> None:
    api = await start_api()
    env = {"AGENTBUS_API_URL": api.base, "AGENTBUS_API_KEY": await api.key()}

    # Three processes at once: starting one takes seconds on a busy machine.
    (code, out, _), (jcode, jout, _), (bad, _, err) = await asyncio.gather(
        run_cli(["ask", "What is 23 × 19?"], env),
        run_cli(["ask", "--json", "--mode", "multi", "23 × 19?"], env),
        run_cli(["ask", "q"], {**env, "AGENTBUS_API_KEY": "ab_nope_123456789"}),
    )

    assert code == 0 and BENCHMARK_ANSWER in " ".join(out.split()) and "conversation:" in out
    assert "→ calculator" in out  # the tool step, rendered as locally
    events = [json.loads(line) for line in jout.splitlines()]
    assert jcode == 0 and events[-1]["type"] == "done" and events[-1]["status"] == "done"
    assert "plan" in {e["type"] for e in events}  # multi mode reached the API's run
    assert all(e["id"] for e in events)
    assert bad == 2 and "error [unauthorized]" in err
