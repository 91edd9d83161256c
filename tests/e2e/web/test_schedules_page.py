"""Schedules on the page: Settings → Schedules adds one, pauses, resumes and deletes it."""

from __future__ import annotations

from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import open_signed_in


async def test_an_admin_adds_pauses_resumes_and_deletes_a_schedule(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Schedules").click()
    await page.locator(".schedule-list", has_text="No schedules yet.").wait_for()

    await page.locator("input[name=cron]").fill("61 * * * *")
    await page.locator("input[name=question]").fill("What changed?")
    await page.get_by_role("button", name="Add").click()
    await page.locator(".note", has_text="not done").wait_for()  # the API's 422 is shown
    await page.locator("input[name=cron]").fill("0 8 * * MON")
    await page.locator("input[name=timezone]").fill("Europe/Paris")
    await page.get_by_role("button", name="Add").click()
    row = page.locator(".schedule", has_text="What changed?")
    await row.wait_for()
    listed = await system.http.get("/api/v1/schedules", headers=system.auth(admin))
    [stored] = listed.json()["schedules"]
    assert (stored["cron"], stored["timezone"]) == ("0 8 * * MON", "Europe/Paris")
    assert "0 8 * * MON (Europe/Paris)" in (await row.text_content() or "")
    await browser.shot(page, "schedules")

    await row.get_by_role("button", name="Pause").click()
    await row.filter(has_text="paused").wait_for()
    await row.get_by_role("button", name="Resume").click()
    await row.filter(has_text="next ").wait_for()
    await row.get_by_role("button", name="Delete").click()
    await page.locator(".schedule-list", has_text="No schedules yet.").wait_for()
    after = await system.http.get("/api/v1/schedules", headers=system.auth(admin))
    assert after.json()["schedules"] == []
