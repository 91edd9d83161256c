"""What the researcher may end a run with: an answer in words, never a tool's payload, a
runaway repetition, its own instructions or nothing at all.

A small model that cannot use what a tool gave it sometimes hands that on as the answer:
the gateway's JSON (``{"status": "error", "code": "invalid_argument", ...}``), "Invalid
argument", the calculator's "... is not valid arithmetic syntax (fix the argument and call
the tool again)", a sentence of its system prompt, or one digit repeated until the token
cap. `rejected` tells such a draft apart from an answer; `RepeatGuard` notices a runaway
while it streams, so the model is stopped there. A rejected draft is replaced by a sentence
that says what could not be done and why: the tool, what it was asked and what it said.

How the stream stays the stored answer: the researcher streams a draft as it comes (a good
answer is never held back); when the finished draft is rejected it emits
``draft_superseded`` (clients drop every answer token shown so far: `bus.transcript`) and
then streams the replacement, which alone becomes the draft. Holding the whole answer back
until it could be judged would cost every run its streaming to protect the rare bad one.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from bus.run_state import ChatMessage

#: The most tokens one researcher turn may write: the local adapter's own default, so an
#: endpoint (which otherwise writes up to its context) stops where the local model does;
#: a thinking turn gets `REASONING_TOKENS` more for its reasoning.
ANSWER_TOKENS = 1024
REASONING_TOKENS = 3072
#: The fewest words of its own an answer adds to a tool's error to be more than its echo.
OWN_WORDS = 3
#: A span of the instructions this many words long, found in the answer, was copied.
COPIED_SPAN = 5
#: The share of the answer's words inside copied spans that makes it the prompt's echo.
COPIED_SHARE = 0.6
#: The most words a reply may add to an example of the prompt and still be its copy.
RESULT_WORDS = 2
#: A runaway: a unit of at most `REPEAT_UNIT` characters (with a letter or digit), repeated
#: at least `REPEAT_TIMES` times back to back over at least `REPEAT_CHARS` characters.
REPEAT_UNIT = 40
REPEAT_TIMES = 8
REPEAT_CHARS = 64
#: How many streamed characters arrive between two looks for a runaway.
REPEAT_STRIDE = 16

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_HINT = re.compile(r"\s*\([^()]*\)\s*$")  # the gateway's "(what to do)" after a message
_FENCE = re.compile(r"^```[\w-]*\s*|\s*```$")
_BRACE = re.compile(r"\{")
_DECODER = json.JSONDecoder()  # stateless: one for every answer


def turn_tokens(think: bool) -> int:
    """The generation cap of a researcher turn (a runaway ends here at the latest)."""
    return ANSWER_TOKENS + (REASONING_TOKENS if think else 0)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One result of the model's last tool round, as its TOOL message says it."""

    tool: str
    arguments: dict[str, Any]
    body: dict[str, Any]

    @property
    def failed(self) -> bool:
        """True unless the gateway said ``ok``."""
        return self.body.get("status") != "ok"

    def said(self) -> str:
        """What the tool answered, in its words: the message without its hint, or the code."""
        message = str(self.body.get("message") or "")
        return _HINT.sub("", message) or str(self.body.get("code", "")).replace("_", " ")

    def asked(self) -> str:
        """What the tool was asked: the one argument's value, or the arguments as JSON."""
        values = list(self.arguments.values())
        if len(values) == 1 and isinstance(values[0], str | int | float):
            return str(values[0])
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a draft is not an answer, and the answer that replaces it."""

    reason: str
    replacement: str


def last_round(thread: Sequence[ChatMessage]) -> list[ToolOutcome]:
    """The results of the thread's trailing tool round (none if the thread ends otherwise)."""
    results: list[ChatMessage] = []
    for message in reversed(thread):
        if message.role != "tool":
            break
        results.insert(0, message)
    calls = {c.id: c for m in thread if m.role == "assistant" for c in m.tool_calls}
    out: list[ToolOutcome] = []
    for message in results:
        call = calls.get(message.tool_call_id or "")
        parsed = _json(message.content)
        body: dict[str, Any] = (
            cast("dict[str, Any]", parsed)
            if isinstance(parsed, dict)
            else {"result": message.content}
        )
        out.append(ToolOutcome(message.name or "tool", call.arguments if call else {}, body))
    return out


def rejected(
    answer: str,
    thread: Sequence[ChatMessage],
    instructions: Sequence[str] = (),
    examples: Sequence[str] = (),
    question: str = "",
) -> Rejection | None:
    """Why ``answer`` (the draft a turn wrote after ``thread``) is not an answer, or None.

    Args:
        answer: the turn's whole text.
        thread: the messages the turn answered (its trailing TOOL messages are the round
            the answer follows).
        instructions: what the model was told (system prompt); data such as passages is
            not instructions and may be quoted.
        examples: what the model's prompt showed as examples (an answer, an expression);
            a reply that is one of them word for word, with at most `RESULT_WORDS` more
            (its result), is the prompt's, unless ``question`` asks for it (shares most of
            its words): too short for the span test of ``instructions``.
        question: the question the run answers.
    """
    outcomes = last_round(thread)
    failure = next((o for o in outcomes if o.failed), None)
    if not answer.strip():
        if _said_before(thread):  # an earlier turn's text (beside its calls) is the answer
            return None
        why = "I wrote no reply"
        words = _replacement(failure, outcomes) if outcomes else _said(None, why)
        return Rejection("the draft was empty", words)
    if _is_payload(answer, outcomes):
        return Rejection("the draft was a tool's raw output", _replacement(failure, outcomes))
    words = _words(answer)  # read once: every check below compares these
    if failure is not None and _echoes(words, failure):
        return Rejection("the draft repeated a tool's error", _replacement(failure, outcomes))
    if _copies(words, instructions) or _recites(words, examples, question):
        why = "my reply repeated my own instructions instead of answering"
        return Rejection("the draft repeated the prompt", _said(failure, why))
    return None


def runaway(unit: str, failure: ToolOutcome | None = None) -> Rejection:
    """The rejection of a draft stopped by `RepeatGuard` while repeating ``unit``."""
    shown = unit.strip() or unit
    why = f"my reply began repeating “{shown}” without end, so I stopped it"
    return Rejection("the draft ran away repeating itself", _said(failure, why))


def _said_before(thread: Sequence[ChatMessage]) -> bool:
    """True when a turn since the question wrote text (streamed beside its tool calls)."""
    for message in reversed(thread):
        if message.role == "user":
            return False
        if message.role == "assistant" and message.content.strip():
            return True
    return False


def _said(failure: ToolOutcome | None, why: str) -> str:
    if failure is not None:  # the tool's refusal is the likelier cause: say it first
        return _replacement(failure, [failure])
    return f"I couldn't answer this: {why}."


def _replacement(failure: ToolOutcome | None, outcomes: Sequence[ToolOutcome]) -> str:
    if failure is not None:
        return (
            f"I couldn't answer this: the {failure.tool} tool refused `{failure.asked()}` "
            f"({failure.said()})."
        )
    if outcomes:
        first = outcomes[0]
        return (
            f"I couldn't answer this: I called the {first.tool} tool with `{first.asked()}`, "
            "but I did not turn its result into an answer."
        )
    return "I couldn't answer this: my reply was raw data, not an answer."


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _is_payload(answer: str, outcomes: Sequence[ToolOutcome]) -> bool:
    """The answer is, or holds, a JSON object that is a tool's result or the gateway's
    outcome (or a copy with its ``status`` and ``code``): parsed, so a reformatted copy
    counts too, and an answer about some other JSON (code that returns an error object)
    does not."""
    if not outcomes:
        return False
    payloads = [o.body for o in outcomes] + [
        o.body["result"] for o in outcomes if isinstance(o.body.get("result"), dict | list)
    ]
    said = {(o.body.get("status"), o.body.get("code")) for o in outcomes}
    bare = _FENCE.sub("", answer.strip())
    whole = _json(bare) if bare[:1] in ("{", "[") else None  # JSON starts with one of these
    found: list[Any] = [whole] if isinstance(whole, dict | list) else []
    for start in (m.start() for m in _BRACE.finditer(answer)):
        try:
            value, _ = _DECODER.raw_decode(answer, start)
        except ValueError:
            continue
        found.append(value)
    for value in found:
        if value in payloads:
            return True
        if isinstance(value, dict):
            copy = cast("dict[str, Any]", value)
            if (copy.get("status"), copy.get("code")) in said:
                return True
    return False


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _echoes(words: list[str], failure: ToolOutcome) -> bool:
    """The answer (its ``words``) is the tool's error and little else: it holds a word of
    the error itself (its message or code), most of its words are the error's (message,
    code, tool, arguments), and it adds fewer than `OWN_WORDS` of its own."""
    error = set(_words(json.dumps(failure.body, ensure_ascii=False).replace("_", " ")))
    asked = set(_words(failure.tool + " " + failure.asked()))
    # Only the error's own words make an echo: a draft of the words the model had sent
    # the tool ("27 days of paid holiday a year", refused by the calculator) may be the
    # answer, and is the model's, not the tool's.
    if not any(len(w) > 3 and w not in asked for w in set(words) & error):
        return False
    own = [w for w in words if w not in error | asked]
    return len(own) < OWN_WORDS and len(words) - len(own) >= len(own)


@functools.lru_cache(maxsize=64)
def _spans(text: str) -> frozenset[tuple[str, ...]]:
    """Every run of `COPIED_SPAN` words of an instruction (the same system prompt comes
    with every answer: its spans are worked out once)."""
    told = _words(text)
    return frozenset(tuple(told[i : i + COPIED_SPAN]) for i in range(len(told) - COPIED_SPAN + 1))


@functools.lru_cache(maxsize=64)
def _example_words(example: str) -> tuple[str, ...]:
    """An example's words (the prompt's examples are the same for every answer)."""
    return tuple(_words(example))


def _copies(words: list[str], instructions: Sequence[str]) -> bool:
    """Most of the answer's ``words`` lie in spans of `COPIED_SPAN` words copied from the
    instructions."""
    if len(words) < COPIED_SPAN:
        return False
    told = [_spans(text) for text in instructions]
    empty: frozenset[tuple[str, ...]] = frozenset()
    spans = told[0] if len(told) == 1 else empty.union(*told)  # one: no copy
    covered = [False] * len(words)
    for i in range(len(words) - COPIED_SPAN + 1):
        if tuple(words[i : i + COPIED_SPAN]) in spans:
            covered[i : i + COPIED_SPAN] = [True] * COPIED_SPAN
    return sum(covered) >= COPIED_SHARE * len(words)


def _recites(words: list[str], examples: Sequence[str], question: str) -> bool:
    """The answer (its ``words``) is one of the prompt's examples word for word, with at
    most `RESULT_WORDS` more (``12 * 7 = 84.``), and the question holds fewer than half of
    its words (so it did not ask what the example computes)."""
    recited = False
    for example in examples:
        said = _example_words(example)
        if said and tuple(words[: len(said)]) == said and len(words) - len(said) <= RESULT_WORDS:
            recited = True
    if not recited:
        return False
    asked = set(_words(question))
    return 2 * sum(w in asked for w in words) < len(words)


class RepeatGuard:
    """Watches a streamed answer for a runaway repetition (``"0000…"``, a phrase looping).

    A repetition trips it once a unit of up to `REPEAT_UNIT` characters that holds a letter
    or digit has repeated `REPEAT_TIMES` times over `REPEAT_CHARS` characters: far past a
    long number or a table rule, and long before the token cap.
    """

    def __init__(self) -> None:
        self._text = ""
        self._unchecked = 0  # characters added since the text was last looked at
        self.unit: str | None = None

    def feed(self, delta: str) -> bool:
        """Add streamed text; True once the answer has run away (`unit` says with what).

        The text is looked at once `REPEAT_STRIDE` characters have arrived since the last
        look: a runaway goes on, so it is caught at most that many characters later, and a
        short answer costs no look at all.
        """
        if self.unit is not None:
            return True
        window = REPEAT_UNIT * REPEAT_TIMES + REPEAT_CHARS
        self._text = (self._text + delta)[-window:]
        self._unchecked += len(delta)
        if self._unchecked < REPEAT_STRIDE or len(self._text) < REPEAT_CHARS:
            return False
        return self.look()

    def look(self) -> bool:
        """Look at the text now (the stream ended): True if it ran away."""
        if self.unit is None and self._unchecked:
            self._unchecked = 0
            self.unit = _repeating(self._text)
        return self.unit is not None


#: Per unit size, how many of the text's last characters must each equal the one a unit
#: before them for it to run away (`_repeating`); growing with the size, so a text too
#: short for one size is too short for every larger one.
_NEEDS = tuple(
    (size, max(REPEAT_CHARS, REPEAT_TIMES * size) - size) for size in range(1, REPEAT_UNIT + 1)
)


def _repeating(text: str) -> str | None:
    """The unit ``text`` ends repeating, if it runs away (see `RepeatGuard`)."""
    n = len(text)
    for size, need in _NEEDS:
        # It runs away with a unit of `size` when its last `need` characters each equal
        # the one `size` before them (one slice comparison: this runs on every look).
        if n < need + size:
            break
        if text[n - need :] == text[n - need - size : n - size]:
            unit = text[n - size :]
            if any(c.isalnum() for c in unit):
                return unit
    return None
