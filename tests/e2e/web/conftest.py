"""Fixtures for the browser tests: the system, a headless chromium page, screenshots."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from tests.e2e.web.harness import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    CutProxy,
    System,
    need_chromium,
    running_system,
)
from tests.e2e.web.script import make_llm


class Browser:
    """A headless chromium and the pages a test opened, with what they logged."""

    def __init__(self, browser: Any, name: str) -> None:
        self.browser = browser
        self.name = name
        self.errors: list[str] = []
        self.shots = 0

    async def page(self, width: int = 1200, height: int = 860) -> Any:
        context = await self.browser.new_context(viewport={"width": width, "height": height})
        page = await context.new_page()

        def page_error(error: object) -> None:
            self.errors.append(f"pageerror: {error}")

        page.on("pageerror", page_error)

        def console(msg: Any) -> None:
            text = msg.text
            if msg.type == "error" and ("Content Security Policy" in text or "TrustedHTML" in text):
                self.errors.append(f"console: {text}")

        page.on("console", console)
        return page

    async def shot(self, page: Any, label: str = "") -> Path:
        """Save a screenshot under test-artifacts/browser/."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = ARTIFACTS / f"{self.name}{'-' + label if label else ''}.png"
        await page.screenshot(path=str(path), full_page=False)
        return path


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the test item (the fixtures read the call's outcome)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
async def browser(request: pytest.FixtureRequest) -> AsyncIterator[Browser]:
    """Headless Debian chromium (never a downloaded browser)."""
    need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        b = Browser(launched, request.node.name.replace("[", "-").replace("]", ""))
        try:
            yield b
        finally:
            await launched.close()
    assert not b.errors, b.errors  # no script error, no CSP or Trusted Types violation
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.passed:
        assert b.shots, "every browser test saves a screenshot"


class StartWeb(Protocol):
    """The ``start_web`` fixture: call it to start the system (see the fixture)."""

    def __call__(
        self, token_delay: float = 0.0, *, after: System | None = None, **overrides: Any
    ) -> Awaitable[System]: ...


@pytest.fixture
async def start_web(
    real_redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> AsyncIterator[StartWeb]:
    """Call (with a token delay and settings overrides) to start the system."""
    contexts: list[Any] = []

    async def start(
        token_delay: float = 0.0, *, after: System | None = None, **overrides: Any
    ) -> System:
        """Start the system; ``after`` stops that one first and keeps its address."""
        if after is not None:
            await contexts.pop().__aexit__(None, None, None)
        settings = make_settings(embedder="hashing", **overrides)
        proxy = after.proxy if after is not None else None
        ctx = running_system(real_redis, settings, make_llm(token_delay), tmp_path, proxy)
        contexts.append(ctx)
        system = await ctx.__aenter__()
        proxies.append(system.proxy)
        return system

    proxies: list[CutProxy] = []
    yield start
    for ctx in reversed(contexts):
        await ctx.__aexit__(None, None, None)
    for proxy in proxies:
        await proxy.stop()
