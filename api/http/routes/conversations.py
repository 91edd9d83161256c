"""``/api/v1/conversations``: the caller's conversations (list, read, rename, delete).

A conversation belongs to the user who started it. A tenant admin may also list and read
every conversation of its tenant (each read of another user's is audited), but only the
owner may rename or delete one: an admin gets 403, anyone else 404.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import (
    Conversation,
    ConversationDetail,
    ConversationList,
    ModelContext,
)
from api.app.deps import ApiDeps
from api.app.errors import ConversationNotFound, InvalidRequest, NotOwner
from api.app.oversight import audit_read
from api.http.responses import errors
from api.http.routes.common import Caller, Deps
from bus.store import MAX_MESSAGE_ID, ConversationRecord, Scope

router = APIRouter(prefix="/api/v1/conversations", tags=["conversations"])

#: Messages of the tree ``GET /conversations/{id}`` returns at most.
TREE_LIMIT = 2000
#: Messages after the summary ``GET /conversations/{id}`` returns at most (its ``context``).
CONTEXT_LIMIT = 500


@router.get("", response_model=ConversationList)
async def list_conversations(
    deps: Deps, caller: Caller, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> ConversationList:
    """The caller's conversations; an admin's, the tenant's (audited)."""
    found = await deps.conversations.list(caller.scope, limit)
    others = [c.id for c in found if c.subject != caller.subject]
    await audit_read(
        deps.audit, caller, what="list_conversations", owners=(c.subject for c in found), ids=others
    )
    return ConversationList.model_validate({"conversations": found})


@router.get(
    "/{conversation_id}",
    response_model=ConversationDetail,
    responses=errors(ConversationNotFound),
)
async def get_conversation(
    conversation_id: str,
    deps: Deps,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=500, description="Latest messages to return.")] = 100,
) -> ConversationDetail:
    """One conversation with its messages."""
    found = await deps.conversations.get(caller.scope, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    await audit_read(
        deps.audit,
        caller,
        what="read_conversation",
        owners=[found.subject],
        target=conversation_id,
    )
    history = await deps.conversations.history(caller.scope, conversation_id, limit)
    tree = await deps.conversations.tree(caller.scope, conversation_id, TREE_LIMIT)
    turns = deps.starter.turns
    pending = [] if turns is None else await turns.turns.waiting(caller.scope, conversation_id)
    return ConversationDetail.model_validate(
        {
            "conversation": found,
            "messages": history,
            "tree": tree,
            "pending": [
                {"run_id": t.run_id, "state": t.state.value, "question": t.question}
                for t in pending
            ],
            "context": await _model_context(deps, caller.scope, found),
        }
    )


async def _model_context(
    deps: ApiDeps, scope: Scope, found: ConversationRecord
) -> ModelContext | None:
    """What a model call of the active branch is given: its summary, the messages after."""
    if deps.summaries is None:
        return None
    if found.active_message_id is None:
        return ModelContext()
    branch = await deps.summaries.branch(
        scope, found.id, found.active_message_id, limit=CONTEXT_LIMIT
    )
    return ModelContext.model_validate({"summary": branch.summary, "messages": branch.messages})


@router.delete(
    "/{conversation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=errors(ConversationNotFound, NotOwner),
)
async def delete_conversation(conversation_id: str, deps: Deps, caller: Caller) -> Response:
    """Delete one of the caller's conversations and its messages."""
    found = await deps.conversations.get(caller.scope, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    if found.subject != caller.subject:
        raise NotOwner(f"conversation {conversation_id[:80]!r} belongs to another user")
    if not await deps.conversations.delete(caller.scope, conversation_id):
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
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
    conversation_id: str, body: Branch, deps: Deps, caller: Caller
) -> ConversationDetail:
    """Make the branch through ``message_id`` the active one (the owner's only): it ends
    at that message's newest descendants, and the next question continues from there."""
    found = await deps.conversations.get(caller.scope, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    if found.subject != caller.subject:
        raise NotOwner(f"conversation {conversation_id[:80]!r} belongs to another user")
    leaf = await deps.conversations.select_branch(caller.scope, conversation_id, body.message_id)
    if leaf is None:
        raise InvalidRequest(
            f"message {body.message_id} is not in conversation {conversation_id[:80]!r}",
            field="message_id",
        )
    return await get_conversation(conversation_id, deps, caller)


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
    conversation_id: str, body: Rename, deps: Deps, caller: Caller
) -> Conversation:
    """Rename one of the caller's conversations (its title folded to one line, 120 chars)."""
    found = await deps.conversations.get(caller.scope, conversation_id)
    if found is None:
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    if found.subject != caller.subject:
        raise NotOwner(f"conversation {conversation_id[:80]!r} belongs to another user")
    if not await deps.conversations.rename(caller.scope, conversation_id, body.title):
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    renamed = await deps.conversations.get(caller.scope, conversation_id)
    if renamed is None:  # deleted between the rename and this read
        raise ConversationNotFound(f"no conversation {conversation_id[:80]!r}")
    return Conversation.model_validate(renamed)
