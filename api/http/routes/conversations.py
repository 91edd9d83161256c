"""``/api/v1/conversations``: the caller's conversations (list, read, rename, delete).

The use cases are ``api.app.conversations``'s: a tenant admin may also list and read every
conversation of its tenant (audited), but only the owner may change one (an admin gets 403,
anyone else 404).
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import Conversation, ConversationDetail, ConversationList
from agentbus_contracts.ids import MAX_MESSAGE_ID
from api.app.conversations import Conversations
from api.app.errors import ConversationNotFound, NotOwner
from api.http.responses import errors
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/conversations", tags=["conversations"])

_Conversations = Annotated[Conversations, Depends(use_case(lambda deps: deps.conversation_book))]


@router.get("", response_model=ConversationList)
async def list_conversations(
    conversations: _Conversations,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> ConversationList:
    """The caller's conversations; an admin's, the tenant's (audited)."""
    return await conversations.listing(caller, limit)


@router.get(
    "/{conversation_id}",
    response_model=ConversationDetail,
    responses=errors(ConversationNotFound),
)
async def get_conversation(
    conversation_id: str,
    conversations: _Conversations,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=500, description="Latest messages to return.")] = 100,
) -> ConversationDetail:
    """One conversation with its messages."""
    return await conversations.detail(caller, conversation_id, limit)


@router.delete(
    "/{conversation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(ConversationNotFound, NotOwner),
)
async def delete_conversation(
    conversation_id: str, conversations: _Conversations, caller: Caller
) -> Response:
    """Delete one of the caller's conversations and its messages."""
    await conversations.delete(caller, conversation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


class Branch(BaseModel):
    """The message whose branch becomes the active one."""

    model_config = ConfigDict(extra="forbid")

    message_id: int = Field(ge=1, le=MAX_MESSAGE_ID)


@router.put(
    "/{conversation_id}/active",
    response_model=ConversationDetail,
    responses=errors(ConversationNotFound, NotOwner),
)
async def choose_branch(
    conversation_id: str, body: Branch, conversations: _Conversations, caller: Caller
) -> ConversationDetail:
    """Make the branch through ``message_id`` the active one (the owner's only): it ends
    at that message's newest descendants, and the next question continues from there."""
    return await conversations.choose_branch(caller, conversation_id, body.message_id, 100)


class Rename(BaseModel):
    """A conversation's new title."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500)


@router.patch(
    "/{conversation_id}",
    response_model=Conversation,
    responses=errors(ConversationNotFound, NotOwner),
)
async def rename_conversation(
    conversation_id: str, body: Rename, conversations: _Conversations, caller: Caller
) -> Conversation:
    """Rename one of the caller's conversations (its title folded to one line, 120 chars)."""
    return await conversations.rename(caller, conversation_id, body.title)
