"""Numbered chunks for the researcher, and the finalizer's citation check.

The ``search_docs`` tool numbers the chunks it returns ``[1]..[k]``, ``web_search`` its
results (the page's URL and title are the source), and the model cites them as ``[n]``. A
bracket group ``[n]`` or ``[n, m]`` is a citation only if every number in it was carried
by some such result *in this run* (the TOOL messages in the run state) or by the merged
evidence; citations come back with source, title and snippet for the ``citations`` event.
A lone ``[n]`` the run never showed is an invented citation: it is removed and counted.
Any other group (``[1, 2, 3]`` with 3 not shown: a list, an interval) is not a citation
and is left exactly as written; so is everything else in the answer. Numbers are unique
in a run: every retrieval numbers its chunks from the run's next free number
(`bus.run_state.RunState.next_ref`), so a kept ``[n]`` names exactly the chunk the model
was shown as ``[n]``. How a marker is found, and what is
never touched, is `retrieval.citation_scan`'s docstring.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bus.commands import ToolCallResult
from bus.events import Citation, Citations
from bus.json_values import is_array, is_object
from bus.run_state import ChatMessage, EvidenceItem
from retrieval.citation_scan import MarkerScanner
from retrieval.models import Hit

#: The tool whose results citations may point at.
SEARCH_TOOL = "search_docs"
#: The web search tool: its results are numbered and cited like documents.
WEB_TOOL = "web_search"
#: The knowledge-graph tool: its passages (facts with their chunks) are cited like documents.
GRAPH_TOOL = "query_graph"
#: Every tool whose results carry citation numbers, and the source kind each shows.
CITED_TOOLS: dict[str, str] = {SEARCH_TOOL: "documents", WEB_TOOL: "web", GRAPH_TOOL: "graph"}
SNIPPET_CHARS = 240
_SPACE = " \t"  # what the scanner holds before a possible marker


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of ``text``, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0] + "…"


def numbered(hits: Sequence[Hit], start: int = 1) -> list[dict[str, Any]]:
    """Hits as the numbered chunks a search result shows (``ref`` from ``start``)."""
    return [
        {
            "ref": n,
            "id": h.chunk.id,
            "source": h.chunk.source,
            "title": h.chunk.title,
            "heading": h.chunk.heading,
            "text": h.chunk.text,
        }
        for n, h in enumerate(hits, start)
    ]


def renumbered(result: Any, start: int) -> tuple[Any, int]:
    """A ``search_docs`` result with its chunks numbered from ``start``, and the next free
    number (the gateway numbers each result of a run from the run's next free number)."""
    found = result.get("results") if is_object(result) else None
    if not is_object(result) or not is_array(found):
        return result, start
    items: list[Any] = []
    ref = start
    for item in found:
        if is_object(item):
            items.append({**item, "ref": ref})
            ref += 1
        else:
            items.append(item)
    return {**result, "results": items}, ref


def refs_end(results: Iterable[ToolCallResult]) -> int:
    """One past the highest citation number the cited tools' results carry (0: none)."""
    end = 0
    for result in results:
        if result.name not in CITED_TOOLS or result.status != "ok":
            continue
        body = result.result
        items = body.get("results") if is_object(body) else None
        for item in items if is_array(items) else []:
            ref = item.get("ref") if is_object(item) else None
            if isinstance(ref, int):
                end = max(end, ref + 1)
    return end


@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    """A chunk the model was shown under citation number ``ref``."""

    ref: int
    id: str
    source: str
    title: str
    text: str
    source_kind: str = "documents"


def retrieved_refs(messages: Sequence[ChatMessage]) -> dict[int, RetrievedChunk]:
    """Citation numbers shown to the model in a run, from its TOOL messages."""
    found: dict[int, RetrievedChunk] = {}
    for message in messages:
        kind = CITED_TOOLS.get(message.name or "") if message.role == "tool" else None
        if kind is None:
            continue
        try:
            body = json.loads(message.content)
        except (TypeError, ValueError):
            continue
        if not is_object(body) or body.get("status") != "ok":
            continue
        result = body.get("result")
        items = result.get("results") if is_object(result) else None
        for item in items if is_array(items) else []:
            chunk = _shown(item, kind) if is_object(item) else None
            if chunk is not None:  # a malformed item cannot back a citation
                found[chunk.ref] = chunk
    return found


def _shown(item: dict[str, Any], kind: str) -> RetrievedChunk | None:
    try:
        ref = int(item["ref"])
        if kind == "web":  # a web result: its page is the source
            url = str(item["url"])
            return RetrievedChunk(
                ref, url, url, str(item.get("title", "")), str(item.get("snippet", "")), kind
            )
        return RetrievedChunk(
            ref, str(item["id"]), str(item["source"]), str(item.get("title", "")),
            str(item.get("text", "")), kind,
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None


def evidence_refs(evidence: Sequence[EvidenceItem]) -> dict[int, RetrievedChunk]:
    """Citation numbers of a multi-mode run's merged evidence."""
    return {
        item.ref: RetrievedChunk(
            item.ref, item.id, item.source, item.title, item.text, item.source_kind
        )
        for item in evidence
    }


@dataclass(frozen=True, slots=True)
class CheckedAnswer:
    """An answer after its citations were checked.

    Attributes:
        answer: the answer with its invented citations removed (nothing else changed).
        citations: the kept ones, in order of first use.
        stripped: how many invented citations were removed (each occurrence counts).
    """

    answer: str
    citations: list[Citation]
    stripped: int

    def event(self, run_id: str, step_id: str | None = None, agent: str = "finalizer") -> Citations:
        """The ``citations`` client event."""
        return Citations(
            run_id=run_id,
            step_id=step_id,
            agent=agent,
            items=self.citations,
            stripped=self.stripped,
        )


def citation(chunk: RetrievedChunk) -> Citation:
    """A kept citation of ``chunk``, as the ``citations`` event shows it."""
    return Citation(
        ref=chunk.ref,
        source=chunk.source,
        title=chunk.title,
        snippet=snippet(chunk.text),
        source_kind=chunk.source_kind,
    )


class CitationCheck:
    """Checks an answer's citation markers as it streams (see `retrieval.citation_scan`).

    Feed it the answer piece by piece; what it returns, joined, is the checked answer, the
    same as `check_citations` gives for the whole text. Every number the model may cite
    is known before the answer streams (``retrieved``), so each marker is decided the
    moment its ``]`` and the character after it have arrived.
    """

    def __init__(self, retrieved: Mapping[int, RetrievedChunk]) -> None:
        self._retrieved = retrieved
        self._kept: dict[int, Citation] = {}
        self.stripped = 0
        self._scanner: MarkerScanner | None = None
        # Until the first "[", nothing can change: the text passes through at once but
        # for its trailing spaces (a marker after them would take them with it).
        self._passed: list[str] = []
        self._spaces = ""

    def feed(self, text: str) -> str:
        """The checked text for the next piece of the answer (held text comes later)."""
        if self._scanner is not None:
            return self._scanner.feed(text)
        if "[" not in text:
            text = self._spaces + text
            solid = text.rstrip(_SPACE)
            self._spaces = text[len(solid) :]
            self._passed.append(solid)
            return solid
        # The first "[": the scanner reads what passed (a text without "[" that does not
        # end in a space comes out of it unchanged) to know where it stands, then goes on.
        scanner = self._scanner = MarkerScanner(self._decide)
        scanner.feed("".join(self._passed))
        self._passed.clear()
        return scanner.feed(self._spaces + text)

    def finish(self) -> str:
        """The end of the answer: whatever was still held, checked."""
        if self._scanner is None:
            return self._spaces
        return self._scanner.finish()

    def cite(self, ref: int) -> str:
        """The marker of shown passage ``ref``, kept as a citation: for the caller to append
        (`retrieval.attribution`: the passage an answer that cites nothing rests on)."""
        self._kept.setdefault(ref, citation(self._retrieved[ref]))
        return f"[{ref}]"

    @property
    def shown(self) -> Mapping[int, RetrievedChunk]:
        """The passages the answer may cite, by number."""
        return self._retrieved

    @property
    def citations(self) -> list[Citation]:
        """The kept citations, in order of first use."""
        return list(self._kept.values())

    def _decide(self, numbers: list[int], marker: str) -> str | None:
        if all(n in self._retrieved for n in numbers):
            for n in numbers:
                if n not in self._kept:
                    self._kept[n] = citation(self._retrieved[n])
            return marker
        if len(numbers) > 1:
            # Not every number was shown: a list, an interval or a range, not citations.
            return None
        self.stripped += 1  # one number the run never showed: an invented citation
        return ""


def check_citations(answer: str, retrieved: Mapping[int, RetrievedChunk]) -> CheckedAnswer:
    """Keep the citations of retrieved chunks; remove and count invented lone markers.

    Only markers in citation position are candidates (`retrieval.citation_scan`), and of
    those only a lone ``[n]`` the run never showed is ever changed (removed); an answer
    with none comes back byte for byte.
    """
    check = CitationCheck(retrieved)
    checked = check.feed(answer) + check.finish()
    return CheckedAnswer(checked, check.citations, check.stripped)


def citation_items(
    refs: Sequence[int],
    messages: Sequence[ChatMessage],
    evidence: Sequence[EvidenceItem] = (),
) -> list[Citation]:
    """The ``citations`` event's items for numbers already checked (a number the run no
    longer shows is left out)."""
    shown = {**evidence_refs(evidence), **retrieved_refs(messages)}
    return [citation(shown[n]) for n in refs if n in shown]


def check_answer_citations(
    answer: str,
    messages: Sequence[ChatMessage],
    evidence: Sequence[EvidenceItem] = (),
) -> CheckedAnswer:
    """`check_citations` against what the run retrieved.

    Args:
        answer: the draft answer.
        messages: the run's messages (``RunState.messages``); ``search_docs`` and
            ``web_search`` results count.
        evidence: a multi-mode run's merged evidence (``RunState.evidence``), if any. A
            number present in both resolves to the ``search_docs`` chunk (seen later).
    """
    return check_citations(answer, {**evidence_refs(evidence), **retrieved_refs(messages)})
