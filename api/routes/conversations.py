"""``/api/v1/conversations``: the tenant's conversations (list, read, delete)."""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from api.errors import ConversationNotFound
from api.routes.common import Caller, Deps
from bus.store import ConversationRecord, MessageRecord

router = APIRouter(prefix="/api/v1/conversations", tags=["conversations"])


class ConversationList(BaseModel):
    """The tenant's conversations, most recently active first."""

    conversations: list[ConversationRecord]


class ConversationView(BaseModel):
    """A conversation and its latest messages, oldest first."""

    conversation: ConversationRecord
    messages: list[MessageRecord]


@router.get("", response_model=ConversationList)
async def list_conversations(
    deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> ConversationList:
    """The tenant's conversations."""
    return ConversationList(conversations=await deps.conversations.list(caller.tenant_id, limit))


@router.get("/{conversation_id}", response_model=ConversationView)
async def get_conversation(
    conversation_id: str,
    deps: Deps,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=500, description="Latest messages to return.")] = 100,
) -> ConversationView:
    """One conversation with its messages."""
    found = await deps.conversations.get(caller.tenant_id, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    history = await deps.conversations.history(caller.tenant_id, conversation_id, limit)
    return ConversationView(conversation=found, messages=history)


@router.delete("/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_conversation(conversation_id: str, deps: Deps, caller: Caller) -> Response:
    """Delete a conversation and its messages."""
    if not await deps.conversations.delete(caller.tenant_id, conversation_id):
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


class Rename(BaseModel):
    """A conversation's new title."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500)


@router.patch("/{conversation_id}", response_model=ConversationRecord)
async def rename_conversation(
    conversation_id: str, body: Rename, deps: Deps, caller: Caller
) -> ConversationRecord:
    """Rename a conversation (its title is folded to one line of at most 120 characters)."""
    if await deps.conversations.get(caller.tenant_id, conversation_id) is None or not (
        await deps.conversations.rename(caller.tenant_id, conversation_id, body.title)
    ):
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    found = await deps.conversations.get(caller.tenant_id, conversation_id)
    assert found is not None
    return found
