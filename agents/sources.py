"""Retrieval sources the gather step can query: conversation memory and the web here;
documents (`retrieval.gather_source`) join when retrieval is wired."""

from __future__ import annotations

import re
from typing import Any

from agents.gather import Source, SourceAnswer
from bus.commands import AgentTask, Command, GatherTask, ToolCallRequest
from bus.store import ConversationStore
from gateway.audit import audit_record
from gateway.call_context import CallContext, GatewayDeps
from gateway.chain import invoke
from gateway.ports import TenantPolicies
from gateway.worker import run_policy

_WORD = re.compile(r"\w{3,}")


def _terms(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def memory_source(conversations: ConversationStore, limit: int = 50) -> Source:
    """Earlier turns of the run's conversation, ranked by word overlap with the query."""

    async def search(command: Command, query: str) -> list[dict[str, Any]]:
        task = command.payload
        state = task.state if isinstance(task, GatherTask | AgentTask) else None
        if state is None or not state.conversation_id:
            return []
        history = await conversations.history(command.tenant_id, state.conversation_id, limit)
        wanted = _terms(query)
        scored = [(len(wanted & _terms(m.content)), m) for m in history]
        ranked = sorted((p for p in scored if p[0] > 0), key=lambda p: p[0], reverse=True)
        return [
            {
                "id": f"msg-{m.id}",
                "source": f"conversation:{state.conversation_id}",
                "title": f"earlier {m.role} message",
                "text": m.content,
            }
            for _, m in ranked[:5]
        ]

    return search


#: The name planners choose the web by.
WEB = "web"
_WEB_RESULTS = 5


def web_source(deps: GatewayDeps, policies: TenantPolicies) -> Source:
    """The web, searched with the gateway's ``web_search`` under the gateway's policy chain.

    The call goes through the same chain as an agent's (the tenant's enabled tools, the
    egress allowlist and SSRF guard, the run's approved hosts, the timeout, the output
    cap) and leaves the same audit row, committed with the gather step. A refused or failed
    search contributes nothing: the branch fails open, like any source.
    """

    async def search(command: Command, query: str) -> SourceAnswer:
        task = command.payload
        if not isinstance(task, GatherTask | AgentTask):
            return SourceAnswer([])
        tenant = await policies.for_tenant(command.tenant_id)
        ctx = CallContext(
            tenant_id=command.tenant_id,
            subject=command.subject,
            run_id=command.run_id,
            agent="gather",
            policy=run_policy(tenant, task.state, "gather"),
            deps=deps,
            groups=frozenset(command.groups),
        )
        call = ToolCallRequest(
            call_id=f"{command.step_id}:web", name="web_search", arguments={"query": query}
        )
        outcome, audit = await invoke(call, ctx)
        records = [audit_record(f"{command.step_id}:0", audit)]
        if outcome.status != "ok" or not isinstance(outcome.result, dict):
            return SourceAnswer([], records)
        found: list[Any] = outcome.result.get("results") or []
        items = [
            {
                "id": str(r.get("url", "")),
                "source": str(r.get("url", "")),
                "title": str(r.get("title", "")),
                "text": str(r.get("snippet", "")),
            }
            for r in found[:_WEB_RESULTS]
            if isinstance(r, dict)
        ]
        return SourceAnswer(items, records)

    return search
