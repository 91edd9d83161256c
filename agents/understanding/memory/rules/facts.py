"""What one clause says about its user, by rules: a `Statement`, or nothing.

A clause counts when its speaker is its subject ("I", "eu", "yo", "je", "ich", or a
Portuguese or Spanish first-person verb that opens it: "Trabajo en Indra") or it names
something of theirs ("my name is", "mi zona horaria es"), and its verb says who they are,
what they do, where, what they use, or how they want answers. It never counts when it
asks (a "?" or a question word first), wants something ("I want to know ..."), supposes
("if I were", "wenn ich"), or denies ("I don't work in Lisbon"). A possessive that names
someone else ("my colleague Maria works ...") says nothing about the user.

The fact is kept in English when the clause is English (`third_person`); otherwise it is
the user's own clause, in their words: never half-translated.
"""

from __future__ import annotations

import re

from agents.understanding.memory.ports import Statement
from agents.understanding.memory.rules.languages import canonical_language
from agents.understanding.memory.rules.lexicon import Lexicon
from agents.understanding.memory.rules.reading import lemma
from agents.understanding.memory.rules.statement import MAX_VALUE_CHARS
from agents.understanding.memory.rules.third_person import third_person

#: The speaker as the object of "call me", "appelle-moi", "nenn mich".
_ME = frozenset(["me", "moi", "mich"])
#: How far after its subject a clause's verb may stand ("I mostly work remotely").
_VERB_REACH = 3


def _render(clause: str, words: list[str], lang: str) -> str:
    if lang == "en":
        return third_person(words)[: MAX_VALUE_CHARS * 2]
    text = clause.strip(" .!")
    return (text[:1].upper() + text[1:])[: MAX_VALUE_CHARS * 2] + "."


def _speaker(low: list[str], lem: list[str], lex: Lexicon, lang: str) -> int | None:
    """Where the speaker's verb phrase starts: after "I"/"ich", or at a pro-drop verb."""
    for i, word in enumerate(low):
        if word in lex.me:
            return i + 1
        if word in lex.mine:
            return None
    if lang in ("pt", "es"):
        verbs = lex.be | lex.work | lex.live | lex.use | lex.lead | lex.prefer | lex.called
        for i, (word, base) in enumerate(zip(low[:3], lem[:3], strict=False)):
            if (word in verbs or base in verbs) and word.endswith(("o", "ou", "oy", "ei")):
                return i
    return None


def _topic(lem: list[str], low: list[str], at: int, lex: Lexicon) -> str | None:
    """The topic of a clause whose speaker's verb phrase starts at ``at``."""
    for k in range(at, min(at + _VERB_REACH, len(lem))):
        base, word = lem[k], low[k]
        if base in lex.want or word in lex.want:
            return "answer_style" if any(x in lex.answer for x in lem[k:]) else None
        if base in lex.move or word in lex.move:  # "moved to the Porto office"
            return "workplace" if any(w in lex.workplaces for w in lem[k:]) else "home"
        for topic, verbs in (
            ("workplace", lex.work),
            ("home", lex.live),
            ("tools", lex.use),
            ("role", lex.lead),
            ("name", lex.called),
        ):
            if base in verbs or word in verbs:
                return topic
        if base in lex.prefer:
            return "answer_style" if any(x in lex.answer for x in lem[k:]) else f"prefers {lem[-1]}"
        if base in lex.be or word in lex.be:
            return _trait(lem[k + 1 :], lex)
    return None


def _trait(rest: list[str], lex: Lexicon) -> str | None:
    """The topic of what the user is: its head word, before any preposition."""
    words = [w for w in rest if w.isalnum() or "-" in w or "+" in w]
    while words and (words[0] in lex.preps or words[0] in lex.articles):
        words = words[1:]
    head = next((i for i, w in enumerate(words) if w in lex.preps), len(words))
    words = [w for w in words[:head] if w not in lex.articles]
    if not words:
        return None
    if words[0] in ("based", "base", "baseado", "baseada"):
        return "workplace"
    return lex.keys.get(words[-1], f"is {words[-1]}")[:64]


def _mine(lem: list[str], low: list[str], lex: Lexicon) -> str | None:
    """The topic of "my <key> is ...", when the key is one worth keeping."""
    start = next(i for i, w in enumerate(low) if w in lex.mine)
    for k in range(start + 1, min(start + 4, len(lem))):
        if lem[k] in lex.be or low[k] in lex.be:
            named = [lex.keys.get(w) for w in (*lem[start + 1 : k], *low[start + 1 : k])]
            return next((t for t in named if t), None)
    return None


def read(
    clause: str, clause_words: list[str], lex: Lexicon, lang: str, question: bool
) -> Statement | None:
    """The fact a clause states about its user, if it states one."""
    if not clause_words or question:
        return None
    low = [w.lower() for w in clause_words]
    if low[0] in lex.asking or any(w in lex.negation or w in lex.condition for w in low):
        return None
    lem = [lemma(w, lang) for w in low]
    if any(b in lex.answer for b in lem) and (
        spoken := next((c for w in clause_words if (c := canonical_language(w))), None)
    ):
        return Statement("language", f"Answer the user in {spoken.capitalize()}.")
    if any(b in lex.called and nxt in _ME for b, nxt in zip(lem, low[1:], strict=False)):
        return Statement("name", _render(clause, clause_words, lang))  # "call me Ana"
    at = _speaker(low, lem, lex, lang)
    if at is None:
        if any(w in lex.mine for w in low):
            topic = _mine(lem, low, lex)
            return Statement(topic, _render(clause, clause_words, lang)) if topic else None
        if any(b in lex.answer for b in lem) and not any(w in lex.me for w in low):
            return Statement("answer_style", _render(clause, clause_words, lang))
        return None
    topic = _topic(lem, low, at, lex)
    if topic is None:
        return None
    if at > 0 and low[at - 1] in lex.me:  # from the speaker on ("Remember that I ...")
        subject = re.search(rf"\b{re.escape(clause_words[at - 1])}\b", clause)
        clause = clause[subject.start() :] if subject else clause
        clause_words = clause_words[at - 1 :]
    return Statement(topic, _render(clause, clause_words, lang))
