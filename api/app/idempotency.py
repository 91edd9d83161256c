"""The ``Idempotency-Key`` of starting a run: a retry with the same key finds the run the
first request started; the same key sent with a different request is refused (409
``idempotency_key_reused``).

A key is claimed once (`api.app.ports.IdempotencyClaims`; in Redis, ``SET NX`` with
``AGENTBUS_API_IDEMPOTENCY_TTL_S``) with the run it names and a fingerprint of the request;
the starter deletes the claim again when the run could not start, so a later retry with the
same key tries again.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from api.app.errors import IdempotencyKeyReused

if TYPE_CHECKING:
    from api.app.ask import Ask
    from api.app.auth import Principal
    from api.app.ports import IdempotencyClaims


def idempotency_digest(who: Principal, idem: str) -> str:
    """The digest the caller's claim of ``idem`` is held under, in its tenant's claims."""
    # Per user, not only per tenant: another user's retry must never find this run.
    return hashlib.sha256(f"{who.subject}\n{idem}".encode()).hexdigest()


async def claim(
    claims: IdempotencyClaims,
    tenant_id: str,
    digest: str,
    ask: Ask,
    run_id: str,
    conversation_id: str,
    ttl_s: int,
) -> tuple[str, str] | None:
    """Claim the idempotency key for this run; an earlier claim's (run, conversation).

    Raises:
        IdempotencyKeyReused: the earlier claim was for a different request.
    """
    fingerprint = request_fingerprint(ask)
    value = json.dumps({"run": run_id, "conv": conversation_id, "fp": fingerprint})
    if await claims.claim(tenant_id, digest, value, ttl_s):
        return None
    raw = await claims.read(tenant_id, digest)
    if raw is None:  # expired between the two calls: claim it again
        return await claim(claims, tenant_id, digest, ask, run_id, conversation_id, ttl_s)
    earlier = json.loads(raw)
    if earlier["fp"] != fingerprint:
        raise IdempotencyKeyReused("this Idempotency-Key was used for another request")
    return earlier["run"], earlier["conv"]


def request_fingerprint(ask: Ask) -> str:
    """What makes two requests the same request (the question, its conversation, settings,
    reply stream, webhook and parent message)."""
    doc: dict[str, object] = {
        "q": ask.question,
        "c": ask.conversation_id,
        "s": ask.settings.model_dump(),
        "r": ask.reply_to,
    }
    if ask.webhook is not None:  # only then: earlier keys' fingerprints stay as they were
        doc["w"] = [ask.webhook.url, ask.webhook.approvals]
    if ask.parent_message_id is not None:
        doc["p"] = ask.parent_message_id
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
