"""``agentbus ask ... | cat`` prints the answer the store keeps, byte for byte.

A real CLI process, its stdout a pipe, asks a real API and workers (on this machine and
over ``--api-url``) for an answer with lines far past 80 columns, a list literal, a
tab, an emoji-like ``:name:`` and a Markdown list; what it prints before the lines that
follow the answer must be the stored answer exactly (multi mode prints the plan and the
critique first).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from bus.store import Scope
from tests.conftest import TEST_REDIS_URL
from tests.integration.api.test_cli_remote import run_cli

ANSWER = (
    "Make the list in one line, then read it back; the interpreter keeps the order you "
    "wrote, so the first item is the one you typed first:\n\n"
    "```python\nnums = [1, 2, 3]  # a list of three numbers, in the order they were written\n"
    "print(nums[0], nums[1:3])\n```\n\n"
    "- The list [1, 2, 3] has three items and  two spaces here, and a\ttab, and :smile:.\n"
    "- A second item whose line is long enough to be wrapped by any terminal at 80 columns."
)


def scripted() -> ScriptedLLM:
    """The planner plans one step, the critic approves, everyone else gives the answer."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Any:
        first = messages[0].content
        if first.startswith("You are the planner"):
            return turn(text("- answer with the list"))
        if first.startswith("You are the critic"):
            return turn(text("OK"))
        return turn(text(ANSWER))

    return ScriptedLLM(script)


def conversation_of(out: str) -> str:
    """The conversation id the CLI prints last."""
    return out.rsplit("conversation: ", 1)[1].strip()


@pytest.mark.timeout(300)
async def test_a_piped_answer_is_the_stored_answer_byte_for_byte(start_api: Any) -> None:
    api = await start_api(scripted())
    local = {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir),
        "AGENTBUS_TENANT": "t1",
        "AGENTBUS_SUBJECT": "alice",
    }
    remote = {"AGENTBUS_API_URL": api.base, "AGENTBUS_API_KEY": await api.key("t1", "alice")}
    (code, out, err), (rcode, rout, rerr) = await asyncio.gather(
        run_cli(["ask", "--mode", "single", "A list of 1, 2, 3 in Python?"], local),
        run_cli(["ask", "--mode", "multi", "The same, in multi mode?"], remote),
    )
    assert (code, rcode) == (0, 0), (err, rerr)

    runs = await api.stores.runs.list(Scope.user("t1", "alice"))
    stored = {run.conversation_id: run.answer for run in runs}
    for printed in (out, rout):
        answer = stored[conversation_of(printed)]
        assert answer == ANSWER  # nothing in it is a citation: the check left it whole
        # On lines of its own, unwrapped and unchanged (rich wrapped it at 80 columns).
        assert "\n" + answer + "\n" in "\n" + printed, printed
