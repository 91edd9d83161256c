"""Teams on the page: a user picks one of the tenant's teams, sees it drawn, and asks; the
run follows that team (its writer, then the built-in critic and verifier) to its answer.
Each example team of docs/teams is drawn and run the same way. Another tenant's user is
offered none of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.llm.scripted import BENCHMARK_ANSWER
from bus.events import Critique, Verdict
from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import answer_text, ask, open_signed_in, run_id_of, until_done
from tests.e2e.web.test_settings_page import published
from tests.support import events_of

TEAMS = Path(__file__).parents[3] / "docs" / "teams"
CHECKED = TEAMS / "checked.yaml"


async def test_a_user_picks_a_team_sees_it_drawn_and_runs_a_question_on_it(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    yaml = {"Content-Type": "application/yaml"}
    put = await system.http.put(
        "/api/v1/teams/checked", content=CHECKED.read_text(), headers=system.auth(admin) | yaml
    )
    assert put.is_success, put.text

    page = await open_signed_in(system, browser, await system.key())  # a user, not an admin
    picker = page.get_by_label("Team", exact=True)
    await page.locator("select[name=team] option[value=checked]").wait_for(state="attached")
    await picker.select_option("checked")
    assert await page.get_by_label("Mode", exact=True).is_disabled()  # the team says who runs
    drawing = page.locator("details.team-graph")
    await drawing.locator("summary", has_text="team checked v1").click()
    for node in ("writer", "critic", "verifier", "finalizer"):
        await drawing.locator(f"svg.graph .node-{node}").wait_for()
    await browser.shot(page, "picked")

    turn = await ask(page, "Write a line about Redis.")
    await until_done(turn)
    assert await turn.get_attribute("data-status") == "done"
    assert await answer_text(turn) == " ".join(BENCHMARK_ANSWER.split())
    run_id = await run_id_of(turn)
    settings = await published(system, run_id)
    assert settings.team is not None and settings.team.name == "checked"
    assert settings.team.version == 1
    events = await events_of(system.redis, run_id)
    assert [e.verdict for e in events if isinstance(e, Critique)] == ["OK"]
    assert [e.verdict for e in events if isinstance(e, Verdict)] == ["pass"]
    await browser.shot(page, "answered")

    # Back to no team: the next question runs the chosen mode again.
    await picker.select_option("")
    assert not await page.get_by_label("Mode", exact=True).is_disabled()
    assert await drawing.is_hidden()


async def test_another_tenants_user_is_offered_no_team(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    yaml = {"Content-Type": "application/yaml"}
    put = await system.http.put(
        "/api/v1/teams/checked", content=CHECKED.read_text(), headers=system.auth(admin) | yaml
    )
    assert put.is_success, put.text

    page = await browser.page()
    async with page.expect_response("**/api/v1/teams"):
        await page.goto(await system.login_url(await system.key("t2", "bob")))
    await page.wait_for_selector(".composer textarea")
    assert await page.locator("select[name=team] option[value=checked]").count() == 0
    assert await page.locator("label", has=page.locator("select[name=team]")).is_hidden()
    await browser.shot(page)


@pytest.mark.parametrize("name", ["translate", "triage", "review"])
async def test_each_example_team_is_drawn_and_runs_from_the_page(
    start_web: StartWeb, browser: Browser, name: str
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    text = (TEAMS / f"{name}.yaml").read_text()
    yaml_type = {"Content-Type": "application/yaml"}
    put = await system.http.put(
        f"/api/v1/teams/{name}", content=text, headers=system.auth(admin) | yaml_type
    )
    assert put.is_success, put.text

    page = await open_signed_in(system, browser, await system.key())
    await page.locator(f"select[name=team] option[value={name}]").wait_for(state="attached")
    await page.get_by_label("Team", exact=True).select_option(name)
    drawing = page.locator("details.team-graph")
    await drawing.locator("summary", has_text=f"team {name} v1").click()
    for agent in yaml.safe_load(text)["agents"]:
        await drawing.locator(f"svg.graph .node-{agent['name']}").wait_for()

    turn = await ask(page, "My invoice shows a refund twice: what should I do?")
    await until_done(turn)
    assert await turn.get_attribute("data-status") == "done"
    assert (await answer_text(turn)).strip()
    await browser.shot(page, f"{name}-answered")
    settings = await published(system, await run_id_of(turn))
    assert settings.team is not None and (settings.team.name, settings.team.version) == (name, 1)
