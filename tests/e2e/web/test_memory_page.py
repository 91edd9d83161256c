"""The Memory dialog: every user sees what they said about themselves (as text, never as
HTML), edits and deletes it; another user of the tenant sees none of it."""

from __future__ import annotations

from datetime import UTC, datetime

from bus.store import KeyRole, MemoryWrite
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import ask, open_signed_in, until_done
from tests.support import wait_for

HOSTILE = 'Likes <img src=x onerror="window.pwned=1"> and <b>bold</b> text.'


async def test_a_user_sees_edits_and_deletes_their_memories_as_text(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    alice = await system.key("t1", "alice")
    bob = await system.key("t1", "bob")
    page = await open_signed_in(system, browser, alice)
    await until_done(await ask(page, "I work in the Lisbon office. What is 23 × 19?"))
    memories = system.stores.memories
    assert memories is not None
    hostile = MemoryWrite(
        key="planted",
        tenant_id="t1",
        subject="alice",
        topic="hobby",
        text=HOSTILE,
        said_at=datetime.now(UTC),
    )
    await memories.remember([hostile])  # as if she had said it: shown as typed

    async def stored() -> list[dict[str, object]]:
        resp = await system.http.get("/api/v1/memories", headers=system.auth(alice))
        return resp.json()["memories"]

    async def lisbon() -> bool:  # the recorder writes it just after the run is done
        return any("Lisbon" in str(m["text"]) for m in await stored())

    await wait_for(lisbon, within=20, interval=0.05)
    await page.locator(".memory-open").click()
    dialog = page.get_by_role("dialog", name="Memory")
    row = dialog.locator(".memory", has_text="Lisbon office")
    await row.wait_for()
    planted = dialog.locator(".memory", has_text="onerror")
    assert await planted.locator(".memory-text").text_content() == HOSTILE
    assert await planted.locator("img, b").count() == 0
    assert await page.evaluate("window.pwned") is None
    await browser.shot(page, "memory")

    await row.locator("input[name=memory-text]").fill("Works from home on Fridays.")
    await row.get_by_role("button", name="Save").click()
    await dialog.locator(".memory-text", has_text="Works from home on Fridays.").wait_for()
    assert "Works from home on Fridays." in [m["text"] for m in await stored()]

    await dialog.locator(".memory", has_text="Fridays").get_by_role("button", name="Delete").click()
    await dialog.locator(".memory", has_text="Fridays").wait_for(state="detached")
    assert [m["topic"] for m in await stored()] == ["hobby"]

    other = await open_signed_in(system, browser, bob)
    await other.locator(".memory-open").click()
    await (
        other.get_by_role("dialog", name="Memory")
        .locator(".memory-list", has_text="Nothing remembered yet.")
        .wait_for()
    )


async def test_an_admin_switches_memory_off_in_preferences(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Preferences").click()
    await page.locator("select[name=memory]").select_option("false")
    await page.get_by_role("button", name="Save").click()
    await page.locator(".save-row .note", has_text="saved").wait_for()
    await browser.shot(page, "memory-off")
    stored = (await system.http.get("/api/v1/settings", headers=system.auth(admin))).json()
    assert stored["preferences"]["memory"] is False and stored["effective"]["memory"] is False
