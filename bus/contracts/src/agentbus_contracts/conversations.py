"""Conversations: the caller's list, one conversation with its messages."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from agentbus_contracts.base import View


class Conversation(View):
    """A conversation (its messages come with ``get_conversation``)."""

    id: str
    tenant_id: str
    subject: str
    title: str | None = None
    created_at: datetime
    updated_at: datetime
    active_message_id: int | None = Field(
        default=None, description="The last message of the active branch."
    )


class Message(View):
    """One message of a conversation; ``id`` grows in the order messages were appended."""

    id: int
    conversation_id: str
    tenant_id: str
    run_id: str | None = None
    role: Literal["user", "assistant"]
    content: str
    created_at: datetime
    parent_id: int | None = Field(
        default=None, description="The message it follows (null: the conversation's start)."
    )
    status: Literal["interrupted"] | None = Field(
        default=None,
        description="interrupted: a partial answer a later question cut short (multitask).",
    )


class PendingTurn(View):
    """A run of the conversation that has not ended: running, or queued behind it."""

    run_id: str
    state: Literal["running", "queued"]
    question: str


class ConversationSummary(View):
    """The older part of a branch, folded into text a model reads instead of its messages."""

    content: str
    through_message_id: int = Field(description="The last message it covers.")
    messages: int = Field(description="How many messages of the branch it covers.")
    created_at: datetime


class ModelContext(View):
    """What a model call of the active branch is given of the conversation."""

    summary: ConversationSummary | None = Field(
        default=None, description="The branch's newest summary (null: none yet)."
    )
    messages: list[Message] = Field(
        default=[],
        description="The branch's messages after the summary, oldest first; the next "
        "question folds the oldest of them into a new summary if they outgrow the "
        "model's window.",
    )


class ConversationList(View):
    """The caller's conversations (an admin's: the tenant's), most recently active first."""

    conversations: list[Conversation]


class ConversationDetail(View):
    """A conversation: the active branch's latest messages (oldest first), and the tree."""

    conversation: Conversation
    messages: list[Message] = Field(
        description="The active branch (what the next question continues), oldest first."
    )
    tree: list[Message] = Field(
        default=[],
        description="Every message of the conversation, oldest first; each names its parent, "
        "so edited questions and regenerated answers show as siblings.",
    )
    pending: list[PendingTurn] = Field(
        default=[], description="Its runs in flight or waiting, in the order they were asked."
    )
    context: ModelContext | None = Field(
        default=None,
        description="What the model is given of the active branch: its summary and the "
        "messages after it (null from a server that keeps no summaries).",
    )
