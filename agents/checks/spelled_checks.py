"""Recomputations the question or the draft spell out, found without a model.

The fact-check's model names an expression per figure (`agents.checks.recompute`); a small model
often names a wrong one or none. These rules add the recomputations the text itself
states, so a draft that gets them wrong is refuted whatever the model planned:

- the question's own arithmetic: ``What is 1234 × 5678?``, ``what does sum([3, 5, 7]) * 2
  evaluate to?``, ``What is 12% of 1850?``, ``what does len('agentbus') return?``;
- a duration asked for between two clock times (``leaves at 15:45 and arrives at 18:20``)
  or two dates, in the question, else in the evidence when the question holds none
  (``opens at 08:15 and closes at 17:45``), or from today to a date;
- a clock time asked for from one clock time and a duration (``leaves at 20:00 and the
  trip takes 12 hours; when does it arrive?``): ``20:00 + 12 h``;
- the draft's own arithmetic: ``4 nights × 85 EUR = 350 EUR`` is recomputed as ``4 * 85``.

- the current date, time, weekday, year or month, asked for here or in a named place
  (``What time is it in Tokyo?``): a ``current_time`` call in that place's IANA zone.

Each is a calculator expression (`gateway.tools.calculator` takes clock times and dates)
or a ``current_time`` call: the calls still go through the gateway like every tool call.
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import re
import zoneinfo
from collections.abc import Sequence
from typing import Literal

from bus import written_times

Asks = Literal["date", "time", "weekday", "year", "month"]

MAX_SPELLED = 3
_OPS = {"×": "*", "·": "*", "÷": "/", "−": "-", "–": "-"}
_TIMES_X = re.compile(r"(?<=[\d)\s])[xX](?=\s*[\d(])")
_FUNCS = r"(?:sum|min|max|abs|round|sqrt)"
# An arithmetic expression as a question writes it: numbers, operators, parentheses, lists.
_EXPR = re.compile(
    rf"(?:{_FUNCS}\s*\(|[\[(])*\s*-?\d[\d.,]*\s*(?:[\])]\s*)*"
    rf"(?:(?:\*\*|//|[-+*/×xX·÷−–%,])\s*(?:{_FUNCS}\s*\(|[\[(])*\s*-?\d[\d.]*\s*(?:[\])]\s*)*)+"
)
_ASKS_VALUE = re.compile(
    r"^\s*(?:in python,?\s*)?(?:what(?:'s| is| does)|compute|calculate|evaluate|how much is)\s+"
    r"(?:the value of\s+)?(?P<expr>.+?)\s*(?:evaluate to|return|equal|give|come to)?\s*[?.]?\s*$",
    re.IGNORECASE,
)
_LENGTH = re.compile(r"len\(\s*(?:'[^'\\]{0,200}'|\"[^\"\\]{0,200}\")\s*\)")
_CALL = re.compile(rf"{_FUNCS}\(\s*[\d\s.,+\-*/\[\]()]+\)")
_PERCENT_OF = re.compile(
    r"^\s*what(?:'s| is)\s+(\d+(?:\.\d+)?)\s*%\s*of\s+(\d+(?:\.\d+)?)\s*[?.]?\s*$", re.IGNORECASE
)
_ASKS_DURATION = re.compile(
    r"\bhow long\b|\bhow many (?:minutes|hours)\b|\bduration\b|\bhow much time\b", re.IGNORECASE
)
_ASKS_DAYS = re.compile(r"\bhow many (?:days|weeks)\b", re.IGNORECASE)
_TODAY = re.compile(r"\btoday\b|\bfrom now\b|\buntil\b|\bleft\b", re.IGNORECASE)
# An operand: an ISO date, a clock time, or a number (the calculator takes all three).
_NUM = r"(?:\d{4}-\d{2}-\d{2}(?![\d:])|\d{1,2}:\d{2}(?![\d:])|-?\d+(?:\.\d+)?(?![\d:]))"
_UNIT = r"(?:\s*(?:%|[A-Za-z€$£]{1,12}))?"
_OP = r"\s*(?:\*\*|[-+*/×xX·÷−–])\s*"
# The draft's own arithmetic: ``4 nights × 85 EUR = 340 EUR``, ``4321 × 8765 = 37873565``,
# ``18:20 - 15:45 = 155 minutes``.
_STATED = re.compile(rf"((?<![\w.:-]){_NUM}{_UNIT}(?:{_OP}{_NUM}{_UNIT})+)\s*=\s*-?\d")
_TERM = re.compile(rf"({_NUM})\s*(%)?|(\*\*|[-+*/×·÷−–]|(?<=\s)[xX](?=\s))")
_UNIT_WORD = re.compile(r"(?<![\w])[A-Za-z€$£]{2,}")
_TIMED = re.compile(r"\d:\d|\d{4}-\d{2}-\d{2}")


def _python(expression: str) -> str | None:
    """The expression in the calculator's syntax, or None when it does not parse."""
    text = _TIMES_X.sub("*", expression.strip().rstrip(","))
    for sign, op in _OPS.items():
        text = text.replace(sign, op)
    text = re.sub(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\d(])", r"(\1 / 100)", text)  # not modulo
    if not re.search(r"\d\s*(?:\*\*|//|[-+*/%])\s*[\d(\[a-z]|\)\s*[-+*/]", text):
        return None
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    return text


_WORDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bthe remainder when (\S+) is divided by (\S+?)(?=[?.]?$)", r"\1 % \2"),
        (r"\b(?:the )?square root of (\d+(?:\.\d+)?)", r"sqrt(\1)"),
        (r"\s+to the power of\s+", " ** "),
        (r"\s+(?:multiplied by|times)\s+", " * "),
        (r"\s+divided by\s+", " / "),
        (r"\s+plus\s+", " + "),
        (r"\s+minus\s+", " - "),
        (r",? as a decimal(?=[?.]?$)", ""),
    )
)


def _in_symbols(question: str) -> str:
    """The question with its operators in words as symbols (``7 divided by 8`` is ``7 / 8``)."""
    for pattern, replacement in _WORDS:
        question = pattern.sub(replacement, question)
    return question


def question_arithmetic(question: str) -> list[str]:
    """The arithmetic a question asks for outright (``What is 1234 × 5678?``, ``What is 7
    divided by 8?``)."""
    question = _in_symbols(question.strip())
    percent = _PERCENT_OF.match(question)
    if percent:
        return [f"{percent.group(2)} * {percent.group(1)} / 100"]
    asked = _ASKS_VALUE.match(question)
    if not asked:
        return []
    target = asked.group("expr").strip()
    if _LENGTH.fullmatch(target) or _CALL.fullmatch(target):
        try:
            ast.parse(target, mode="eval")
        except SyntaxError:
            return []
        return [target]
    match = _EXPR.fullmatch(target)
    if not match:
        return []
    python = _python(match.group(0))
    return [python] if python else []


def _dates(text: str) -> list[str]:
    return [d.isoformat() for d in written_times.dates_in_order(text)]


def _clock_times(text: str) -> list[str]:
    return [m.group(0).strip() for m in written_times.CLOCK.finditer(text)]


def durations(question: str, evidence: Sequence[str], today: dt.date) -> list[str]:
    """The duration a question asks for, between two clock times or two dates."""
    out: list[str] = []
    if _ASKS_DURATION.search(question):
        times = _clock_times(question)
        if not times:
            seen: list[str] = []
            for text in evidence:
                seen += [t for t in _clock_times(text) if t not in seen]
            times = seen
        if len(times) == 2:
            out.append(f"{times[1]} - {times[0]}")
    if _ASKS_DAYS.search(question):
        days = _dates(question)
        if len(days) == 1 and _TODAY.search(question):
            days = [today.isoformat(), days[0]]
        if len(days) == 2:
            out.append(f"{days[1]} - {days[0]}")
    return out


_ASKS_CLOCK = re.compile(r"\bwhat time\b|\bat what time\b|\bwhen\b", re.IGNORECASE)


def clock_after(question: str) -> list[str]:
    """The clock time a question asks for from one clock time and one duration (``leaves
    at 20:00, takes 12 hours: when does it arrive?``), as ``20:00 + 12 h``."""
    if not _ASKS_CLOCK.search(question) or _ASKS_DURATION.search(question):
        return []
    times = _clock_times(question)
    rest = written_times.CLOCK.sub(" ", question)
    hours = list(written_times.DURATION.finditer(rest))
    minutes = list(written_times.MINUTES.finditer(written_times.DURATION.sub(" ", rest)))
    if len(times) != 1 or len(hours) + len(minutes) != 1:
        return []
    if minutes:
        return [f"{times[0]} + {minutes[0][1]} min"]
    whole, part = hours[0][1], hours[0][2]
    return [f"{times[0]} + {whole} h" + (f" {part} min" if part else "")]


def draft_arithmetic(draft: str) -> list[str]:
    """The arithmetic a draft writes out with its result, as expressions to recompute."""
    out: list[str] = []
    for match in _STATED.finditer(draft):
        parts: list[str] = []
        for number, percent, op in _TERM.findall(_UNIT_WORD.sub(" ", match.group(1))):
            if op:
                sign = str(op)
                parts.append("*" if sign in "xX" else _OPS.get(sign, sign))
            else:
                parts.append(f"({number} / 100)" if percent else number)
        joined = " ".join(parts)
        # Clock times and dates are the calculator's to read; anything else must parse.
        expression = joined if _TIMED.search(joined) else _python(joined)
        if expression and expression not in out:
            out.append(expression)
    return out


def spelled(question: str, evidence: Sequence[str], draft: str, today: dt.date) -> list[str]:
    """Every recomputation the question or the draft spells out, at most ``MAX_SPELLED``.

    A duration the question asks for is recomputed the way round it asks; the draft's own
    expression for the same two times the other way round (``15:45 - 18:20``, a day less
    45 minutes) is its mistake, not a figure for the researcher to "answer with".
    """
    asked = durations(question, evidence, today)
    wrong_way = backwards(asked)
    found: list[str] = []
    ordered = (*question_arithmetic(question), *asked, *clock_after(question))
    for expression in (*ordered, *draft_arithmetic(draft)):
        if expression not in found and _bare(expression) not in wrong_way:
            found.append(expression)
    return found[:MAX_SPELLED]


def backwards(asked: Sequence[str]) -> set[str]:
    """The durations asked for, written the other way round, without spaces: an expression
    among them (a draft's, or a recompute the model planned) subtracts the later time or
    date from the earlier one, and its result is no figure for the answer."""
    return {_bare(" - ".join(reversed(e.split(" - ")))) for e in asked}


def _bare(expression: str) -> str:
    return "".join(expression.split())


def asked_for(question: str, evidence: Sequence[str], today: dt.date) -> list[str]:
    """The recomputations the question itself asks for: its own arithmetic and a duration
    it asks for. Unlike the model's plan or the draft's written-out arithmetic, they say
    what the answer must be, not how the answer got its figure (a sum, for an average)."""
    return [
        *question_arithmetic(question),
        *durations(question, evidence, today),
        *clock_after(question),
    ]


_NOW = re.compile(
    r"\b(?:today|now|current(?:ly)?|right now|at the moment|this (?:year|month))\b", re.IGNORECASE
)
_ASKED_PART: tuple[tuple[re.Pattern[str], Asks], ...] = (
    (re.compile(r"\bday of the week\b|\bweekday\b|\bwhat day\b", re.IGNORECASE), "weekday"),
    (re.compile(r"\bdate\b", re.IGNORECASE), "date"),
    (re.compile(r"\btime\b", re.IGNORECASE), "time"),
    (re.compile(r"\bwhat year\b|\bwhich year\b", re.IGNORECASE), "year"),
    (re.compile(r"\bwhat month\b|\bwhich month\b", re.IGNORECASE), "month"),
)
_PLACE = re.compile(r"\bin ((?:[A-Z][a-z]+|UTC|GMT)(?: [A-Z][a-z]+)*)")


@functools.cache
def _zones() -> dict[str, str]:
    """IANA zones by their place name, lower-cased: ``new york`` is America/New_York."""
    out: dict[str, str] = {"utc": "UTC", "gmt": "UTC"}
    for name in sorted(zoneinfo.available_timezones()):
        if "/" in name and not name.startswith(("Etc/", "SystemV/", "posix/", "right/")):
            out.setdefault(name.rsplit("/", 1)[1].replace("_", " ").lower(), name)
    return out


def clock_question(question: str) -> tuple[Asks, dict[str, str]] | None:
    """What a question asks of the clock now, and the current_time arguments to ask it
    (a named place's zone, else UTC); None when it asks nothing of the clock now."""
    if not _NOW.search(question) or _ASKS_DURATION.search(question) or _ASKS_DAYS.search(question):
        return None
    asks: Asks | None = next(
        (part for pattern, part in _ASKED_PART if pattern.search(question)), None
    )
    if asks is None:
        return None
    for place in _PLACE.findall(question):
        zone = _zones().get(str(place).lower())
        if zone:
            return asks, {"timezone": zone}
    return asks, {}
