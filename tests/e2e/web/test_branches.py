"""Edit and branch in a real browser: Edit, Regenerate, and "‹ 2/3 ›" between versions."""

from __future__ import annotations

from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import answer_text, ask, open_signed_in, run_id_of, until_done


async def test_edit_and_regenerate_make_versions_the_arrows_move_between(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    key = await system.key()
    page = await open_signed_in(system, browser, key)
    first = await ask(page, "[echo] first")
    await until_done(first)
    second = await ask(page, "[echo] second")
    await until_done(second)
    original = await run_id_of(second)
    assert await second.locator(".branches").is_hidden()  # one version: no arrows

    await second.locator(".edit").click()
    await second.locator(".edit-box textarea").fill("[echo] second, edited")
    await second.locator(".edit-box .btn.primary").click()
    edited = page.locator(".turn").nth(1)
    await page.wait_for_function(
        "id => { const t = document.querySelectorAll('.turn')[1];"
        " return t && t.dataset.runId !== id; }",
        arg=original,
    )
    await until_done(edited)
    assert await page.locator(".turn").count() == 2
    assert "echo: [echo] second, edited after 1 questions" in await answer_text(edited)
    await edited.locator(".branch-index").wait_for()
    assert (await edited.locator(".branch-index").inner_text()).strip() == "2/2"

    await edited.locator(".branches .prev").click()
    await page.wait_for_function(
        "id => document.querySelectorAll('.turn')[1]?.dataset.runId === id", arg=original
    )
    back = page.locator(".turn").nth(1)
    await back.locator(".branch-index").wait_for()
    assert (await back.locator(".branch-index").inner_text()).strip() == "1/2"
    assert "echo: [echo] second after 1 questions" in await answer_text(back)

    await back.locator(".regenerate").click()
    await page.wait_for_function(
        "id => { const t = document.querySelectorAll('.turn')[1];"
        " return t && t.dataset.runId !== id && t.dataset.status === 'done'; }",
        arg=original,
    )
    third = page.locator(".turn").nth(1)
    await third.locator(".branch-index").wait_for()
    assert (await third.locator(".branch-index").inner_text()).strip() == "3/3"
    assert "echo: [echo] second after 1 questions" in await answer_text(third)

    conversation = page.url.split("#c=", 1)[1].split("&", 1)[0]
    detail = (
        await system.http.get(f"/api/v1/conversations/{conversation}", headers=system.auth(key))
    ).json()
    asked = [m["content"] for m in detail["messages"] if m["role"] == "user"]
    assert asked == ["[echo] first", "[echo] second"]  # the active branch: the regenerated one
    assert len([m for m in detail["tree"] if m["role"] == "user"]) == 4
    await browser.shot(page)
    assert not browser.errors, browser.errors
