"""Documents in a real browser: upload with progress, cite, delete; hostile text stays text."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import answer_text, ask, open_signed_in, until_done
from tests.support import wait_for

BILLING = b"# Billing\n\nInvoices are sent on the first working day of each month.\n"
HOSTILE_TITLE = '<script>window.__pwned=5</script><img src=x onerror="window.__pwned=6">'
HOSTILE = (
    f'# {HOSTILE_TITLE}\n\nThe pwned payload document: <img src=x onerror="window.__pwned=7">'
).encode()


async def upload(page: Any, name: str, data: bytes, acl: str = "") -> None:
    """Upload one file through Settings → Documents and wait until it is ingested."""
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Documents").click()
    await page.locator(".upload input[type=file]").set_input_files(
        files=[{"name": name, "mimeType": "text/markdown", "buffer": data}]
    )
    if acl:
        await page.locator(".upload input[aria-label='ACL group']").fill(acl)
    await page.locator(".upload .btn.primary").click()
    await page.locator(".progress-row .note", has_text="ingested").wait_for(timeout=30_000)


async def close_settings(page: Any) -> None:
    await page.locator(".sheet .close").click()


async def test_upload_a_document_ask_and_a_citation_to_it_appears(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await upload(page, "billing.md", BILLING)
    doc = page.locator(".doc", has_text="Billing")
    await doc.wait_for()
    assert "billing.md" in await doc.inner_text()
    bar = page.locator(".progress-row progress")
    assert await bar.get_attribute("value") == await bar.evaluate("b => String(b.max)")
    await browser.shot(page, "documents")
    await close_settings(page)

    turn = await ask(page, "[cite] When are invoices sent?")
    await until_done(turn)
    source = turn.locator(".sources li")
    assert await source.count() == 1 and "Billing" in await source.inner_text()
    assert "first working day" in await source.inner_text()  # the snippet
    cite = turn.locator(".answer .cite")
    assert await cite.inner_text() == "1" and "Billing" in (await cite.get_attribute("title") or "")
    await turn.locator(".details-toggle").click()
    await turn.locator(".timeline .kind-result.res-ok .chip.ok").wait_for()
    await browser.shot(page)

    # Deleted: gone from the list, and search no longer finds it (the citation is stripped).
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Documents").click()
    await page.locator(".doc", has_text="Billing").get_by_role("button", name="Delete").click()
    await page.locator(".doc-list", has_text="No documents yet").wait_for()
    await close_settings(page)
    listed = await system.http.get("/api/v1/documents", headers=system.auth(admin))
    assert listed.json() == []

    async def still_found() -> bool:
        got = await system.http.post(
            "/api/v1/runs", json={"question": "[cite] again"}, headers=system.auth(admin)
        )
        run_id = got.json()["run_id"]
        events = await system.http.get(f"/api/v1/runs/{run_id}/events", headers=system.auth(admin))
        return "billing.md" in events.text

    async def gone() -> bool:
        return not await still_found()

    await wait_for(gone, within=20)


async def test_hostile_answer_tool_result_and_title_render_as_text(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await upload(page, "<img src=x onerror=window.__pwned=8>.md", HOSTILE)
    title = page.locator(".doc .doc-title")
    assert await title.inner_text() == HOSTILE_TITLE  # shown as the text it is
    await close_settings(page)

    turn = await ask(page, "[xss] Show me the payload")
    await until_done(turn)
    await turn.locator(".details-toggle").click()
    await turn.locator(".timeline .kind-result .io summary").click()
    await browser.shot(page)
    shown = await answer_text(turn)
    assert "<script>window.__pwned=2</script>" in shown and "onerror=" in shown
    assert "window.__pwned=5" in await turn.locator(".timeline .result").inner_text()
    assert HOSTILE_TITLE in await turn.locator(".sources").inner_text()
    # Nothing became markup: no image, no script element, no javascript: link anywhere.
    assert await page.locator(".turn img, .turn script, .sheet img").count() == 0
    assert await page.locator("a[href^='javascript']").count() == 0
    assert "[click me](javascript:window.__pwned=3)" in shown  # kept as visible text
    # Reopened from the store, still text; and no payload ever ran.
    await page.reload()
    await page.locator(".turn .answer").wait_for()
    assert "<script>window.__pwned=2</script>" in await answer_text(page.locator(".turn").first)
    assert await page.evaluate("window.__pwned") is None


DOCS_SHOT = Path(__file__).resolve().parents[3] / "docs" / "web-chat.png"


async def test_details_of_a_checked_multi_agent_answer(
    start_web: StartWeb, browser: Browser
) -> None:
    """Plan, tool call, result, critique, verdict and citations, colour-coded in Details."""
    system = await start_web(token_delay=0.002)
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin, width=1180, height=900)
    await upload(page, "billing.md", BILLING)
    await close_settings(page)
    await page.select_option(".switches select[aria-label=Mode]", "multi")
    await page.select_option(".switches select[aria-label=Accuracy]", "accurate")
    turn = await ask(page, "[cite] When are invoices sent?")
    await until_done(turn)
    await turn.locator(".details-toggle").click()
    rows = turn.locator(".timeline .row .tag")
    kinds = [t.strip() for t in await rows.all_inner_texts()]
    for kind in ("Planner", "Tool", "Result", "Critic", "Verify", "Citations", "Usage"):
        assert kind in kinds, kinds
    verdict = turn.locator(".timeline .kind-verdict .verdict-pass")
    assert await verdict.inner_text() == "pass"
    assert await turn.locator(".sources li").count() == 1
    path = await browser.shot(page)
    if os.environ.get("AGENTBUS_DOCS_SCREENSHOT") == "1":  # refresh the README's picture
        DOCS_SHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, DOCS_SHOT)
