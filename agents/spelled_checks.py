"""Recomputations the question or the draft spell out, found without a model.

The fact-check's model names an expression per figure (`agents.recompute`); a small model
often names a wrong one or none. These rules add the recomputations the text itself
states, so a draft that gets them wrong is refuted whatever the model planned:

- the question's own arithmetic: ``What is 1234 × 5678?``, ``what does sum([3, 5, 7]) * 2
  evaluate to?``, ``What is 15% of 2480?``, ``what does len('agentbus') return?``;
- a duration asked for between two clock times (``leaves at 14:05 and arrives at 17:50``)
  or two dates, in the question, else in the evidence when the question holds none
  (``opens at 07:30 and closes at 19:00``), or from today to a date;
- the draft's own arithmetic: ``5 days × 62 EUR = 320 EUR`` is recomputed as ``5 * 62``.

Each is a calculator expression (`gateway.tools.calculator` takes clock times and dates):
the calls still go through the gateway like every tool call.
"""

from __future__ import annotations

import ast
import calendar
import datetime as dt
import re
from collections.abc import Sequence

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
_PERCENT_OF = re.compile(
    r"^\s*what(?:'s| is)\s+(\d+(?:\.\d+)?)\s*%\s*of\s+(\d+(?:\.\d+)?)\s*[?.]?\s*$", re.IGNORECASE
)
_CLOCK = re.compile(r"(?<![\d.:])(\d{1,2}:\d{2})(?![\d:])")
_ISO = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")
_WRITTEN = re.compile(
    r"(?:(\d{1,2})(?:st|nd|rd|th)?(?: of)? ([A-Z][a-z]+),? (\d{4}))|"
    r"(?:([A-Z][a-z]+) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}))"
)
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_ASKS_DURATION = re.compile(
    r"\bhow long\b|\bhow many (?:minutes|hours)\b|\bduration\b|\bhow much time\b", re.IGNORECASE
)
_ASKS_DAYS = re.compile(r"\bhow many (?:days|weeks)\b", re.IGNORECASE)
_TODAY = re.compile(r"\btoday\b|\bfrom now\b|\buntil\b|\bleft\b", re.IGNORECASE)
# An operand: an ISO date, a clock time, or a number (the calculator takes all three).
_NUM = r"(?:\d{4}-\d{2}-\d{2}(?![\d:])|\d{1,2}:\d{2}(?![\d:])|-?\d+(?:\.\d+)?(?![\d:]))"
_UNIT = r"(?:\s*(?:%|[A-Za-z€$£]{1,12}))?"
_OP = r"\s*(?:\*\*|[-+*/×xX·÷−–])\s*"
# The draft's own arithmetic: ``5 days × 62 EUR = 310 EUR``, ``1234 × 5678 = 700002``,
# ``17:50 - 14:05 = 35 minutes``.
_STATED = re.compile(rf"((?<![\w.:-]){_NUM}{_UNIT}(?:{_OP}{_NUM}{_UNIT})+)\s*=\s*-?\d")
_TERM = re.compile(rf"({_NUM})\s*(%)?|(\*\*|[-+*/×·÷−–]|(?<=\s)[xX](?=\s))")
_UNIT_WORD = re.compile(r"(?<![\w])[A-Za-z€$£]{2,}")
_TIMED = re.compile(r"\d:\d|\d{4}-\d{2}-\d{2}")


def _python(expression: str) -> str | None:
    """The expression in the calculator's syntax, or None when it does not parse."""
    text = _TIMES_X.sub("*", expression.strip().rstrip(","))
    for sign, op in _OPS.items():
        text = text.replace(sign, op)
    text = re.sub(r"(\d+(?:\.\d+)?)\s*%", r"(\1 / 100)", text)
    if not re.search(r"\d\s*(?:\*\*|//|[-+*/%])\s*[\d(\[a-z]|\)\s*[-+*/]", text):
        return None
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    return text


def question_arithmetic(question: str) -> list[str]:
    """The arithmetic a question asks for outright (``What is 1234 × 5678?``)."""
    percent = _PERCENT_OF.match(question)
    if percent:
        return [f"{percent.group(2)} * {percent.group(1)} / 100"]
    asked = _ASKS_VALUE.match(question)
    if not asked:
        return []
    target = asked.group("expr").strip()
    length = _LENGTH.fullmatch(target)
    if length:
        return [length.group(0)]
    match = _EXPR.fullmatch(target)
    if not match:
        return []
    python = _python(match.group(0))
    return [python] if python else []


def _dates(text: str) -> list[str]:
    found: list[tuple[int, str]] = [(m.start(), m.group(1)) for m in _ISO.finditer(text)]
    for m in _WRITTEN.finditer(text):
        d1, month1, y1, month2, d2, y2 = m.groups()
        day, month, year = (d1, month1, y1) if d1 else (d2, month2, y2)
        number = _MONTHS.get((month or "").lower())
        if number is None:
            continue
        try:
            found.append((m.start(), dt.date(int(year), number, int(day)).isoformat()))
        except ValueError:
            continue
    return [d for _, d in sorted(found)]


def durations(question: str, evidence: Sequence[str], today: dt.date) -> list[str]:
    """The duration a question asks for, between two clock times or two dates."""
    out: list[str] = []
    if _ASKS_DURATION.search(question):
        times = _CLOCK.findall(question)
        if not times:
            seen: list[str] = []
            for text in evidence:
                seen += [t for t in _CLOCK.findall(text) if t not in seen]
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


def draft_arithmetic(draft: str) -> list[str]:
    """The arithmetic a draft writes out with its result, as expressions to recompute."""
    out: list[str] = []
    for match in _STATED.finditer(draft):
        parts: list[str] = []
        for number, percent, op in _TERM.findall(_UNIT_WORD.sub(" ", match.group(1))):
            if op:
                parts.append("*" if op in "xX" else _OPS.get(op, op))
            else:
                parts.append(f"({number} / 100)" if percent else number)
        joined = " ".join(parts)
        # Clock times and dates are the calculator's to read; anything else must parse.
        expression = joined if _TIMED.search(joined) else _python(joined)
        if expression and expression not in out:
            out.append(expression)
    return out


def spelled(question: str, evidence: Sequence[str], draft: str, today: dt.date) -> list[str]:
    """Every recomputation the question or the draft spells out, at most ``MAX_SPELLED``."""
    found: list[str] = []
    for expression in (
        *question_arithmetic(question),
        *durations(question, evidence, today),
        *draft_arithmetic(draft),
    ):
        if expression not in found:
            found.append(expression)
    return found[:MAX_SPELLED]
