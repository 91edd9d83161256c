"""Retrieval sources a gather step can query, and the fan-out that queries them.

Memory (the user's long-term memories and the conversation's earlier turns) and the web
are here; documents (`retrieval.gather_source`) join when
retrieval is wired. The planner (and a judge re-checking) fans a query out with
:func:`fan_out`; the retrieval role (`agents.roles.gather`) runs each branch and the merge.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.model_input import USER_NOTE_PREFIX
from bus.commands import AgentTask, Command, GatherTask, ToolCallRequest
from bus.json_values import is_object
from bus.keys import Role
from bus.ledger import LedgerRecord
from bus.run_state import RunState
from bus.store import ConversationStore, MemoryStore, Scope
from gateway.audit import audit_record
from gateway.call_context import GatewayDeps, call_context
from gateway.chain import invoke
from gateway.ports import TenantPolicies


@dataclass(frozen=True, slots=True)
class SourceAnswer:
    """What a source found, with the store records its search leaves (a web search's
    audit row), which the gather step commits with its contribution."""

    items: list[dict[str, Any]]
    records: list[LedgerRecord] = field(default_factory=lambda: [])


#: A retrieval source: (command, query) -> ranked items {id, source, title, text}, or a
#: `SourceAnswer` when the search leaves records too.
Source = Callable[[Command, str], Awaitable[list[dict[str, Any]] | SourceAnswer]]


def fan_out(
    command: Command, state: RunState, purpose: Literal["evidence", "recheck"], to: Role
) -> list[Command]:
    """One gather branch per chosen source (all sources when none was chosen), to role ``to``.

    The caller asks the graph for ``to`` (its edge to ``gather``).
    """
    sources = state.chosen_sources or state.settings.sources
    join = f"{purpose}-{command.step + 1}"
    query = state.interpreted or state.question
    return [
        command.follow(
            to,
            GatherTask(
                source=name,
                query=query,
                join=join,
                expected=len(sources),
                purpose=purpose,
                state=state,
            ),
            branch=name,
        )
        for name in sources
    ]


_WORD = re.compile(r"\w{3,}")


def _terms(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def memory_source(
    conversations: ConversationStore, memories: MemoryStore | None = None, limit: int = 50
) -> Source:
    """What the run's user told us: their long-term memories (across their conversations,
    when the run has memory on), then (multi mode) earlier turns of this conversation
    ranked by word overlap with the query. Always the run's own user's, never another's."""

    async def search(command: Command, query: str) -> list[dict[str, Any]]:
        task = command.payload
        state = task.state if isinstance(task, GatherTask | AgentTask) else None
        if state is None:
            return []
        owner = Scope.user(command.tenant_id, command.subject)
        found: list[dict[str, Any]] = []
        if memories is not None and state.settings.memory:
            found += [
                {
                    "id": f"mem-{m.id}",
                    "source": f"{USER_NOTE_PREFIX}{m.id}",
                    "title": f"about the user: {m.topic}",
                    "text": m.text,
                }
                for m in await memories.for_question(owner, query, _NOTES)
            ]
        # Single mode's model reads the conversation itself: only the memories are news.
        if not state.conversation_id or state.settings.mode == "single":
            return found
        history = await conversations.history(owner, state.conversation_id, limit)
        wanted = _terms(query)
        scored = [(len(wanted & _terms(m.content)), m) for m in history]
        ranked = sorted((p for p in scored if p[0] > 0), key=lambda p: p[0], reverse=True)
        return found + [
            {
                "id": f"msg-{m.id}",
                "source": f"conversation:{state.conversation_id}",
                "title": f"earlier {m.role} message",
                "text": m.content,
            }
            for _, m in ranked[:5]
        ]

    return search


#: The most memories one search gives a run (notes about the user).
_NOTES = 8


#: The name planners choose the web by.
WEB = "web"
MEMORY = "memory"
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
        # Not a call the model chose: the tenant's tool scope for models does not apply.
        ctx = call_context(command, task.state, tenant, deps, agent="gather", scoped=False)
        call = ToolCallRequest(
            call_id=f"{command.step_id}:web", name="web_search", arguments={"query": query}
        )
        outcome, audit = await invoke(call, ctx)
        records = [audit_record(f"{command.step_id}:0", audit)]
        if outcome.status != "ok" or not is_object(result := outcome.result):
            return SourceAnswer([], records)
        found: list[Any] = result.get("results") or []
        items = [
            {
                "id": str(r.get("url", "")),
                "source": str(r.get("url", "")),
                "title": str(r.get("title", "")),
                "text": str(r.get("snippet", "")),
            }
            for r in found[:_WEB_RESULTS]
            if is_object(r)
        ]
        return SourceAnswer(items, records)

    return search
