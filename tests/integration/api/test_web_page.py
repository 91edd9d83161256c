"""The page's HTTP side: CSP and hashed assets, sessions, documents, activity, rename."""

from __future__ import annotations

import asyncio
import json
import re

from api.app.sessions import SESSION_IDLE_S, mint_login_token
from api.http.routes.page import bundle
from api.streams.session_store import RedisSessionStore
from bus import keys
from bus.store import KeyRole
from tests.integration.api.conftest import StartApi, recv
from tests.support import wait_for


async def test_the_page_has_a_strict_csp_and_hashed_long_cached_assets(start_api: StartApi) -> None:
    api = await start_api()
    page = await api.http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe" not in csp and "require-trusted-types-for 'script'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-cache"
    html = page.text
    # No inline script or style: every script is a file of this origin.
    assert re.findall(r"<script\b[^>]*>", html) == [
        f'<script type="module" src="/static/{bundle().build}/js/main.js">'
    ]
    assert "<style" not in html and " style=" not in html and not re.search(r"\son\w+=", html)
    assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', html)
    assert len(assets) == 3 and all(f"/static/{bundle().build}/" in a for a in assets)
    for asset in assets:
        got = await api.http.get(asset)
        assert got.status_code == 200
        assert got.headers["cache-control"] == "public, max-age=31536000, immutable"
    js = await api.http.get(f"/static/{bundle().build}/js/markdown.js")
    assert js.headers["content-type"].startswith("text/javascript")
    stale = await api.http.get("/static/0123456789abcdef/js/main.js")
    assert stale.status_code == 404
    sneaky = await api.http.get(f"/static/{bundle().build}/../routes/page.py")
    assert sneaky.status_code == 404
    assert "/" not in (await api.http.get("/openapi.json")).json()["paths"]  # not an API


async def test_a_login_token_opens_one_session_once(start_api: StartApi) -> None:
    api = await start_api()
    key = await api.key()
    kid = key.split("_")[1]
    token = await mint_login_token(RedisSessionStore(api.redis), kid)
    opened = await api.http.post("/api/v1/sessions", json={"login_token": token})
    assert opened.status_code == 201, opened.text
    body = opened.json()
    assert body["subject"] == "alice" and body["token"].startswith("abs_")
    assert body["expires_in"] == SESSION_IDLE_S and opened.headers["cache-control"] == "no-store"
    again = await api.http.post("/api/v1/sessions", json={"login_token": token})
    assert again.status_code == 401  # a login token works once
    # Redis keeps digests only: neither token appears in any key name.
    names = [k.decode() for k in await api.redis.keys("ab:web:*")]
    assert names and not any(token in n or body["token"] in n for n in names)

    session = body["token"]
    runs = await api.http.get("/api/v1/runs", headers=api.auth(session))
    assert runs.status_code == 200
    conn = await api.ws(None)
    await conn.send(json.dumps({"type": "auth", "api_key": session}))
    assert (await recv(conn))["type"] == "ready"
    refused = await api.http.post("/api/v1/sessions", json={}, headers=api.auth(session))
    assert refused.status_code == 422  # a session cannot extend itself into another

    out = await api.http.delete("/api/v1/sessions/current", headers=api.auth(session))
    assert out.status_code == 204
    gone = await api.http.get("/api/v1/runs", headers=api.auth(session))
    assert gone.status_code == 401


async def test_a_session_ends_with_its_key_and_its_age(start_api: StartApi) -> None:
    api = await start_api(api_key_cache_s=0.0)
    key = await api.key()
    opened = await api.http.post("/api/v1/sessions", json={}, headers=api.auth(key))
    assert opened.status_code == 201
    session = opened.json()["token"]
    who = await api.http.get("/api/v1/sessions/current", headers=api.auth(session))
    assert who.json()["subject"] == "alice" and who.json()["is_admin"] is False

    # Too old: refused even though Redis still has it.
    [name] = await api.redis.keys("ab:web:session:*")
    doc = json.loads(await api.redis.get(name))
    await api.redis.set(name, json.dumps({**doc, "started": doc["started"] - 13 * 3600}))
    assert (await api.http.get("/api/v1/runs", headers=api.auth(session))).status_code == 401

    second = (await api.http.post("/api/v1/sessions", json={}, headers=api.auth(key))).json()
    assert await api.stores.keys.revoke(key.split("_")[1], "t1") is not None
    revoked = await api.http.get("/api/v1/runs", headers=api.auth(second["token"]))
    assert revoked.status_code == 401


async def test_documents_upload_progress_list_delete_admin_only(start_api: StartApi) -> None:
    api = await start_api(embedder="hashing")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    user = await api.key("t1", "alice")
    files = {"files": ("notes.md", b"# Notes\n\nThe office opens at nine.", "text/markdown")}
    denied = await api.http.post("/api/v1/documents", files=files, headers=api.auth(user))
    assert denied.status_code == 403
    bad = await api.http.post(
        "/api/v1/documents",
        files={"files": ("tool.exe", b"MZ", "application/octet-stream")},
        headers=api.auth(admin),
    )
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "files"
    bad_acl = await api.http.post(
        "/api/v1/documents", files=files, data={"acl": "no spaces!"}, headers=api.auth(admin)
    )
    assert bad_acl.status_code == 422

    up = await api.http.post(
        "/api/v1/documents", files=files, data={"acl": "staff"}, headers=api.auth(admin)
    )
    assert up.status_code == 202, up.text
    job_id = up.json()["job_id"]
    [doc] = up.json()["documents"]
    assert (doc["title"], doc["source"], doc["acl"]) == ("Notes", "notes.md", ["staff"])

    # This process's retrieval role has no vector store (the browser tests have one and
    # see jobs finish): the batch is dead-lettered, and the job says so.
    async def failed() -> bool:
        got = await api.http.get(f"/api/v1/documents/jobs/{job_id}", headers=api.auth(admin))
        return got.json()["status"] == "error" and got.json()["total"] == 1

    await wait_for(failed, within=30)
    other = await api.key("t2", "root", KeyRole.ADMIN)
    hidden = await api.http.get(f"/api/v1/documents/jobs/{job_id}", headers=api.auth(other))
    assert hidden.status_code == 404
    assert (await api.http.get("/api/v1/documents", headers=api.auth(other))).json() == []
    listed = (await api.http.get("/api/v1/documents", headers=api.auth(admin))).json()
    assert [d["doc_id"] for d in listed] == [doc["doc_id"]]

    foreign = await api.http.delete(f"/api/v1/documents/{doc['doc_id']}", headers=api.auth(other))
    assert foreign.status_code == 404
    removed = await api.http.delete(f"/api/v1/documents/{doc['doc_id']}", headers=api.auth(admin))
    assert removed.status_code == 204
    assert (await api.http.get("/api/v1/documents", headers=api.auth(admin))).json() == []
    # The removal went over the bus like an ingest (on the retrieval role's ingest lane):
    # an empty version of the document.
    stream = await api.redis.xrange(keys.role_stream(keys.Role.RETRIEVAL, 0, keys.INGEST_LANE))
    assert len(stream) == 2 and b'"chunks":[]' in stream[-1][1][b"data"]


async def test_uploads_may_be_larger_than_questions_but_not_unbounded(start_api: StartApi) -> None:
    from api.http.routes import documents

    api = await start_api(embedder="hashing")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    big = b"# Big\n\n" + b"word " * 200_000  # ~1 MB: far past the question limit
    up = await api.http.post(
        "/api/v1/documents",
        files={"files": ("big.md", big, "text/markdown")},
        headers=api.auth(admin),
    )
    assert up.status_code == 202, up.text
    huge = b"x" * (documents.MAX_UPLOAD_BYTES + 1)
    over = await api.http.post(
        "/api/v1/documents",
        files={"files": ("huge.txt", huge, "text/plain")},
        headers=api.auth(admin),
    )
    assert over.status_code == 413


async def test_activity_shows_the_conversations_audit_rows_and_the_chain(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    run = await api.http.post(
        "/api/v1/runs", json={"question": "What is 23 × 19?"}, headers=api.auth(admin)
    )
    conversation = run.json()["conversation_id"]
    await api.http.get(f"/api/v1/runs/{run.json()['run_id']}/events", headers=api.auth(admin))

    async def audited() -> bool:
        got = await api.http.get(
            f"/api/v1/activity?conversation_id={conversation}", headers=api.auth(admin)
        )
        return got.status_code == 200 and len(got.json()["rows"]) == 1

    await wait_for(audited, within=20)
    got = (
        await api.http.get(
            f"/api/v1/activity?conversation_id={conversation}", headers=api.auth(admin)
        )
    ).json()
    assert got["chain_ok"] is True and got["chain"]["rows"] == 1
    assert got["rows"][0]["tool"] == "calculator" and got["rows"][0]["args"] == {
        "expression": "23 * 19"
    }
    user = await api.key("t1", "alice")
    url = f"/api/v1/activity?conversation_id={conversation}"
    assert (await api.http.get(url, headers=api.auth(user))).status_code == 403
    other = await api.key("t2", "root", KeyRole.ADMIN)
    assert (await api.http.get(url, headers=api.auth(other))).status_code == 404


async def test_rename_a_conversation(start_api: StartApi) -> None:
    api = await start_api()
    alice = await api.key()
    run = await api.http.post("/api/v1/runs", json={"question": "hi"}, headers=api.auth(alice))
    conversation = run.json()["conversation_id"]
    url = f"/api/v1/conversations/{conversation}"
    await api.http.get(f"/api/v1/runs/{run.json()['run_id']}/events", headers=api.auth(alice))
    renamed = await api.http.patch(url, json={"title": "Greetings"}, headers=api.auth(alice))
    assert renamed.status_code == 200 and renamed.json()["title"] == "Greetings"
    other = await api.key("t2", "eve")
    refused = await api.http.patch(url, json={"title": "x"}, headers=api.auth(other))
    assert refused.status_code == 404


async def test_the_answer_gate_details_carry_the_draft_and_the_critique(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    put = {"mode": "multi", "human_gate": True}
    assert (await api.http.put("/api/v1/settings", json=put, headers=api.auth(admin))).is_success
    run = await api.http.post(
        "/api/v1/runs", json={"question": "What is 23 × 19?"}, headers=api.auth(admin)
    )
    run_id = run.json()["run_id"]
    gate_url = f"/api/v1/runs/{run_id}/gate"

    async def paused() -> bool:
        return (await api.http.get(gate_url, headers=api.auth(admin))).status_code == 200

    await wait_for(paused, within=20)
    gate = (await api.http.get(gate_url, headers=api.auth(admin))).json()
    assert gate["reason"] == "approve_answer" and "437" in gate["answer"]
    assert gate["critique"] == "the tool result supports the answer"
    await asyncio.sleep(0)
