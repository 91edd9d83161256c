"""Reading the judges: the critic's schema and its tolerant parse (what a run's judges
concluded is `agents.checks.verified`).

The critic and the verifier answer under a JSON schema (the local model's grammar, or
``response_format: json_schema`` on an OpenAI-compatible server). A server that honours
neither may still answer in JSON, in a code fence, or with a bare verdict word; the parse
accepts those. Anything else is ``UNKNOWN`` / ``unknown``: shown as such, never read as an
approval (a reply that repeats the prompt's own "OK if ..., REVISE if ..." names several
verdicts and is unknown too).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from agents import model_input
from agents.checks.claim_verdicts import CLAIMS
from agents.llm.json_reply import json_object
from bus.json_values import is_array
from bus.run_state import CritiqueVerdict

CRITIC_VERDICTS: tuple[CritiqueVerdict, ...] = ("OK", "REVISE", "REPLAN")
#: What a judge asking for changes quotes: the draft's words it flags and the evidence's
#: words that state otherwise (`agents.checks.flag_evidence`); empty when there are none.
QUOTES: dict[str, Any] = {
    "draft_says": {"type": "string", "maxLength": 160},
    "evidence_says": {"type": "string", "maxLength": 240},
}
CRITIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **CLAIMS,
        "verdict": {"enum": list(CRITIC_VERDICTS)},
        "reason": {"type": "string", "maxLength": 400},
        **QUOTES,
    },
    "required": [*CLAIMS, "verdict", "reason", *QUOTES],
    "additionalProperties": False,
}
_WORD = re.compile(r"\b(OK|REVISE|REPLAN)\b", re.IGNORECASE)
_LEADING = re.compile(r"^\W*(OK|REVISE|REPLAN)\b[\s:.,-]*", re.IGNORECASE)


_ECHO_EDGE = r"""[\[\]{}"'<>]"""
_SEPARATORS = re.compile(r"(?:\s*[;:,|]\s*){2,}")


@functools.cache
def _echoes(names: tuple[str, ...]) -> re.Pattern[str]:
    # A field name inside brackets or quotes ("[draft_says]", '"reason":'), or written as an
    # identifier ("draft_says:"): a name with an underscore is never prose.
    bare = "|".join(re.escape(n) for n in names if "_" in n)
    quoted = "|".join(re.escape(n) for n in names)
    forms = [
        rf"{_ECHO_EDGE}+\s*(?:{quoted})\s*{_ECHO_EDGE}*\s*[:=]?",
        rf"\b(?:{quoted})\s*{_ECHO_EDGE}+\s*[:=]?",
        *([rf"\b(?:{bare})\b\s*[:=]?"] if bare else []),
    ]
    return re.compile("|".join(forms))


@functools.cache
def _labels() -> re.Pattern[str]:
    # The prompt's labels as written there (case and colon): "the draft says 12 rooms" is a
    # reason's own prose. A list number opening a line goes with the label it numbers.
    labels = sorted(model_input.SCAFFOLDING, key=len, reverse=True)  # the longest first
    said = "|".join(re.escape(label) for label in labels)
    return re.compile(rf"(?:^[ \t]*\d{{1,2}}\.[ \t]*)?(?:{said}),?", re.MULTILINE)


def without_scaffolding(text: str, schema: dict[str, Any]) -> str:
    """``text`` without the judge prompt's own scaffolding: the schema's field names and
    the labels of what the judge read (`agents.model_input.SCAFFOLDING`). A small model may
    run on from its reason into the next field ("the draft says 17; draft_says]: 17"), or
    copy the prompt's claim pairs ("The draft says: ..."). Only a name set off as a field is
    removed (in brackets or quotes, or one with an underscore), and a label only as the
    prompt writes it: "the reason is" is prose."""
    names = tuple(sorted(schema.get("properties", {}), key=len, reverse=True))
    found = 0
    if names:
        text, found = _echoes(names).subn(" ", text)
    text, labelled = _labels().subn(" ", text)
    if not found and not labelled:
        return text.strip()
    cleaned = _SEPARATORS.sub("; ", text)
    cleaned = re.sub(r"\s+([.;,])", r"\1", " ".join(cleaned.split()))
    return cleaned.strip(" ;:,|")


def quotes(text: str) -> tuple[str, str]:
    """(draft_says, evidence_says) of a judge's JSON reply; empty where it gave none."""
    doc = json_object(text) or {}
    return str(doc.get("draft_says") or "").strip(), str(doc.get("evidence_says") or "").strip()


def parse_critique(text: str) -> tuple[CritiqueVerdict, str]:
    """(verdict, reason) from the critic's reply; ``UNKNOWN`` when it cannot be read.

    Read, in order: a JSON object with a known ``verdict``; a reply that begins with one
    verdict word and names no other. A reply naming two verdicts (the prompt read back)
    or none is ``UNKNOWN``, with the reply kept as the reason.
    """
    doc = json_object(text)
    if doc is not None:
        verdict = str(doc.get("verdict", "")).strip().upper()
        said = doc.get("reason") or doc.get("reasons") or ""
        reason = "; ".join(map(str, said)) if is_array(said) else str(said)
        reason = without_scaffolding(reason, CRITIC_SCHEMA)
        if verdict in CRITIC_VERDICTS:
            return verdict, reason  # type: ignore[return-value]
        return "UNKNOWN", f"unreadable critique: {text.strip()[:200]}"
    match = _LEADING.match(text)
    named = {w.upper() for w in _WORD.findall(text)}
    if match and len(named) == 1:
        return match.group(1).upper(), text[match.end() :].strip()  # type: ignore[return-value]
    return "UNKNOWN", f"unreadable critique: {text.strip()[:200]}" if text.strip() else ""
