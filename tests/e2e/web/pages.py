"""What browser tests do on the page, as a user would."""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.web.harness import System

RECORD_GROWTH = """() => {
  window.__growth = [];
  const seen = () => {
    const a = document.querySelector('.turn:last-child .answer');
    const len = a ? a.textContent.length : 0;
    if (len && window.__growth[window.__growth.length - 1] !== len) window.__growth.push(len);
  };
  const all = {subtree: true, childList: true, characterData: true};
  new MutationObserver(seen).observe(document.body, all);
}"""


async def open_signed_in(
    system: System, browser: Any, key: str, *, width: int = 1200, height: int = 860
) -> Any:
    """A page signed in through a one-time login link, chat ready."""
    page = await browser.page(width, height)
    await page.goto(await system.login_url(key))
    await page.wait_for_selector(".composer textarea")
    await page.wait_for_selector(".conn.online")
    return page


async def ask(page: Any, question: str) -> Any:
    """Type a question and press Enter; returns the new turn."""
    before = await page.locator(".turn").count()
    box = page.locator(".question-input")
    await box.fill(question)
    await box.press("Enter")
    await page.locator(".turn").nth(before).wait_for()
    return page.locator(".turn").nth(before)


async def until_done(turn: Any, timeout_ms: int = 30_000) -> None:
    """Wait until the turn's run ended (its streaming marker is gone)."""
    await turn.locator(".answer").wait_for()
    await turn.page.wait_for_function(
        "el => ['done', 'error', 'timeout', 'cancelled', 'rejected', 'budget_exhausted']"
        ".includes(el.dataset.status)",
        arg=await turn.element_handle(),
        timeout=timeout_ms,
    )


async def run_id_of(turn: Any) -> str:
    value = await turn.get_attribute("data-run-id")
    assert value
    return value


def plain(markdown: str) -> str:
    """Markdown's visible words (markers dropped), whitespace folded, for comparisons."""
    text = re.sub(r"```\w*", " ", markdown)
    text = re.sub(r"^\s*(#+|[-*+])\s+", " ", text, flags=re.M)
    text = re.sub(r"[*`]", "", text)
    return " ".join(text.split())


async def answer_text(turn: Any) -> str:
    return " ".join((await turn.locator(".answer").inner_text()).split())
