"""What a model reads about a document tool gives it no query to copy.

A small model sends a description's example as its query: the 0.5B searched the graph for
"who leads X" itself, which finds nothing. So a retrieval tool says what it finds and what
its query is, never a question to ask.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.spec import ToolSpec
from gateway.tools.query_graph import QueryGraph
from gateway.tools.search_docs import SearchDocs

#: Listing a tool's spec runs no search.
NO_SEARCH: Any = None

#: A question given as an example: "(e.g. who ...", ": where is ...".
EXAMPLE_QUESTION = re.compile(
    r"(?:e\.g\.|for example|such as|like|[:(,;])\s*['\"]?(?:who|what|where|when|which|how)\b",
    re.IGNORECASE,
)
PLACEHOLDER = re.compile(r"\b[XYZ]\b")


def _read_by_the_model(spec: ToolSpec) -> list[str]:
    query = spec.input_schema["properties"]["query"]
    return [spec.description, query["description"]]


# Named by the tool: an object's default repr differs between processes, and pytest-xdist's
# workers must collect the same ids.
@pytest.mark.parametrize(
    "tool", [QueryGraph(NO_SEARCH), SearchDocs(NO_SEARCH)], ids=lambda tool: tool.spec.name
)
def test_a_retrieval_tool_shows_no_question_to_send_as_its_query(tool: Any) -> None:
    for text in _read_by_the_model(tool.spec):
        assert not EXAMPLE_QUESTION.search(text), text
        assert not PLACEHOLDER.search(text), text
