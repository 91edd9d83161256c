"""Converting between the run state's plain message dicts and the LLM port's types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.llm.ports import ChatMessage


def load(raw: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """The state's messages as ``ChatMessage`` objects."""
    return [ChatMessage.model_validate(m) for m in raw]


def dump(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """``ChatMessage`` objects as JSON-ready dicts for the run state."""
    return [m.model_dump(mode="json", exclude_defaults=True) for m in messages]
