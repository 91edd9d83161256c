"""An erased user's key stops working at once in every API server, whatever it cached.

Two API servers share the store and Redis, each trusting a checked key for five minutes.
Both have alice's key cached when an admin erases her through one of them; the other
refuses it on its next request, as the one that erased her does, and no new key is made
for her id.
"""

from __future__ import annotations

from typing import Any

from bus.store import KeyRole
from tests.integration.api.conftest import StartApi


async def test_an_erased_users_cached_key_is_refused_at_once_by_every_api_server(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    one = await start_api(api_key_cache_s=300, **store_backend)
    two = await start_api(api_key_cache_s=300, **store_backend)
    root = await one.key("t1", "root", KeyRole.ADMIN)
    alice = await one.key("t1", "alice")
    bob = await one.key("t1", "bob")
    for api in (one, two):
        for key in (alice, bob):
            assert (await api.http.get("/api/v1/runs", headers=api.auth(key))).status_code == 200

    erased = await one.http.delete("/api/v1/users/alice", headers=one.auth(root))
    assert erased.status_code == 200, erased.text
    assert erased.json()["erased"]["api_keys"] == 1

    for api in (two, one):
        refused = await api.http.get("/api/v1/runs", headers=api.auth(alice))
        assert refused.status_code == 401
        kept = await api.http.get("/api/v1/runs", headers=api.auth(bob))
        assert kept.status_code == 200

    # A key for her id is refused while her fence stands: her steps would commit nothing.
    again = await two.http.post("/api/v1/keys", json={"subject": "alice"}, headers=two.auth(root))
    assert again.status_code == 409 and again.json()["error"]["code"] == "user_erased"
