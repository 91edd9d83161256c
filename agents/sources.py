"""Retrieval sources the gather step can query (documents join when retrieval is wired)."""

from __future__ import annotations

import re
from typing import Any

from agents.gather import Source
from bus.commands import AgentTask, Command, GatherTask
from bus.store import ConversationStore

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
