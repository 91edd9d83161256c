"""``agentbus ask`` (local) starts runs through the API's own starter: the same defaults
(a tenant with documents gathers from them in multi mode), limits and checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bus.store import KeyRole
from tests.conftest import TEST_REDIS_URL
from tests.integration.api.catalogue import catalogue_a_document
from tests.integration.api.test_cli_remote import run_cli
from tests.integration.api.test_settings_roundtrip import published_settings


@pytest.mark.timeout(300)
async def test_the_cli_gets_the_same_defaults_as_the_api(start_api: Any) -> None:
    api = await start_api()
    await catalogue_a_document(api, uploaded_by="root")
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    await api.http.put("/api/v1/settings", json={"max_tool_hops": 3}, headers=admin)
    env = {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir),
        "AGENTBUS_TENANT": "t1",
        "AGENTBUS_SUBJECT": "alice",
    }
    code, out, err = await run_cli(["ask", "--json", "--mode", "multi", "What is 23 × 19?"], env)
    events = [json.loads(line) for line in out.splitlines()]
    assert events and events[0]["type"] == "run_started", (code, err)
    cli = await published_settings(api, events[0]["run_id"])
    run = await api.http.post(
        "/api/v1/runs",
        json={"question": "What is 23 × 19?", "settings": {"mode": "multi"}},
        headers=api.auth(await api.key("t1", "alice")),
    )
    rest = await published_settings(api, run.json()["run_id"])

    # The defaults (the documents and the facts extracted from them), not "no sources".
    assert cli.sources == ["documents", "graph"] == rest.sources
    assert cli.max_tool_hops == 3  # the tenant's settings apply to the CLI too
    assert cli == rest

    bad, _, why = await run_cli(["ask", "--mode", "sideways", "q"], env)
    assert bad == 2 and "error [invalid_request]" in why
