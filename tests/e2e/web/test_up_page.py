"""`make up` then open the printed link: the whole path a user takes, in a real browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bus import embedded
from tests.conftest import missing_local_extra
from tests.e2e.test_up import embedded_env
from tests.e2e.web.conftest import Browser
from tests.e2e.web.pages import answer_text, ask, until_done
from tests.processes import cli, processes, spawn
from tests.support import wait_for

LINK = re.compile(r"http://127\.0\.0\.1:\d+/#login=[\w-]+")


async def _ask_through_the_printed_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser, llm: str, within_ms: int
) -> str:
    data, env = embedded_env(tmp_path, monkeypatch, AGENTBUS_LLM=llm, AGENTBUS_EMBEDDER="hashing")
    log = tmp_path / "up.log"
    with processes() as procs:
        procs.append(spawn(["up"], env, log))

        async def up() -> bool:  # the local model's first start joins its weights first
            return embedded.is_running(data) and "sign-in link" in log.read_text()

        await wait_for(up, within=within_ms / 1000, interval=0.2)
        [link] = LINK.findall(log.read_text())
        page = await browser.page()
        await page.goto(link)
        await page.locator(".conn.online").wait_for(timeout=within_ms)
        assert "#login" not in page.url
        turn = await ask(page, "What is 23 × 19?")
        await until_done(turn, timeout_ms=within_ms)
        shown = await answer_text(turn)
        assert await turn.get_attribute("data-status") == "done" and shown
        await turn.locator(".details-toggle").click()
        await browser.shot(page)

        # The printed link worked once; `agentbus login-url` prints a fresh one.
        again = await browser.page()
        await again.goto(link)
        await again.locator(".signin .note", has_text="used already").wait_for()
        port = link.split(":")[2].split("/")[0]
        fresh = LINK.findall(await cli(["login-url", "--port", port], env))
        assert len(fresh) == 1 and fresh[0] != link
        third = await browser.page()
        await third.goto(fresh[0])
        await third.locator(".conv").first.wait_for()  # signed in, the conversation listed
        return shown


@pytest.mark.timeout(300)  # `agentbus up` starts every role and the embedded Redis first
async def test_the_link_up_prints_opens_the_page_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    # 90 s: on a 2-core host busy with other work, `up` took over 30 s to start every role.
    shown = await _ask_through_the_printed_link(tmp_path, monkeypatch, browser, "scripted", 90_000)
    assert "437" in shown


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_the_page_works_with_the_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: Browser
) -> None:
    reason = missing_local_extra()
    if reason:
        pytest.skip(reason)
    # The small local model's prose varies; that it streams an answer to the end is the test.
    await _ask_through_the_printed_link(tmp_path, monkeypatch, browser, "local", 600_000)
