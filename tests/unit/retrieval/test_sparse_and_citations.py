"""Keyword vectors and the finalizer's citation check."""

from __future__ import annotations

import json
from typing import Any

from bus.run_state import ChatMessage, EvidenceItem
from retrieval.citations import check_answer_citations, check_citations, retrieved_refs, snippet
from retrieval.sparse import document_vector, query_vector, term_index, terms


def test_terms_lowercase_drop_stop_words_and_fold_plurals() -> None:
    assert terms("The Streams of Redis's consumer groups!") == [
        "stream",
        "redis",
        "consumer",
        "group",
    ]
    assert terms("e.g. v1.2 state-store") == ["e.g", "v1.2", "state-store"]


def test_document_weights_saturate_and_query_weights_are_one() -> None:
    once = document_vector("redis")
    many = document_vector("redis " * 20)
    assert once.indices == many.indices == [term_index("redis")]
    assert once.values[0] < many.values[0] < 2.2 * once.values[0]  # saturates at k1 + 1
    q = query_vector("redis redis streams")
    assert sorted(q.indices) == q.indices and q.values == [1.0, 1.0]
    assert query_vector("the of and").empty


def _tool_message(results: list[dict[str, Any]], name: str = "search_docs") -> ChatMessage:
    body = {"status": "ok", "code": "ok", "result": {"query": "q", "results": results}}
    return ChatMessage(role="tool", tool_call_id="s1c0", name=name, content=json.dumps(body))


def _chunk(ref: int, source: str = "a.md") -> dict[str, Any]:
    return {
        "ref": ref,
        "id": f"id{ref}",
        "source": source,
        "title": "T",
        "text": f"text {ref} " * 50,
    }


def test_hallucinated_citations_are_stripped_and_counted() -> None:
    messages = [
        ChatMessage.user("q"),
        _tool_message([_chunk(1), _chunk(2, "b.md")]),
        _tool_message([_chunk(7)], name="web_search"),  # not a document search
    ]
    answer = "Fast [1]. Streams persist [3]. Groups ack [2][7]. Lists [2, 7]. Made up [9]."
    checked = check_answer_citations(answer, messages)
    # [2, 7] is not a citation (7 was never shown): it stays as written.
    assert checked.answer == "Fast [1]. Streams persist. Groups ack [2]. Lists [2, 7]. Made up."
    assert checked.stripped == 3
    assert [(c.ref, c.source) for c in checked.citations] == [(1, "a.md"), (2, "b.md")]
    assert checked.citations[0].snippet.endswith("…") and len(checked.citations[0].snippet) <= 241
    event = checked.event("run1", "run1:3:0")
    assert event.type == "citations" and event.stripped == 3 and len(event.items) == 2


def test_only_successful_search_results_back_citations() -> None:
    failed = ChatMessage(
        role="tool",
        tool_call_id="c1",
        name="search_docs",
        content=json.dumps({"status": "error", "code": "timeout"}),
    )
    garbage = ChatMessage(role="tool", tool_call_id="c2", name="search_docs", content="not json")
    assert retrieved_refs([failed, garbage]) == {}
    checked = check_citations("A claim [1].", {})
    assert (checked.answer, checked.stripped, checked.citations) == ("A claim.", 1, [])


def test_snippet_cuts_at_a_word() -> None:
    assert snippet("short text") == "short text"
    assert snippet("word " * 100, 20) == "word word word word…"


def test_multi_mode_evidence_backs_citations_too() -> None:
    evidence = [
        EvidenceItem(ref=1, id="e1", source="notes.md", title="N", text="x", source_kind="memory"),
        EvidenceItem(ref=2, id="e2", source="d.md", title="D", text="y", source_kind="documents"),
    ]
    messages = [_tool_message([_chunk(2, "tool.md")])]
    checked = check_answer_citations("One [1], two [2], three [3].", messages, evidence)
    assert checked.answer == "One [1], two [2], three."
    assert [(c.ref, c.source, c.source_kind) for c in checked.citations] == [
        (1, "notes.md", "memory"),
        (2, "tool.md", "documents"),  # the later search_docs result wins the number
    ]
