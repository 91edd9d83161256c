"""The chat in a real browser: streaming, reload, reconnect, drafts, layout."""

from __future__ import annotations

import asyncio

from tests.e2e.web.pages import (
    RECORD_GROWTH,
    answer_text,
    ask,
    open_signed_in,
    plain,
    run_id_of,
    until_done,
)
from tests.e2e.web.script import STREAM_ANSWER


async def test_a_question_streams_in_and_matches_the_stored_answer(start_web, browser) -> None:
    system = await start_web(token_delay=0.03)
    key = await system.key()
    page = await open_signed_in(system, browser, key)
    assert "#login" not in page.url  # the one-time token left the address bar at once
    await page.evaluate(RECORD_GROWTH)
    turn = await ask(page, "[stream] How does streaming work?")
    await until_done(turn)
    growth = await page.evaluate("window.__growth")
    assert len(growth) >= 3 and growth == sorted(growth), growth  # it grew, step by step
    run = (await system.http.get(f"/api/v1/runs/{await run_id_of(turn)}", headers=system.auth(key))).json()
    assert run["status"] == "done" and run["answer"] == STREAM_ANSWER
    assert await answer_text(turn) == plain(STREAM_ANSWER)
    assert await turn.locator(".answer pre code").inner_text() == "print('hello from a code block')"
    link = turn.locator(".answer a")
    assert await link.get_attribute("href") == "https://example.org/streaming"
    assert await link.get_attribute("target") == "_blank"
    assert await link.get_attribute("rel") == "noopener noreferrer"
    await turn.locator(".details-toggle").click()
    await turn.locator(".timeline .kind-usage").wait_for()
    await browser.shot(page)
