"""A revoked key stops working in every API server when its revocation returns, whatever
they cached; a key nothing changed stays cached past ``api_key_cache_s``.

Two API servers share the store and Redis, each with alice's key checked and cached. An
admin revokes it through one of them (the DELETE), or an operator with ``agentbus keys
revoke``: both servers refuse it on their next request, POST /runs included, whose key
check waits for the publish script.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from api import credentials
from bus.store import KeyRole
from tests import warm_cli
from tests.conftest import TEST_REDIS_URL
from tests.integration.api.conftest import Api, StartApi

QUESTION = {"question": "What is 23 × 19?", "settings": {"mode": "single"}}


async def both_accept(servers: tuple[Api, Api], key: str) -> None:
    for api in servers:
        assert (await api.http.get("/api/v1/runs", headers=api.auth(key))).status_code == 200
        posted = await api.http.post("/api/v1/runs", json=QUESTION, headers=api.auth(key))
        assert posted.status_code == 202, posted.text


async def both_refuse(servers: tuple[Api, Api], key: str) -> None:
    for api in servers:
        assert (await api.http.get("/api/v1/runs", headers=api.auth(key))).status_code == 401
        posted = await api.http.post("/api/v1/runs", json=QUESTION, headers=api.auth(key))
        assert posted.status_code == 401, posted.text


async def test_a_key_revoked_through_one_api_server_is_refused_by_every_one_when_it_returns(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    one = await start_api(api_key_cache_s=300, **store_backend)
    two = await start_api(api_key_cache_s=300, **store_backend)
    root = await one.key("t1", "root", KeyRole.ADMIN)
    alice = await one.key("t1", "alice")
    await both_accept((one, two), alice)

    kid = credentials.key_id(alice)
    revoked = await one.http.delete(f"/api/v1/keys/{kid}", headers=one.auth(root))

    assert revoked.status_code == 200, revoked.text
    await both_refuse((two, one), alice)
    await both_accept((one, two), root)  # the tenant's other keys are read again, still good


@pytest.mark.timeout(300)  # a CLI process; it takes seconds to start on a busy host
async def test_a_key_revoked_from_the_command_line_is_refused_by_every_api_server(
    start_api: StartApi,
) -> None:
    one = await start_api(api_key_cache_s=300)
    two = await start_api(api_key_cache_s=300)
    alice = await one.key("t1", "alice")
    await both_accept((one, two), alice)
    env = {
        **os.environ,
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": one.settings.bus.resolved_database_url(),
        "AGENTBUS_DATA_DIR": str(one.settings.bus.data_dir),
    }

    kid = str(credentials.key_id(alice))
    done = await asyncio.wait_for(warm_cli.run(["keys", "revoke", kid], env), 120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr
    await both_refuse((one, two), alice)
