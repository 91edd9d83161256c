"""The example teams of docs/teams.md, pinned as a run carries them, and a model that
answers as each of their agents."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import text, tool_call, turn
from agents.teams.parse import parse_team
from bus.team_run import PinnedTeam

DOCS = Path(__file__).parents[4] / "docs" / "teams"

ENGLISH = "Paris is the capital of France."
FRENCH = "Paris est la capitale de la France."


def pinned(name: str, version: int = 1) -> PinnedTeam:
    """The example team ``name`` as admission pins it on a run."""
    doc = parse_team((DOCS / f"{name}.yaml").read_text())
    document = doc.model_dump(mode="json", by_alias=True, exclude_none=True)
    return PinnedTeam(name=name, version=version, document=document)


def who(messages: Sequence[ChatMessage]) -> str:
    """Which example agent a request is for, by the first words of its instructions."""
    first = messages[0].content
    for start, agent in (
        ("Answer the question from what you know", "researcher_en"),
        ("Translate the answer", "translator"),
        ("Decide whether the question", "triage"),
        ("You answer billing", "billing"),
        ("You answer technical", "technical"),
        ("Write the answer", "writer"),
        ("Review the draft", "reviewer"),
    ):
        if first.startswith(start):
            return agent
    return "other"


def team_turn(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> list[LLMEvent]:
    """Each example agent's answer: the researcher in English, the translator in French,
    triage says technical, the reviewer always asks for a revision, the writer numbers its
    drafts (one more than the draft it is handed); an agent offered the calculator calls
    it once."""
    agent = who(messages)
    if tools and messages[-1].role != "tool":
        return turn(tool_call("calculator", {"expression": "23 * 19"}))
    match agent:
        case "researcher_en":
            return turn(text(ENGLISH))
        case "translator":
            return turn(text(FRENCH))
        case "triage":
            return turn(text(json.dumps({"category": "technical"})))
        case "technical":
            return turn(text("Restart the router, then check the cable."))
        case "billing":
            return turn(text("Your invoice is in the billing page."))
        case "writer":
            last = re.search(r"Draft (\d+)\.", messages[-1].content)
            return turn(text(f"Draft {int(last[1]) + 1 if last else 1}."))
        case "reviewer":
            return turn(text(json.dumps({"verdict": "revise", "notes": "shorter"})))
        case _:
            return turn(text("437"))
