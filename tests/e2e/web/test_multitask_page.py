"""The "If busy" switch in a real browser: a second question sent while the first streams.

Queue answers both in order; refuse says so on the page, puts the question back in the box
and writes nothing; interrupt shows the first as interrupted with its partial answer (the
one the conversation keeps) and the second sees it; roll back takes the first off the page
and out of the conversation, also after a reload. One system and one chromium serve the
module; each test is a new user with a new page. The model holds each "[turns]" answer half
way until the test releases it, once the second question was sent and taken: the first
still streams then, however slow the host.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from api.compose.settings import AppSettings
from tests.conftest import real_client
from tests.e2e.web.conftest import Browser
from tests.e2e.web.harness import CHROMIUM, CHROMIUM_ARGS, System, need_chromium, running_system
from tests.e2e.web.pages import answer_text, ask, open_signed_in, run_id_of, until_done
from tests.e2e.web.script import TURNS_PADDING, make_llm
from tests.held_model import HeldModel, release_once_cut

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: Seconds per streamed token: after a release, the rest of an answer's padding streams
#: for longer than the token batcher's flush age, so a run asked to stop sees it.
TOKEN_DELAY_S = 0.01


@pytest.fixture(scope="module")
def model() -> HeldModel:
    """The scripted model, holding each "[turns]" answer half way through its padding."""
    return HeldModel(make_llm(TOKEN_DELAY_S), at=TURNS_PADDING // 2, counting=" .")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(
    tmp_path_factory: pytest.TempPathFactory, model: HeldModel
) -> AsyncIterator[System]:
    """Every role, the API and the proxy, with the slow scripted model, for the module."""
    need_chromium()
    data = tmp_path_factory.mktemp("multitask-page")
    settings = AppSettings.load(
        data_dir=data / "data",
        read_block_ms=20,
        claim_idle_ms=500,
        retry_backoff_ms=5,
        drain_timeout_s=5.0,
        embedder="hashing",
    )
    async with (
        real_client() as redis,
        running_system(redis, settings, model, data) as started,
    ):
        try:
            yield started
        finally:
            await started.proxy.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Any]:
    """Headless Debian chromium, launched once for the module."""
    need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def browser(chromium: Any, request: pytest.FixtureRequest) -> AsyncIterator[Browser]:
    """This test's pages (closed after it), with what they logged: as the tier's fixture."""
    b = Browser(chromium, request.node.name)
    yield b
    for context in chromium.contexts:
        await context.close()
    assert not b.errors, b.errors  # no script error, no CSP or Trusted Types violation
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.passed:
        assert b.shots, "every browser test saves a screenshot"


async def signed_in(system: System, browser: Browser) -> tuple[str, Any]:
    """A new user's key and a page signed in with it."""
    key = await system.key(subject=f"u-{uuid.uuid4().hex[:8]}")
    return key, await open_signed_in(system, browser, key)


async def first_streaming(page: Any) -> Any:
    """Ask q1 and wait until its answer streams."""
    first = await ask(page, "[turns] q1")
    await page.wait_for_function(
        "el => el.dataset.status === 'running' && el.querySelector('.answer').textContent",
        arg=await first.element_handle(),
    )
    return first


async def send_while_busy(page: Any, question: str, policy: str) -> None:
    """Choose "If busy", type the question and press Enter, as the first still streams."""
    assert (await page.locator(".composer .send").inner_text()) == "Stop"
    await page.select_option("select[name=multitask]", policy)
    box = page.locator(".question-input")
    await box.fill(question)
    await box.press("Enter")


def turn_of(page: Any, run_id: str) -> Any:
    return page.locator(f'.turn[data-run-id="{run_id}"]')


async def messages(system: System, key: str, page: Any) -> list[dict[str, Any]]:
    """The messages of the page's open conversation, as the API stores them."""
    conversation = page.url.split("#c=", 1)[1].split("&", 1)[0]
    got = await system.http.get(f"/api/v1/conversations/{conversation}", headers=system.auth(key))
    assert got.status_code == 200, got.text
    return got.json()["messages"]


async def stored(system: System, key: str, page: Any) -> list[tuple[str, str, str | None]]:
    """(role, text up to the padding, status) of each stored message."""
    found = await messages(system, key, page)
    return [(m["role"], head(m["content"]), m.get("status")) for m in found]


async def runs_of(system: System, key: str) -> list[dict[str, Any]]:
    return (await system.http.get("/api/v1/runs", headers=system.auth(key))).json()["runs"]


def head(text: str) -> str:
    """An answer up to its padding."""
    return text.split(" .")[0]


async def test_queue_answers_both_in_order_the_second_seeing_the_first(
    system: System, browser: Browser, model: HeldModel
) -> None:
    model.hold()
    key, page = await signed_in(system, browser)
    first = await first_streaming(page)
    await send_while_busy(page, "[turns] q2", "enqueue")
    second = page.locator(".turn").nth(1)
    await second.locator(".status").wait_for()
    waiting = await second.locator(".status").inner_text()
    still = await first.get_attribute("data-status")
    model.release()
    await until_done(first)
    await until_done(second)

    assert still == "running" and waiting == "Waiting for the answer before it to end."
    assert [await t.get_attribute("data-status") for t in (first, second)] == ["done", "done"]
    assert head(await answer_text(first)) == "answer to [turns] q1; before it: nothing"
    assert head(await answer_text(second)) == "answer to [turns] q2; before it: [turns] q1"
    assert await stored(system, key, page) == [
        ("user", "[turns] q1", None),
        ("assistant", "answer to [turns] q1; before it: nothing", None),
        ("user", "[turns] q2", None),
        ("assistant", "answer to [turns] q2; before it: [turns] q1", None),
    ]
    await browser.shot(page)


async def test_refuse_says_so_keeps_the_question_and_writes_nothing(
    system: System, browser: Browser, model: HeldModel
) -> None:
    model.hold()
    key, page = await signed_in(system, browser)
    first = await first_streaming(page)
    await send_while_busy(page, "[turns] q2", "reject")
    toast = page.locator(".toast")
    await toast.wait_for(state="visible")
    said = await toast.inner_text()
    box = await page.locator(".question-input").input_value()
    turns, still = await page.locator(".turn").count(), await first.get_attribute("data-status")
    model.release()
    await browser.shot(page)
    await until_done(first)

    assert said == (
        "Not sent: this conversation is still answering (If busy: refuse). "
        "Your question is back in the box."
    )
    assert box == "[turns] q2" and turns == 1 and still == "running"
    assert await first.get_attribute("data-status") == "done"
    assert [r["id"] for r in await runs_of(system, key)] == [await run_id_of(first)]
    assert await stored(system, key, page) == [
        ("user", "[turns] q1", None),
        ("assistant", "answer to [turns] q1; before it: nothing", None),
    ]


async def test_interrupt_shows_the_first_interrupted_with_the_partial_answer_kept(
    system: System, browser: Browser, model: HeldModel
) -> None:
    model.hold()
    key, page = await signed_in(system, browser)
    first = await first_streaming(page)
    first_id = await run_id_of(first)
    await send_while_busy(page, "[turns] q2", "interrupt")
    await release_once_cut(model, system.redis, first_id, system.settings.bus.shards)
    second = page.locator(".turn").nth(1)
    await second.wait_for()
    await until_done(second)
    await page.wait_for_function(
        "el => el.querySelector('.status').textContent.startsWith('Interrupted')",
        arg=await first.element_handle(),
    )
    partial = await answer_text(first)
    conversation = await messages(system, key, page)

    assert await first.get_attribute("data-status") == "cancelled"
    assert await first.get_attribute("data-partial") == "true"
    assert partial.startswith("answer to [turns] q1")
    kept = " ".join(conversation[1]["content"].split())
    assert partial == kept  # the page shows the partial answer the history keeps
    assert head(await answer_text(second)) == (
        "answer to [turns] q2; before it: [turns] q1; one was cut short"
    )
    assert [(m["role"], m.get("status")) for m in conversation] == [
        ("user", None),
        ("assistant", "interrupted"),
        ("user", None),
        ("assistant", None),
    ]
    await page.reload()
    again = turn_of(page, first_id)
    await again.locator(".status").wait_for()
    assert (await again.locator(".status").inner_text()).startswith("Interrupted")
    await browser.shot(page)


async def test_roll_back_takes_the_first_off_the_page_and_out_of_the_conversation(
    system: System, browser: Browser, model: HeldModel
) -> None:
    model.hold()
    key, page = await signed_in(system, browser)
    first = await first_streaming(page)
    first_id = await run_id_of(first)
    await send_while_busy(page, "[turns] q2", "rollback")
    await release_once_cut(model, system.redis, first_id, system.settings.bus.shards)
    await turn_of(page, first_id).wait_for(state="detached")
    second = page.locator(".turn").first
    await until_done(second)

    assert await page.locator(".turn").count() == 1
    assert await run_id_of(second) != first_id
    assert head(await answer_text(second)) == "answer to [turns] q2; before it: nothing"
    assert await stored(system, key, page) == [
        ("user", "[turns] q2", None),
        ("assistant", "answer to [turns] q2; before it: nothing", None),
    ]
    run = (await system.http.get(f"/api/v1/runs/{first_id}", headers=system.auth(key))).json()
    assert (run["status"], run["error_code"]) == ("cancelled", "rolled_back")
    await page.reload()
    await page.locator(".turn").first.wait_for()
    await until_done(page.locator(".turn").first)
    assert await page.locator(".turn").count() == 1  # it stays off after a reload
    assert await turn_of(page, first_id).count() == 0
    await browser.shot(page)
