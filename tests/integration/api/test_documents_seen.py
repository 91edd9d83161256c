"""A run sees the tenant's documents and settings as they are when it is asked: one asked
right after the first upload searches them, one asked right after the last is deleted does
not, and one asked right after any process changed the settings runs with them.

Whether a tenant has documents, and its settings, are cached in every process beside the
tenant's settings version, which an upload, a deletion and a settings change bump before
they return: the caches are not left to expire.
"""

from __future__ import annotations

from agents.llm.scripted import ScriptedLLM
from bus.store import KeyRole
from tests.integration.api.catalogue import catalogue_a_document
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_settings_roundtrip import published_settings

ASK = {"question": "What is 23 × 19?", "settings": {"mode": "single"}}


async def single_mode_sources(api: Api, key: str) -> list[str]:
    """What a single-mode run asked now searches before its first model call."""
    run = await api.http.post("/api/v1/runs", json=ASK, headers=api.auth(key))
    assert run.status_code == 202, run.text
    return (await published_settings(api, run.json()["run_id"])).sources


async def test_a_run_right_after_the_first_upload_searches_it_and_after_the_last_delete_not(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(record=False), api_key_cache_s=300)
    user, admin = await api.key(), await api.key(subject="root", role=KeyRole.ADMIN)
    assert await single_mode_sources(api, user) == []  # none yet (and that is cached)

    files = {"files": ("handbook.md", b"# Travel\n\nHotels are reimbursed.\n", "text/markdown")}
    upload = await api.http.post("/api/v1/documents", files=files, headers=api.auth(admin))
    assert upload.status_code == 202, upload.text
    assert await single_mode_sources(api, user) == ["documents"]

    [doc] = upload.json()["documents"]
    gone = await api.http.delete(f"/api/v1/documents/{doc['doc_id']}", headers=api.auth(admin))
    assert gone.status_code == 204, gone.text
    assert await single_mode_sources(api, user) == []


async def test_a_settings_change_made_by_another_process_applies_to_the_next_run(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(record=False), api_key_cache_s=300)
    user = await api.key()
    await catalogue_a_document(api)
    assert await single_mode_sources(api, user) == ["documents"]  # cached, with the key

    # Another API replica's PUT: the store written, the version bumped, this one not told.
    await api.stores.tenant_settings.put("t1", {"single_context": False}, "root")

    assert await single_mode_sources(api, user) == []
