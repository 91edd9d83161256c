"""The web page's benchmark: how long an event takes from the socket to the DOM.

Starts the system (every role, the API; a temporary embedded Redis unless
``--redis-url``), opens the page in headless Debian chromium, asks for a 1,000-token
answer (the scripted model, paced by ``--token-delay`` per token so it arrives in a few
hundred events, as a real model's would) and measures in the browser, with the
Performance API: for each ``answer`` event, the time from its arrival on the websocket
(``performance.now()`` in a message listener that runs before the page's own) to the
moment the page's answer holds its text (a MutationObserver). Prints p50/p99/max.

    agentbus bench page [--token-delay 0.01] [--json]      (or: make bench-page)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentbus_bench.browser_system import CHROMIUM, CHROMIUM_ARGS, running_system
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, benchmark_turn, text, turn
from api.compose.connection import connect
from api.compose.settings import AppSettings

#: The answer the page is timed on: a thousand words, each its own token.
LONG_ANSWER = " ".join(f"w{n}" for n in range(1000))

INSTRUMENT = """(() => {
  const bench = { arrivals: [], latencies: [], total: 0 };
  window.__bench = bench;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (msg) => {
        const t = performance.now();
        let frame;
        try { frame = JSON.parse(msg.data); } catch { return; }
        if (frame.type !== 'answer') return;
        bench.total += frame.delta.length;
        bench.arrivals.push({ t, need: bench.total });
      });
    }
  };
  const watch = () => new MutationObserver(() => {
    const answer = document.querySelector('.turn:last-child .answer');
    if (!answer) return;
    const now = performance.now();
    const shown = answer.textContent.length;
    while (bench.arrivals.length && bench.arrivals[0].need <= shown) {
      bench.latencies.push(now - bench.arrivals.shift().t);
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
  if (document.body) watch(); else addEventListener('DOMContentLoaded', watch);
})();"""


def long_answer_llm(token_delay: float) -> ScriptedLLM:
    """The scripted model, answering with `LONG_ANSWER` paced by ``token_delay`` per token."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        if agent_of(messages, options) == "researcher":
            return turn(text(LONG_ANSWER))
        return benchmark_turn(messages, tools, options)

    return ScriptedLLM(script, token_delay=token_delay)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(settings: AppSettings, data: Path, token_delay: float) -> dict[str, Any]:
    """Run the page against a fresh system and return the figures."""
    from playwright.async_api import async_playwright

    from api import credentials
    from api.app.sessions import mint_login_token
    from api.streams.session_store import RedisSessionStore

    async with (
        connect(settings.bus, embedded=True) as conn,
        running_system(conn.redis, settings, long_answer_llm(token_delay), data) as system,
        async_playwright() as pw,
    ):
        key = await system.key()
        kid = credentials.key_id(key)
        assert kid is not None
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 860})
            await page.add_init_script(INSTRUMENT)
            await page.goto(
                f"{system.base}/#login={await mint_login_token(RedisSessionStore(conn.redis), kid)}"
            )
            await page.wait_for_selector(".conn.online")
            await page.locator(".question-input").fill("Count to a thousand")
            await page.locator(".question-input").press("Enter")
            await page.wait_for_function(
                "() => document.querySelector('.turn:last-child')?.dataset.status === 'done'",
                timeout=180_000,
            )
            bench = await page.evaluate("window.__bench")
            words = await page.evaluate(
                "document.querySelector('.turn:last-child .answer').textContent.split(' ').length"
            )
            version = browser.version
        finally:
            await browser.close()
        await system.proxy.stop()
    latencies: list[float] = bench["latencies"]
    return {
        "events": len(latencies),
        "unmatched": len(bench["arrivals"]),
        "tokens": words,
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(_pct(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        "within_one_frame": round(sum(v <= 1000 / 60 for v in latencies) / len(latencies), 3),
        "token_delay_s": token_delay,
        "chromium": version,
    }


def main(*, redis_url: str | None, token_delay: float, as_json: bool) -> None:
    """Entry point for ``agentbus bench page``."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = AppSettings.load(
            redis_url=redis_url, data_dir=Path(tmp), embedder="hashing", read_block_ms=100
        )
        figures = asyncio.run(measure(settings, Path(tmp), token_delay))
    if as_json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>17}: {v}")


if __name__ == "__main__":
    import sys

    main(redis_url=None, token_delay=0.01, as_json="--json" in sys.argv)
