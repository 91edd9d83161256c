"""The local decision prompt's layout: what every call shares comes first (prompt cache)."""

from __future__ import annotations

import pytest

from agents.llm.local_prompts import (
    ANSWER_MARK,
    after_tool_grammar,
    decision_messages,
    split_system,
)
from agents.llm.ports import ChatMessage, ToolCall
from tests.contracts.llm import CALCULATOR

PERSONA = "You are the researcher."


def prompt(note: str | None, question: str) -> str:
    messages = [ChatMessage.system(PERSONA)]
    if note is not None:
        messages.append(ChatMessage.system(note))
    messages.append(ChatMessage.user(question))
    return decision_messages(messages, [CALCULATOR])[0]["content"]


def test_two_runs_with_different_plans_share_the_persona_tools_and_examples() -> None:
    first = prompt("Plan: use the calculator.", "What is 2 * 3?")
    second = prompt("Plan: look it up first.", "What is 4 * 5?")
    shared = first[: next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)]
    assert shared.startswith(PERSONA)
    assert "Tools:" in shared and "Examples:" in shared and "12 * 7" in shared
    assert first.endswith("Plan: use the calculator.")


def test_without_notes_the_prompt_is_persona_then_tools() -> None:
    text = prompt(None, "What is 2 * 3?")
    assert text.startswith(f"{PERSONA}\n\nTools:\n- calculator")
    assert "Plan" not in text


def test_split_system_keeps_the_first_system_message_apart() -> None:
    messages = [
        ChatMessage.system("a"),
        ChatMessage.user("q"),
        ChatMessage.system("b"),
        ChatMessage.system("c"),
    ]
    assert split_system(messages) == ("a", "b\n\nc")
    assert split_system([ChatMessage.user("q")]) == ("", "")


def test_right_after_the_calculator_s_result_the_compute_example_is_not_shown() -> None:
    question = [ChatMessage.system("You are helpful."), ChatMessage.user("What is 23 × 19?")]
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "23 * 19"})
    answered = [*question, ChatMessage.assistant("", [call]), ChatMessage.tool(call, "437")]
    assert "4 * 12" in decision_messages(question, [CALCULATOR])[0]["content"]
    assert "4 * 12" not in decision_messages(answered, [CALCULATOR])[0]["content"]


def test_after_a_tool_result_the_answer_example_shows_the_answer_after_its_json() -> None:
    question = [ChatMessage.system("You are helpful."), ChatMessage.user("What is 23 × 19?")]
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "23 * 19"})
    answered = [*question, ChatMessage.assistant("", [call]), ChatMessage.tool(call, "437")]
    system = decision_messages(answered, [CALCULATOR])[0]["content"]
    assert f"returned: 105\n{ANSWER_MARK}(12 + 3) × 7 = 105." in system
    # The first decision's prompt is the same text: one cached prefix for both steps.
    first = decision_messages(question, [CALCULATOR])[0]["content"]
    assert first.startswith(system[: system.index("Examples:")])


def test_the_after_tool_grammar_allows_a_call_or_the_answer_mark_then_prose() -> None:
    call = '%llguidance {}\nstart: %json {"type": "object"}'
    grammar = after_tool_grammar(call)
    assert grammar.startswith("%llguidance {}\nstart: call | answer\n")
    assert 'call: %json {"type": "object"}' in grammar
    assert 'answer: "{\\"action\\": \\"answer\\"}\\n" PROSE' in grammar
    assert "PROSE: /[^\\s][\\s\\S]*/" in grammar
    with pytest.raises(ValueError, match="llguidance"):
        after_tool_grammar('root ::= "x"')
