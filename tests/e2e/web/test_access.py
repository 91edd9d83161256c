"""Signing in, who sees what, and the admin panels, in a real browser."""

from __future__ import annotations

from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.harness import System
from tests.e2e.web.pages import ask, open_signed_in, until_done


async def test_a_login_link_works_once_and_a_pasted_key_signs_in(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    key = await system.key()
    link = await system.login_url(key)
    page = await open_signed_in_via(browser, link)
    assert page.url == f"{system.base}/"  # no token kept in the address or history
    stored = await page.evaluate("() => Object.keys(sessionStorage)")
    assert "agentbus.session" in stored
    assert await page.evaluate("() => localStorage.length + document.cookie.length") == 0
    token = await page.evaluate("() => sessionStorage.getItem('agentbus.session')")
    assert token.startswith("abs_") and key not in token

    # The same link in another browser context: refused (used once already).
    other = await browser.page()
    await other.goto(link)
    await other.locator(".signin .note", has_text="used already").wait_for()
    assert "#login" not in other.url
    await other.locator(".key-input").fill(key)
    await other.locator(".signin .btn.primary").click()
    await other.locator(".composer").wait_for()
    assert await other.locator(".key-input").count() == 0
    assert key not in await other.evaluate("() => JSON.stringify(sessionStorage)")
    await browser.shot(other)

    # Signing out ends the session on the server too.
    await other.get_by_role("button", name="Sign out").click()
    await other.locator(".signin").wait_for()
    gone = await system.http.get("/api/v1/sessions/current", headers=system.auth(token))
    assert gone.status_code == 200  # the first page's session is still alive
    ended = await other.evaluate("() => sessionStorage.getItem('agentbus.session')")
    assert ended is None


async def open_signed_in_via(browser: Browser, link: str):
    page = await browser.page()
    await page.goto(link)
    await page.locator(".composer").wait_for()
    return page


async def _alice_asked(system: System, browser: Browser):
    alice = await system.key("t1", "alice")
    page = await open_signed_in(system, browser, alice)
    await until_done(await ask(page, "What is 23 × 19?"))
    await page.locator(".conv").first.wait_for()
    conversation = page.url.split("#c=")[1]
    return page, conversation


async def test_another_tenant_sees_none_of_my_conversations(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    _, conversation = await _alice_asked(system, browser)
    mallory = await system.key("t2", "mallory")
    page = await browser.page()
    await page.goto(await system.login_url(mallory, conversation))
    await page.locator(".composer").wait_for()
    await page.locator(".toast", has_text="Could not open").wait_for()
    assert await page.locator(".conv").count() == 0 and await page.locator(".turn").count() == 0
    await browser.shot(page)


async def test_a_second_user_sees_none_of_my_conversations(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    _, conversation = await _alice_asked(system, browser)
    bob = await system.key("t1", "bob")
    page = await browser.page()
    await page.goto(await system.login_url(bob, conversation))
    await page.locator(".composer").wait_for()
    await browser.shot(page)
    await page.wait_for_timeout(500)  # the list and the conversation have been asked for
    assert await page.locator(".conv").count() == 0
    assert await page.locator(".turn").count() == 0


async def test_admin_panels_work_and_are_hidden_from_users(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await until_done(await ask(page, "What is 23 × 19?"))  # a calculator call to audit
    await page.locator(".settings-open").click()

    await page.get_by_role("tab", name="Preferences").click()
    await page.locator("select[name=mode]").select_option("multi")
    await page.locator("select[name=human_gate]").select_option("true")
    await page.locator("select[name=single_context]").select_option("false")
    await page.get_by_role("button", name="Save").click()
    await page.locator(".save-row .note", has_text="saved").wait_for()

    await page.get_by_role("tab", name="Network").click()
    await page.locator("select[name=egress_enabled]").select_option("true")
    await page.locator("textarea[name=egress_hosts]").fill("example.org\n*.example.com")
    await page.get_by_role("button", name="Save").click()
    await page.locator(".save-row .note", has_text="saved").wait_for()
    stored = (await system.http.get("/api/v1/settings", headers=system.auth(admin))).json()
    prefs = stored["preferences"]
    assert prefs["mode"] == "multi" and prefs["human_gate"] is True
    assert prefs["single_context"] is False
    assert prefs["egress_enabled"] is True
    assert prefs["egress_hosts"] == ["*.example.com", "example.org"]

    await page.get_by_role("tab", name="Agents").click()
    await page.locator("svg.graph .node-critic").wait_for()
    assert await page.locator("svg.graph .edge.back").count() >= 2  # REVISE and REPLAN loops
    await page.locator("details.agent", has_text="planner").locator("summary").click()
    await page.locator("textarea[name=planner]").fill("You are the planner. Plan in one step.")
    await page.get_by_role("button", name="Save").click()
    await page.locator(".save-row .note", has_text="saved").wait_for()
    config = (await system.http.get("/api/v1/agents/config", headers=system.auth(admin))).json()
    assert config["agents"][0]["prompt"] == "You are the planner. Plan in one step."
    await browser.shot(page, "agents")

    await page.get_by_role("tab", name="Activity").click()
    await page.locator(".chain.ok").wait_for()
    assert "calculator" in await page.locator("table.activity").inner_text()
    await browser.shot(page, "activity")

    # A user key: no Settings at all, and the API refuses the writes anyway.
    user = await system.key("t1", "alice")
    plain_page = await open_signed_in(system, browser, user)
    assert await plain_page.locator(".settings-open").count() == 0
    for method, path in [("PUT", "/api/v1/settings"), ("GET", "/api/v1/documents")]:
        got = await system.http.request(method, path, json={}, headers=system.auth(user))
        assert got.status_code == 403, (path, got.text)
    await browser.shot(plain_page, "user")
