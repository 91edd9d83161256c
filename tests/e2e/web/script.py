"""The scripted model the browser tests talk to: one scenario per keyword in the question."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agents import prompts
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import (
    ScriptedLLM,
    Turn,
    agent_of,
    benchmark_turn,
    text,
    tool_call,
    turn,
)

#: A payload that sets window.__pwned if any of it ever runs as script.
XSS = (
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    "[click me](javascript:window.__pwned=3)"
)

STREAM_ANSWER = (
    "## Streaming\n\nAnswers arrive **token by token** over the websocket, and each batch "
    "of tokens is shown as soon as it lands. The page keeps the last event id of every "
    "run, so a reconnect asks for exactly the events it missed and nothing twice.\n\n"
    "```python\nprint('hello from a code block')\n```\n\n"
    "- first point of the list\n- second point, with `inline code`\n\n"
    "Read more at https://example.org/streaming for details. That is the end."
)

DRAFTS = ("The first draft says 41.", "The revised answer says 42.")

#: Tokens after the part of a "[turns]" answer tests read: with a token delay, each answer
#: streams long enough for a second question to arrive meanwhile.
TURNS_PADDING = 60


def turns_answer(asked: str, messages: Sequence[ChatMessage]) -> str:
    """The "[turns]" answer: the question, the questions before it in the history, and
    whether an answer there was cut short (``multitask: interrupt``), then padding."""
    earlier = [m.content for m in messages if m.role == "user"][:-1]
    cut = any(prompts.INTERRUPTED_ANSWER in m.content for m in messages if m.role == "assistant")
    head = f"answer to {asked}; before it: {', '.join(earlier) or 'nothing'}"
    return head + ("; one was cut short" if cut else "") + " ." * TURNS_PADDING


def role_of(messages: Sequence[ChatMessage], options: LLMOptions) -> str:
    """Which agent is asking: the scripted model's own reading (`agents.llm.scripted.agent_of`:
    the default prompts name the role in their first words, schemas tell the rest apart)."""
    return agent_of(messages, options)


def make_llm(token_delay: float = 0.0) -> ScriptedLLM:
    """The scripted model; ``token_delay`` paces every streamed token."""
    seen: Counter[str] = Counter()

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = role_of(messages, options)
        users = [m.content for m in messages if m.role == "user"]
        asked = users[-1] if users else ""
        after_tool = messages[-1].role == "tool"
        if "[stream]" in asked and role == "researcher":
            return turn(text(STREAM_ANSWER))
        if "[xss]" in asked and role == "researcher":
            if not after_tool:
                return turn(tool_call("search_docs", {"query": "pwned payload"}))
            return turn(text(f"Here it is: {XSS} and the source [1]."))
        if "[cite]" in asked and role == "researcher":
            if not after_tool:
                return turn(tool_call("search_docs", {"query": "when are invoices sent"}))
            return turn(text("Invoices go out on the first working day of the month [1]."))
        if "[egress]" in asked:
            if role == "planner":
                return turn(text("- search the web"))
            if role == "critic":
                return turn(text("OK the search was handled."))
            if role == "researcher":
                if after_tool:
                    return turn(text("Done searching."))
                return turn(tool_call("web_search", {"query": "agentbus"}))
        if "[drafts]" in asked:
            if role == "planner":
                return turn(text("- answer"))
            if role == "critic":
                seen["critic"] += 1
                # As the critic answers under its schema: the page shows verdict and reason.
                verdict = (
                    '{"verdict": "REVISE", "reason": "the number is wrong"}'
                    if seen["critic"] == 1
                    else '{"verdict": "OK", "reason": "42 is supported"}'
                )
                return turn(text(verdict))
            if role == "researcher":
                seen["researcher"] += 1
                return turn(text(DRAFTS[min(seen["researcher"], 2) - 1]))
        if "[echo]" in asked and role == "researcher":
            return turn(text(f"echo: {asked} after {len(users) - 1} questions"))
        if "[turns]" in asked and role == "researcher":
            return turn(text(turns_answer(asked, messages)))
        if "[long]" in asked and role == "researcher":
            return turn(text(" ".join(f"w{n}" for n in range(1000))))
        return benchmark_turn(messages, tools, options)

    return ScriptedLLM(script, token_delay=token_delay)
