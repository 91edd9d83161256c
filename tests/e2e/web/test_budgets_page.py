"""Budgets on the page: an admin sets them in Settings → Budgets, the top bar shows what
the user spent today, and a run stopped by its budget says so under its partial answer."""

from __future__ import annotations

from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import ask, open_signed_in, until_done
from tests.e2e.web.test_settings_page import prefs, save


async def test_an_admin_sets_budgets_and_the_top_bar_shows_the_day(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Budgets").click()
    await page.locator("input[name=user_daily_tokens]").fill("50000")
    await page.locator("input[name=weight]").fill("3")
    await save(page)
    stored = await prefs(system, admin)
    assert (stored["user_daily_tokens"], stored["weight"]) == (50_000, 3)
    assert await page.locator(".usage-tenant").text_content() == (
        "Tenant this month: 0 tokens, $0.0000"
    )
    await page.keyboard.press("Escape")
    turn = await ask(page, "What is 23 × 19?")
    await until_done(turn)
    usage = page.locator(".topbar .usage")
    await usage.filter(has_text="of 50,000 tokens").wait_for()
    text = await usage.text_content() or ""
    assert text.startswith("You today: ") and not text.startswith("You today: 0 ")
    await browser.shot(page, "usage")
