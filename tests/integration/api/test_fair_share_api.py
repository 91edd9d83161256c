"""Fair share through the API: a tenant whose queue is full is refused with a code and a
Retry-After (REST) or a rejected reply with retry_after_s (runs.questions), while another
tenant's question is still taken; every run that was taken ends."""

from __future__ import annotations

import asyncio
import json

from agents.llm.scripted import ScriptedLLM
from bus import keys
from tests.held_model import HeldModel
from tests.integration.api.conftest import StartApi
from tests.integration.api.test_admission import reply
from tests.integration.api.test_rest import wait_status


async def test_a_full_tenant_queue_is_refused_with_retry_after_and_others_go_on(
    start_api: StartApi,
) -> None:
    # One run admitted at a time, two waiting per tenant at most; the first run's answer
    # is held until every question below was asked, so the queue is full meanwhile.
    model = HeldModel(ScriptedLLM(), at=1)
    api = await start_api(model, fair_inflight=1, fair_max_pending=2)
    flood, other = await api.key("t1"), await api.key("t2", "bob")
    body = {"question": "What is 23 × 19?"}
    taken = []
    for _ in range(3):
        resp = await api.http.post("/api/v1/runs", json=body, headers=api.auth(flood))
        assert resp.status_code == 202
        taken.append(resp.json()["run_id"])
    refused = await api.http.post("/api/v1/runs", json=body, headers=api.auth(flood))
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "tenant_queue_full"
    assert int(refused.headers["Retry-After"]) >= 1
    # Another tenant's queue is its own, and its run is admitted before t1's waiting two.
    theirs = await api.http.post("/api/v1/runs", json=body, headers=api.auth(other))
    assert theirs.status_code == 202
    # A publisher on runs.questions is told the same, with how long to wait.
    question = {"api_key": flood, "question": "23 × 19?", "reply_to": "crm.answers"}
    await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(question)})
    [rejected] = await reply(api, "crm.answers")
    assert (rejected.status, rejected.stop_reason) == ("rejected", "tenant_queue_full")
    assert rejected.retry_after_s is not None and rejected.retry_after_s >= 1
    model.release()
    ended = await asyncio.gather(
        *(wait_status(api, flood, run_id, within=60) for run_id in taken),
        wait_status(api, other, theirs.json()["run_id"], within=60),
    )
    assert [run["status"] for run in ended] == ["done"] * 4
    # Bob's run started after t1's first and before its two waiting ones.
    starts = {run["id"]: run["created_at"] for run in ended}
    bob = starts[theirs.json()["run_id"]]
    assert starts[taken[0]] < bob < starts[taken[1]] and bob < starts[taken[2]]
