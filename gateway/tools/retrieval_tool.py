"""What the retrieval tools (``search_docs``, ``query_graph``) share.

Both take a query and a ``top_k``, are LOW risk with no network, and answer with numbered
passages (``{ref, id, source, title, heading, text}``) that the model cites as ``[ref]``
and the finalizer checks (`retrieval.citations`). Both are `CallerAwareTool`s: the caller's
tenant and ACL groups filter every read, so without a caller they refuse to run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from typing import Any, ClassVar, Generic, TypeVar

from gateway.errors import ToolError
from gateway.ports import Caller, EgressClient
from gateway.spec import Risk, ToolSpec
from retrieval.citations import GRAPH_TOOL, SEARCH_TOOL
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.source import GRAPH

MAX_TOP_K = 20
"""The most passages a retrieval tool returns for one call."""

#: The sources each retrieval tool reads (the graph is built from the documents).
TOOL_SOURCES = {SEARCH_TOOL: frozenset({DOCUMENTS}), GRAPH_TOOL: frozenset({DOCUMENTS, GRAPH})}


def reads_declared(tool: str, sources: Collection[str]) -> bool:
    """Whether an agent that declares ``sources`` may call ``tool``: a retrieval tool only
    when they name a source it reads; any tool when it declares none."""
    reads = TOOL_SOURCES.get(tool)
    return not sources or reads is None or not reads.isdisjoint(sources)


S = TypeVar("S")
"""What a retrieval tool searches with."""


def retrieval_spec(*, name: str, description: str, query_help: str, what: str) -> ToolSpec:
    """The spec of a retrieval tool.

    Args:
        name: the tool's name.
        description: what the tool does, for the model.
        query_help: what the ``query`` argument is, for the model.
        what: what a result is called in ``top_k``'s description (``chunks``, ``passages``).
    """
    passage = {
        "type": "object",
        "properties": {
            "ref": {"type": "integer", "minimum": 1},
            "id": {"type": "string"},
            "source": {"type": "string"},
            "title": {"type": "string"},
            "heading": {"type": "string"},
            "text": {"type": "string"},
        },
        "required": ["ref", "id", "source", "title", "text"],
        "additionalProperties": False,
    }
    return ToolSpec(
        name=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": query_help,
                },
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TOP_K,
                    "description": f"How many {what} to return (default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": passage},
                "note": {"type": "string"},
            },
            "required": ["query", "results"],
            "additionalProperties": False,
        },
        risk=Risk.LOW,
        timeout_s=20.0,
        max_output_bytes=32_768,
    )


class RetrievalTool(ABC, Generic[S]):
    """A tool that finds numbered passages for a query, as the caller may read them.

    Args:
        search: what the tool searches with (its `find` uses it).
        default_top_k: passages returned when the model does not ask for a number.
    """

    spec: ClassVar[ToolSpec]
    note: ClassVar[str]
    """Told to the model with every result: how to cite what it was given."""

    def __init__(self, search: S, *, default_top_k: int = 5) -> None:
        self._search = search
        self._default_top_k = default_top_k

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Refused: without a caller there is no tenant to filter by."""
        raise ToolError(
            f"{self.spec.name} needs the caller's tenant; it runs only through the gateway"
        )

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Find as ``caller`` (their tenant and groups filter every read)."""
        query: str = args["query"]
        top_k = int(args.get("top_k") or self._default_top_k)
        results = await self.find(caller, query, top_k)
        return {"query": query, "results": results, "note": self.note}

    @abstractmethod
    async def find(self, caller: Caller, query: str, top_k: int) -> list[dict[str, Any]]:
        """The passages for ``query`` that ``caller`` may read, best first, numbered from 1.

        Raises:
            ToolError: the store behind the tool is unavailable.
        """
