"""The conversation a question names: free (a new conversation) or the caller's own, and the
message it follows an answer of that conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.app.errors import ConversationNotFound, InvalidRequest, NotOwner, Unavailable
from bus.errors import StoreError
from bus.store import ConversationNotFound as NoSuchConversation

if TYPE_CHECKING:
    from api.app.auth import Principal
    from bus.store import ConversationStore


async def owned_conversation(
    conversations: ConversationStore, who: Principal, conversation_id: str
) -> bool:
    """Refuse a conversation id the caller does not own; a free id starts a new one.

    Returns:
        Whether the conversation exists already (it has history).
    """
    try:
        found = await conversations.probe(who.scope, conversation_id)
    except NoSuchConversation as e:
        raise ConversationNotFound(f"no conversation {conversation_id!r}") from e
    except StoreError as e:
        raise Unavailable(f"cannot check the conversation: {e}") from e
    if found is not None and found.subject != who.subject:
        raise NotOwner(f"conversation {conversation_id!r} belongs to another user")
    return found is not None


async def check_parent(
    conversations: ConversationStore, who: Principal, conversation_id: str, message_id: int
) -> None:
    """Refuse a parent that is not an answer of the caller's conversation."""
    try:
        found = await conversations.message(who.scope, conversation_id, message_id)
    except StoreError as e:
        raise Unavailable(f"cannot read the conversation: {e}") from e
    if found is None or found.role != "assistant":
        raise InvalidRequest(
            f"message {message_id} is not an answer of conversation {conversation_id!r}",
            field="parent_message_id",
            hint="name an assistant message of GET /api/v1/conversations/{id}, or 0 for "
            "the conversation's start",
        )
