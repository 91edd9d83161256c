"""Upcasters: a contract's older versions rewritten into the next one, one function per step.

Each takes the decoded JSON of version k and returns a new document of version k+1; the
chains are registered in `bus.readers`. They work on plain JSON so they never import an
old model, and they are pure (no I/O), so a reader may run them on every delivery.

Command and run-state version 1 (before 0.1.0) held the run state's parts as plain dicts
and routed by fields of the payloads; version 2 types every part (`bus.run_state`) and the
graph routes (`agents.graph`).
"""

from __future__ import annotations

from typing import Any, cast

Doc = dict[str, Any]

_EVIDENCE_FIELDS = ("ref", "source_kind", "id", "source", "title", "heading", "text")
_REVIEW_FIELDS = ("agent", "verdict", "reason")
_JUDGE_FIELDS = ("phase", "messages", "hops", "findings", "recheck")
#: v1 ``ToolCallBatch.thread`` -> v2 ``purpose``: whose thread the results go back to.
_PURPOSE_OF_THREAD = {"messages": "research", "judge": "fact_check"}


def _dicts(value: Any) -> list[Doc]:
    items = cast("list[Any]", value) if isinstance(value, list) else []
    return [cast("Doc", item) for item in items if isinstance(item, dict)]


def _evidence_v1(item: Doc) -> Doc:
    # v1 kept whatever a source returned (scores, positions...); v2 keeps what is cited.
    kept = {k: item[k] for k in _EVIDENCE_FIELDS if k in item}
    for name in ("id", "source", "title", "heading", "text"):
        if name in kept:
            kept[name] = str(kept[name])
    return kept


def _review_v1(item: Doc) -> Doc:
    return {k: item[k] for k in _REVIEW_FIELDS if k in item}


def _judge_v1(judge: Any) -> Doc:
    found = cast("Doc", judge) if isinstance(judge, dict) else {}
    kept = {k: found[k] for k in _JUDGE_FIELDS if k in found}
    if "recheck" in kept:
        kept["recheck"] = [_evidence_v1(e) for e in _dicts(kept["recheck"])]
    if "messages" in kept:
        kept["messages"] = [_message_v1(m) for m in _dicts(kept["messages"])]
    return kept


def _message_v1(message: Doc) -> Doc:
    # v1 messages were dumps of the LLM port's ChatMessage without defaults; its ToolCall
    # had a `kind` tag (left out as a default, dropped here if a writer kept it).
    out = dict(message)
    if isinstance(out.get("tool_calls"), list):
        out["tool_calls"] = [
            {k: v for k, v in call.items() if k != "kind"} for call in _dicts(out["tool_calls"])
        ]
    return out


def run_state_v1_to_v2(state: Doc) -> Doc:
    """A version 1 run state (reviews, evidence and the fact-check as dicts) as version 2."""
    out = dict(state)
    out["messages"] = [_message_v1(m) for m in _dicts(state.get("messages"))]
    out["critiques"] = [_review_v1(r) for r in _dicts(state.get("critiques"))]
    out["verdicts"] = [_review_v1(r) for r in _dicts(state.get("verdicts"))]
    out["evidence"] = [_evidence_v1(e) for e in _dicts(state.get("evidence"))]
    out["judge"] = _judge_v1(state.get("judge"))
    return out


def _payload_v1_to_v2(payload: Doc) -> Doc:
    out = dict(payload)
    if isinstance(out.get("state"), dict):
        out["state"] = run_state_v1_to_v2(cast("Doc", out["state"]))
    kind = out.get("kind")
    if kind == "tool_calls":
        thread = out.pop("thread", "messages")
        out["purpose"] = _PURPOSE_OF_THREAD.get(str(thread), "research")
    elif kind in ("gather", "merge"):
        out.pop("return_to", None)  # the graph names the node after a merge
    return out


def command_v1_to_v2(command: Doc) -> Doc:
    """A version 1 command as version 2: its run state typed, routing fields dropped."""
    out = dict(command)
    if isinstance(out.get("payload"), dict):
        out["payload"] = _payload_v1_to_v2(cast("Doc", out["payload"]))
    out["schema_version"] = 2
    return out
