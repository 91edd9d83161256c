"""The chat in a real browser: streaming, reload, reconnect, drafts, layout."""

from __future__ import annotations

from tests.e2e.web.conftest import Browser, StartWeb
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


async def test_a_question_streams_in_and_matches_the_stored_answer(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(token_delay=0.03)
    key = await system.key()
    page = await open_signed_in(system, browser, key)
    assert "#login" not in page.url  # the one-time token left the address bar at once
    await page.evaluate(RECORD_GROWTH)
    turn = await ask(page, "[stream] How does streaming work?")
    await until_done(turn)
    growth = await page.evaluate("window.__growth")
    assert len(growth) >= 3 and growth == sorted(growth), growth  # it grew, step by step
    run = (
        await system.http.get(f"/api/v1/runs/{await run_id_of(turn)}", headers=system.auth(key))
    ).json()
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


async def test_a_reload_mid_answer_shows_the_full_answer_once(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(token_delay=0.05)
    page = await open_signed_in(system, browser, await system.key())
    turn = await ask(page, "[stream] How does streaming work?")
    await page.wait_for_function(
        "() => (document.querySelector('.turn .answer')?.textContent.length || 0) > 40"
    )
    assert "#c=" in page.url  # the open conversation is in the address, nothing secret
    await page.reload()
    turn = page.locator(".turn")
    await turn.first.wait_for()
    status = await turn.first.get_attribute("data-status")
    assert status in ("queued", "running"), "the reload should land while the answer streams"
    await until_done(turn.first)
    assert await turn.count() == 1
    assert await answer_text(turn.first) == plain(STREAM_ANSWER)
    await browser.shot(page)


async def test_a_cut_connection_resumes_without_gap_or_repeat(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(token_delay=0.05)
    page = await open_signed_in(system, browser, await system.key())
    await page.evaluate(
        """() => { window.__states = [];
        const conn = document.querySelector('.conn');
        new MutationObserver(() => window.__states.push(conn.textContent))
          .observe(conn, {childList: true, characterData: true, subtree: true}); }"""
    )
    turn = await ask(page, "[stream] How does streaming work?")
    await page.wait_for_function(
        "() => (document.querySelector('.turn .answer')?.textContent.length || 0) > 40"
    )
    before = len(await answer_text(turn))
    system.proxy.cut()
    await page.wait_for_function("() => window.__states.includes('offline')")
    await until_done(turn)
    states = await page.evaluate("window.__states")
    assert "online" in states[states.index("offline") :]  # it reconnected by itself
    assert before < len(plain(STREAM_ANSWER))  # the cut came mid-answer
    assert await answer_text(turn) == plain(STREAM_ANSWER)  # nothing missing, nothing twice
    await browser.shot(page)


async def test_a_superseded_draft_is_shown_apart_from_the_final_answer(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(token_delay=0.005)
    page = await open_signed_in(system, browser, await system.key())
    await page.select_option(".switches select[aria-label=Mode]", "multi")
    turn = await ask(page, "[drafts] What is the answer?")
    await until_done(turn)
    drafts = turn.locator(".draft.superseded")
    assert await drafts.count() == 1
    assert "critic asked to revise" in await drafts.locator("summary").inner_text()
    assert "41" in (await drafts.text_content() or "")
    assert await answer_text(turn) == "The revised answer says 42."
    await turn.locator(".details-toggle").click()
    critiques = turn.locator(".timeline .kind-critique")
    assert await critiques.count() == 2
    assert "REVISE" in await critiques.first.inner_text()
    assert "the number is wrong" in await critiques.first.inner_text()
    # The critic's reply is JSON under its schema: never shown as JSON text.
    assert '"verdict"' not in (await turn.text_content() or "")
    await drafts.locator("summary").click()
    await browser.shot(page)
    # Reopened from the store, the draft is still shown as superseded.
    await page.reload()
    await page.locator(".turn .draft.superseded").wait_for()
    assert await answer_text(page.locator(".turn").first) == "The revised answer says 42."


async def test_the_layout_works_375_pixels_wide(start_web: StartWeb, browser: Browser) -> None:
    system = await start_web()
    page = await open_signed_in(system, browser, await system.key(), width=375, height=740)
    turn = await ask(page, "[stream] How does streaming work?")
    await until_done(turn)
    await turn.locator(".details-toggle").click()
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways ({width}px)"
    composer = await page.locator(".composer").bounding_box()
    assert composer is not None and composer["x"] >= 0 and composer["width"] <= 375
    sidebar = await page.locator(".sidebar").bounding_box()
    assert sidebar is not None and sidebar["x"] + sidebar["width"] <= 0  # tucked away
    await browser.shot(page, "chat")
    await page.locator(".menu").click()
    await page.wait_for_function(
        "() => document.querySelector('.sidebar').getBoundingClientRect().left >= 0"
    )
    assert await page.locator(".conv").count() == 1
    await browser.shot(page, "menu")


async def test_conversations_can_be_renamed_reopened_and_deleted(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await open_signed_in(system, browser, await system.key())
    await until_done(await ask(page, "What is 23 × 19?"))
    await until_done(await ask(page, "And doubled?"))  # a follow-up in the same conversation
    conv = page.locator(".conv").first
    await conv.wait_for()
    await conv.get_by_role("button", name="Rename").click()
    await page.locator(".conv input.rename").fill("Arithmetic")
    await page.locator(".conv input.rename").press("Enter")
    await page.locator(".conv .conv-title", has_text="Arithmetic").wait_for()
    await page.locator(".new-chat").click()
    assert await page.locator(".turn").count() == 0
    await page.locator(".conv .conv-title", has_text="Arithmetic").click()
    await page.locator(".turn").nth(1).wait_for()
    assert "437" in await page.locator(".turn").first.locator(".answer").inner_text()
    interpreted = page.locator(".turn").nth(1).locator(".interpreted")
    assert (await interpreted.inner_text()).startswith("Interpreted as: ")  # a follow-up
    await page.locator(".turn").nth(1).locator(".details-toggle").click()
    assert await page.locator(".turn").nth(1).locator(".timeline .kind-tool").count() >= 1
    await browser.shot(page)
    await page.locator(".conv").first.get_by_role("button", name="Delete").click()
    await page.locator(".conv .btn.danger").click()
    await page.wait_for_function("() => document.querySelectorAll('.conv').length === 0")
    assert await page.locator(".turn").count() == 0


async def test_stop_cancels_the_streaming_run(start_web: StartWeb, browser: Browser) -> None:
    system = await start_web(token_delay=0.05)
    key = await system.key()
    page = await open_signed_in(system, browser, key)
    turn = await ask(page, "[stream] How does streaming work?")
    await page.wait_for_function(
        "() => (document.querySelector('.turn .answer')?.textContent.length || 0) > 20"
    )
    stop = page.locator(".composer .send")
    assert await stop.inner_text() == "Stop"
    await stop.click()
    await until_done(turn)
    assert await turn.get_attribute("data-status") == "cancelled"
    assert await turn.locator(".status").inner_text() == "Stopped."
    assert len(await answer_text(turn)) < len(plain(STREAM_ANSWER))
    assert await stop.inner_text() == "Send"
    run = (
        await system.http.get(f"/api/v1/runs/{await run_id_of(turn)}", headers=system.auth(key))
    ).json()
    assert run["status"] == "cancelled"
    await browser.shot(page)


async def test_a_stopped_run_reopens_with_its_trace_and_partial_answer(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(token_delay=0.05)
    key = await system.key()
    page = await open_signed_in(system, browser, key)
    turn = await ask(page, "[stream] How does streaming work?")
    await page.wait_for_function(
        "() => (document.querySelector('.turn .answer')?.textContent.length || 0) > 20"
    )
    await page.locator(".composer .send").click()
    await until_done(turn)
    run_id = await run_id_of(turn)
    shown = await answer_text(turn)
    assert await turn.get_attribute("data-partial") == "true"
    # Its events expire (24 h later): only the store is left to tell the story.
    await system.redis.delete(*await system.redis.keys(f"*run:{run_id}:events"))
    await page.reload()
    turn = page.locator(".turn").first
    await turn.wait_for()
    await until_done(turn)
    assert await turn.get_attribute("data-status") == "cancelled"
    assert await turn.get_attribute("data-partial") == "true"
    assert await turn.locator(".status").inner_text() == "Stopped."
    # (cut mid-answer, an unclosed ** or ` is shown as written, wherever it stands)
    assert await answer_text(turn) == shown
    assert shown.replace("*", "").replace("`", "") in plain(STREAM_ANSWER)
    await turn.locator(".details-toggle").click()
    await turn.locator(".timeline .kind-error").wait_for()  # the trace, with why it ended
    await browser.shot(page)
