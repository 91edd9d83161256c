"""The benchmark turn as a LangGraph graph, for `agentbus bench peer` (needs the ``peer`` extra).

The same work as ``agentbus bench turn --mode multi --accuracy accurate`` with the scripted
model (`agents.llm.scripted.benchmark_turn`): planner → researcher (a calculator call) →
tools (23 * 19 → 437, with agentbus's own calculator) → researcher (the 40-token answer,
streamed) → critic → verifier → end. The model is a zero-latency chat model that replies
with the scripted model's fixed turns, token by token through LangGraph's own streaming.
It is written as a LangGraph user would write it: `MessagesState`, the prebuilt `ToolNode`
and `tools_condition`, ``bind_tools``, and the judges' models tagged ``nostream`` so that only
the answer reaches the client, as in agentbus (plan, critique and verdict are state, not
tokens).
"""

# LangGraph's own signatures carry unknown type parameters (its cache and checkpoint
# generics); that is theirs to type, so only this module relaxes the rule.
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.llm.scripted import (
    BENCHMARK_ANSWER,
    BENCHMARK_CRITIQUE,
    BENCHMARK_PLAN,
    tokens,
)
from gateway.tools.calculator import evaluate

QUESTION = "What is 23 × 19?"
"""The question of every run (the one `agentbus_bench.turn` asks)."""

VERDICT = '{"verdict": "pass", "reasons": ["matches the tool result"]}'
"""The verifier's scripted reply (the scripted model's verifier turn)."""

ANSWER_TOKENS = len(tokens(BENCHMARK_ANSWER))
"""Tokens of the streamed answer (40)."""


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. '23 * 19'."""
    return json.dumps({"expression": expression, "result": evaluate(expression)})


class ScriptedChatModel(BaseChatModel):
    """A zero-latency chat model that plays the scripted model's benchmark turns.

    As `agents.llm.scripted.benchmark_turn` chooses from the conversation: after a tool
    result, the answer; with tools bound, a calculator call for 23 * 19; otherwise
    ``reply``. Replies stream one word-sized token per chunk, natively async (the base
    class would run a sync stream in a thread per chunk, which no real provider does).
    """

    reply: str
    """What the model says when it neither calls a tool nor answers after one."""

    @property
    def _llm_type(self) -> str:
        return "agentbus-scripted"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` offered on every call (in OpenAI's format, as real
        providers convert them)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _turn(self, messages: list[BaseMessage], tools: object) -> AIMessage:
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=BENCHMARK_ANSWER)
        if tools:
            call = {"name": "calculator", "args": {"expression": "23 * 19"}, "id": "call_1"}
            return AIMessage(content="", tool_calls=[call])
        return AIMessage(content=self.reply)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._turn(messages, kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._turn(messages, kwargs.get("tools"))
        if message.tool_calls:
            call = message.tool_calls[0]
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"]),
                        "id": call["id"],
                        "index": 0,
                        "type": "tool_call_chunk",
                    }
                ],
            )
            yield ChatGenerationChunk(message=chunk)
            return
        assert isinstance(message.content, str)
        # The base class reports each chunk to the callbacks (LangGraph's stream among them).
        for token in tokens(message.content):
            yield ChatGenerationChunk(message=AIMessageChunk(content=token))


class TurnState(MessagesState):
    """The run's messages, and what the planner and the judges decided."""

    plan: str
    critique: dict[str, str]
    verdict: dict[str, Any]


def build_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The benchmark turn's graph, checkpointed by ``checkpointer``."""
    planner_model = ScriptedChatModel(reply=BENCHMARK_PLAN, tags=["nostream"])
    researcher_model = ScriptedChatModel(reply=BENCHMARK_ANSWER).bind_tools([calculator])
    critic_model = ScriptedChatModel(reply=BENCHMARK_CRITIQUE, tags=["nostream"])
    verifier_model = ScriptedChatModel(reply=VERDICT, tags=["nostream"])

    async def planner(state: TurnState) -> dict[str, Any]:
        system = SystemMessage("You are the planner. List the steps to answer the question.")
        reply = await planner_model.ainvoke([system, *state["messages"]])
        return {"plan": reply.text}

    async def researcher(state: TurnState) -> dict[str, Any]:
        system = SystemMessage(f"You are the researcher. Follow the plan:\n{state['plan']}")
        return {"messages": [await researcher_model.ainvoke([system, *state["messages"]])]}

    async def critic(state: TurnState) -> dict[str, Any]:
        system = SystemMessage("You are the critic. Reply OK, REVISE or REPLAN as JSON.")
        reply = await critic_model.ainvoke([system, *state["messages"]])
        return {"critique": json.loads(reply.text)}

    async def verifier(state: TurnState) -> dict[str, Any]:
        system = SystemMessage("You are the verifier. Reply with a JSON verdict.")
        reply = await verifier_model.ainvoke([system, *state["messages"]])
        return {"verdict": json.loads(reply.text)}

    builder = StateGraph(TurnState)
    builder.add_node("planner", planner)
    builder.add_node("researcher", researcher)
    builder.add_node("tools", ToolNode([calculator]))
    builder.add_node("critic", critic)
    builder.add_node("verifier", verifier)
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "researcher")
    builder.add_conditional_edges("researcher", tools_condition, {"tools": "tools", END: "critic"})
    builder.add_edge("tools", "researcher")
    builder.add_edge("critic", "verifier")
    builder.add_edge("verifier", END)
    return builder.compile(checkpointer=checkpointer)


@dataclass(frozen=True, slots=True)
class Answer:
    """What the client of one run saw: the answer's streamed tokens."""

    tokens: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether the whole answer arrived, 437 in it."""
        return len(self.tokens) == ANSWER_TOKENS and "437" in "".join(self.tokens)


async def ask(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str) -> Answer:
    """Run the turn on a new thread and consume its answer's tokens as they stream."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    streamed: list[str] = []
    async for chunk, _ in graph.astream(
        {"messages": [HumanMessage(QUESTION)]}, config, stream_mode="messages"
    ):
        if isinstance(chunk, AIMessageChunk) and isinstance(chunk.content, str) and chunk.content:
            streamed.append(chunk.content)
    return Answer(tokens=tuple(streamed))
