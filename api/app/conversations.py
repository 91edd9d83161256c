"""The caller's conversations: list, read, choose a branch, rename, delete.

A conversation belongs to the user who started it. A tenant admin may also list and read
every conversation of its tenant (each read of another user's is audited), but only the
owner may change one: an admin gets "not owner", anyone else "not found".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentbus_contracts import Conversation, ConversationDetail, ConversationList, ModelContext
from api.app.errors import ConversationNotFound, InvalidRequest, NotOwner
from api.app.oversight import audit_read

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.app.turn_publisher import TurnPublisher
    from bus.store import AuditStore, ConversationRecord, ConversationStore, Scope, SummaryStore
    from bus.store.turn_types import Turn

#: Messages of the tree a conversation's detail has at most.
TREE_LIMIT = 2000
#: Messages after the summary a conversation's detail has at most (its ``context``).
CONTEXT_LIMIT = 500


@dataclass(frozen=True, kw_only=True)
class Conversations:
    """The conversations' use cases.

    Attributes:
        store: the conversations and their messages.
        summaries: what a model call of a branch is given (None: no summaries).
        turns: the runs waiting for their turn in a conversation (None: no ``multitask``).
        audit: where an admin's reads of other users' conversations are recorded.
    """

    store: ConversationStore
    summaries: SummaryStore | None
    turns: TurnPublisher | None
    audit: AuditStore | None

    async def listing(self, who: Principal, limit: int) -> ConversationList:
        """The caller's conversations; an admin's, the tenant's (audited)."""
        found = await self.store.list(who.scope, limit)
        others = [c.id for c in found if c.subject != who.subject]
        await audit_read(
            self.audit, who, what="list_conversations", owners=(c.subject for c in found),
            ids=others,
        )  # fmt: skip
        return ConversationList.model_validate({"conversations": found})

    async def detail(self, who: Principal, conversation_id: str, limit: int) -> ConversationDetail:
        """One conversation with its latest ``limit`` messages, its tree, the runs waiting
        for their turn and what a model call of its active branch is given."""
        found = await self.store.get(who.scope, conversation_id)
        if found is None:
            raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
        await audit_read(
            self.audit, who, what="read_conversation", owners=[found.subject],
            target=conversation_id,
        )  # fmt: skip
        history = await self.store.history(who.scope, conversation_id, limit)
        tree = await self.store.tree(who.scope, conversation_id, TREE_LIMIT)
        turns = self.turns
        pending = [] if turns is None else await self._pending(turns, who, conversation_id)
        return ConversationDetail.model_validate(
            {
                "conversation": found,
                "messages": history,
                "tree": tree,
                "pending": [
                    {"run_id": t.run_id, "state": t.state.value, "question": t.question}
                    for t in pending
                ],
                "context": await self._model_context(who.scope, found),
            }
        )

    async def _pending(
        self, turns: TurnPublisher, who: Principal, conversation_id: str
    ) -> list[Turn]:
        first = None if turns.first_turns is None else await turns.first_turns.read(conversation_id)
        return await turns.turns.waiting(who.scope, conversation_id, first)

    async def _model_context(self, scope: Scope, found: ConversationRecord) -> ModelContext | None:
        """What a model call of the active branch is given: its summary, the messages after."""
        if self.summaries is None:
            return None
        if found.active_message_id is None:
            return ModelContext()
        branch = await self.summaries.branch(
            scope, found.id, found.active_message_id, limit=CONTEXT_LIMIT
        )
        return ModelContext.model_validate({"summary": branch.summary, "messages": branch.messages})

    async def _owned(self, who: Principal, conversation_id: str) -> ConversationRecord:
        found = await self.store.get(who.scope, conversation_id)
        if found is None:
            raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
        if found.subject != who.subject:
            raise NotOwner(f"conversation {conversation_id[:80]!r} belongs to another user")
        return found

    async def delete(self, who: Principal, conversation_id: str) -> None:
        """Delete one of the caller's conversations and its messages."""
        await self._owned(who, conversation_id)
        if not await self.store.delete(who.scope, conversation_id):
            raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")

    async def choose_branch(
        self, who: Principal, conversation_id: str, message_id: int, limit: int
    ) -> ConversationDetail:
        """Make the branch through ``message_id`` the active one (the owner's only)."""
        await self._owned(who, conversation_id)
        leaf = await self.store.select_branch(who.scope, conversation_id, message_id)
        if leaf is None:
            raise InvalidRequest(
                f"message {message_id} is not in conversation {conversation_id[:80]!r}",
                field="message_id",
            )
        return await self.detail(who, conversation_id, limit)

    async def rename(self, who: Principal, conversation_id: str, title: str) -> Conversation:
        """Rename one of the caller's conversations."""
        await self._owned(who, conversation_id)
        if not await self.store.rename(who.scope, conversation_id, title):
            raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
        renamed = await self.store.get(who.scope, conversation_id)
        if renamed is None:  # deleted between the rename and this read
            raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
        return Conversation.model_validate(renamed)
