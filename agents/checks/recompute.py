"""The fact-check's recompute pass: the draft's figures re-derived with tools, then compared.

(A question about now is checked the same way, with current_time's result.)

When the draft states a number, a date or a duration, the last judge's verify-only pass
asks the model, under :data:`PLAN_SCHEMA`, how to recompute each figure from the question:
one calculator expression per figure (clock times and dates included, see
`gateway.tools.calculator`). The calls go to the gateway like any tool call; their results
are compared here with the figures the draft states. A figure the tools recompute to a
value the draft does not state is a mismatch: the judge's verdict becomes a revision, with
the recomputed value in the reasons the researcher reads on its retry. A recomputation
that fails (a bad expression) is reported, never counted as a mismatch.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from agents.llm.json_reply import json_object
from agents.understanding.language.numbers import CITATION
from bus import written_times
from bus.json_values import is_array, is_object
from bus.run_state import ChatMessage, Recompute

MAX_CHECKS = 2
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "checks": {
            "type": "array",
            "maxItems": MAX_CHECKS,
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string", "maxLength": 80},
                    "expression": {"type": "string", "maxLength": 200},
                },
                "required": ["claim", "expression"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["checks"],
    "additionalProperties": False,
}
_DIGIT = re.compile(r"\d")
#: A citation marker (``[2]``, ``[1, 3]``): its numbers name passages, never figures.
# A figure as written: an ISO date, a clock time, a number (thousands separators dropped).
_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|\d+(?::\d+)+|\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s*%)?")
_FACTORS = {"1", "2", "7", "10", "12", "24", "60", "100", "365", "1000", "3600"}


def states_figure(draft: str) -> bool:
    """Whether the draft states a number, a date or a duration (anything with a digit)."""
    return bool(_DIGIT.search(draft))


def from_sources(expression: str, sources: str) -> bool:
    """Whether every figure of ``expression`` comes from ``sources`` (the question and the
    evidence): a number the sources hold (a percentage also as a fraction, 0.15 for 15 %),
    or a common conversion factor. An expression built from the draft's own figures would
    only repeat the draft's arithmetic, so it is no recomputation."""
    given = set(_TOKEN.findall(_THOUSANDS.sub("", sources)))
    for token in _TOKEN.findall(_THOUSANDS.sub("", expression)):
        if token in given or token in _FACTORS:
            continue
        try:
            if _plain(float(token) * 100) in given:
                continue
        except ValueError:
            pass
        return False
    return True


_DATE_OR_TIME = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
_OPERATION = re.compile(r"[-+*/%]|[a-z]\s*\(")


def computes(expression: str) -> bool:
    """Whether an expression computes anything: a bare figure (``6545``, a date) repeats
    itself, and its "result" would only make the draft's figure look computed."""
    return bool(_OPERATION.search(_DATE_OR_TIME.sub("D", expression)))


def _plain(value: float) -> str:
    return str(int(value)) if abs(value - round(value)) < 1e-9 else str(value)


def computes_a_claim(expression: str, draft: str) -> bool:
    """Whether the draft states a figure the expression does not take as input: a draft
    whose only figures are the expression's inputs (``open from 11:30 to 14:30``, checked
    with ``11:30 - 14:30``) claims no result for it to refute."""
    inputs = set(_TOKEN.findall(_THOUSANDS.sub("", expression)))
    stated = set(_TOKEN.findall(_THOUSANDS.sub("", CITATION.sub(" ", draft))))
    return bool(stated - inputs)


def plan_calls(
    reply: str, prefix: str, sources: str | None = None, draft: str | None = None
) -> list[Recompute]:
    """The recompute plan's calculator calls, under our own ids ``{prefix}r{i}``.

    Tolerant: a JSON object anywhere in the reply; an expression written with its result
    (``18:20 - 15:45 = 35``) keeps only the part before ``=``. With ``sources`` (question
    and evidence), an expression whose figures do not come from them is dropped; with the
    ``draft``, one whose inputs are all the figures the draft states (`computes_a_claim`).
    """
    doc = json_object(reply)
    checks = doc.get("checks") if doc else None
    if not is_array(checks):
        return []
    out: list[Recompute] = []
    for item in checks[:MAX_CHECKS]:
        if not is_object(item):
            continue
        expression = str(item.get("expression", "")).split("=")[0].strip()[:500]
        if not expression or not _DIGIT.search(expression) or not computes(expression):
            continue
        if sources is not None and not from_sources(expression, sources):
            continue
        if draft is not None and not computes_a_claim(expression, draft):
            continue
        out.append(
            Recompute(
                call_id=f"{prefix}r{len(out)}",
                tool="calculator",
                arguments={"expression": expression},
                claim=str(item.get("claim", ""))[:200],
            )
        )
    return out


def figures(text: str) -> list[float]:
    """Every value the text states: numbers (a percentage also as a fraction), clock times
    and durations in minutes (``3 hours and 45 minutes`` and ``3:45`` are also 225)."""
    found: list[float] = []
    for clock in written_times.CLOCK.finditer(text):
        minutes = written_times.clock_minutes(clock)
        if minutes is not None:
            found.append(minutes)
    found += [written_times.duration_minutes(m) for m in written_times.DURATION.finditer(text)]
    plain = written_times.CLOCK.sub(" ", text)
    for match in _NUMBER.finditer(plain):
        value = float(match.group(0).rstrip("% ").replace(",", ""))
        found.append(value)
        if match.group(2):
            found.append(value / 100)
    return found


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and not text.endswith(".0") else 0


def _states(value: float, stated: Iterable[float]) -> bool:
    # A stated figure matches when it is the value rounded to the figure's own precision.
    for f in stated:
        tolerance = max(0.5 * 10 ** -_decimals(f), 1e-9 * abs(value))
        if math.isclose(f, value, abs_tol=tolerance + 1e-12):
            return True
    return False


def dates(text: str) -> set[dt.date]:
    """The dates a text states (ISO, or in words: `bus.written_times`)."""
    return written_times.dates(text)


def _results(thread: Sequence[ChatMessage]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for m in thread:
        if m.role == "tool" and m.tool_call_id:
            try:
                body = json.loads(m.content)
            except ValueError:
                continue
            if is_object(body):
                out[m.tool_call_id] = body
    return out


UNORDERED = (
    "the draft states this with the operands of its subtraction the other way round; "
    "which order the question means is not established, so it is not held against the draft"
)
_MINUS = re.compile(r"\S\s*-\s*\S")
MINUTES_A_DAY = 1440


def backwards(expression: str, value: float, unit: object, stated: Iterable[float]) -> bool:
    """Whether the result may be the draft's figure from a subtraction written the other
    way round: the expression subtracts, and the draft states the result with the opposite
    sign (``3 * 4.75 - 20`` is -5.75 where the draft says 5.75 of change), or, between two
    clock times, the rest of the day (``14:05 - 17:50`` is 1215 minutes, 1440 - 225)."""
    if not _MINUS.search(_DATE_OR_TIME.sub("D", expression)):
        return False
    other = [-value] + ([MINUTES_A_DAY - value] if unit == "minutes" else [])
    return any(_states(v, stated) for v in other)


def _outcomes(
    checks: Sequence[Recompute],
    thread: Sequence[ChatMessage],
    draft: str,
    ordered: Iterable[str] = (),
) -> list[tuple[str, str | None]]:
    """Per check: (finding line, mismatch). A line starting ``confirmed`` is a recompute the
    draft states; a mismatch is one it does not; neither is a check that could not run or
    could not tell (:func:`backwards`, unless the question fixes the expression's order:
    ``ordered``, its own arithmetic and the durations it asks for, without spaces)."""
    if not checks:  # nothing to compare: the draft's figures and dates are not read
        return []
    fixed = {"".join(e.split()) for e in ordered}
    results = _results(thread)
    draft = CITATION.sub(" ", draft)
    stated, stated_dates = figures(draft), dates(draft)
    out: list[tuple[str, str | None]] = []
    for check in checks:
        expression = str(check.arguments.get("expression", ""))
        body = results.get(check.call_id) or {}
        result = body.get("result")
        if body.get("status") != "ok" or not is_object(result):
            why = body.get("message") or body.get("code") or "no result"
            out.append((f"could not recompute {expression or check.tool!r}: {why}", None))
            continue
        if check.tool == "current_time":
            found = _clock_check(check, result, draft, stated_dates)
            confirmed = found.startswith("confirmed")
            out.append((found, None) if confirmed else (f"REFUTED: {found}", found))
            continue
        value = result.get("result")
        unit = result.get("unit")
        shown = str(result.get("text") or value)
        if unit == "minutes":
            shown = f"{value} minutes ({shown})"
        if unit == "date":
            ok = dt.date.fromisoformat(shown) in stated_dates
        else:
            ok = isinstance(value, int | float) and _states(float(value), stated)
        said = f"; the draft says {check.claim}" if check.claim else ""
        if ok:
            out.append((f"confirmed with the calculator: {expression} = {shown}", None))
        elif (
            isinstance(value, int | float)
            and "".join(expression.split()) not in fixed
            and backwards(expression, float(value), unit, stated)
        ):
            out.append((f"could not tell from {expression} = {shown}: {UNORDERED}", None))
        else:
            mismatch = (
                f"the fact-check recomputed {expression} with the calculator: {shown}{said}"
                f" (the draft does not state {shown}); answer with the recomputed value"
            )
            out.append((f"REFUTED: {expression} = {shown}{said}", mismatch))
    return out


def compare(
    checks: Sequence[Recompute],
    thread: Sequence[ChatMessage],
    draft: str,
    ordered: Iterable[str] = (),
) -> tuple[str, list[str]]:
    """(findings, mismatches): each recomputed figure confirmed, refuted, not recomputed or
    not telling (a subtraction that may be written backwards: neither for nor against).

    ``thread`` holds the gateway's results as tool messages (`agents.state.tool_message`);
    ``ordered``: the expressions whose order the question fixes.
    """
    outcomes = _outcomes(checks, thread, draft, ordered)
    lines = [line for line, _ in outcomes]
    return "\n".join(lines), [m for _, m in outcomes if m is not None]


def confirmed(checks: Sequence[Recompute], thread: Sequence[ChatMessage], draft: str) -> list[str]:
    """What the tools recomputed and the draft states, one line per check, when every check
    ran and matched; empty when there was none, or any was refuted or could not run.

    This is what lets a run end ``verified: yes`` without trusting a model's approval
    (`agents.checks.verified`): the draft's figures, recomputed through the gateway, matched.
    """
    outcomes = _outcomes(checks, thread, draft)
    if not outcomes or any(not line.startswith("confirmed") for line, _ in outcomes):
        return []
    return [line for line, _ in outcomes]


def first_unconfirmed(
    checks: Sequence[Recompute], thread: Sequence[ChatMessage], draft: str
) -> str | None:
    """The first check that kept :func:`confirmed` empty (refuted, could not run, could not
    tell), as its finding line; None when there was no check or every one matched."""
    lines = (line for line, _ in _outcomes(checks, thread, draft))
    return next((line for line in lines if not line.startswith("confirmed")), None)


_TIME_STATED = re.compile(
    r"(?<![\d:])(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*([ap])\.?\s?m\b\.?|(?<![\d:])(\d{1,2}):(\d{2})(?![\d])",
    re.IGNORECASE,
)


def _times(text: str) -> set[int]:
    """Clock times a text states, as minutes since midnight (``11 PM`` and ``23:00``: 1380)."""
    out: set[int] = set()
    for h12, m12, half, h24, m24 in _TIME_STATED.findall(text):
        if half:
            hour = int(h12) % 12 + (12 if half.lower() == "p" else 0)
            out.add(hour * 60 + int(m12 or 0))
        else:
            out.add(int(h24) * 60 + int(m24))
    return out


def _clock_check(
    check: Recompute, out: dict[str, Any], draft: str, stated_dates: set[dt.date]
) -> str:
    """A current_time result against the part of it the draft states: a finding line that
    starts with "confirmed", or a mismatch with the value current_time gave."""
    where = str(out.get("timezone") or "UTC")
    day = dt.date.fromisoformat(str(out.get("date")))
    hour, minute = (int(x) for x in str(out.get("time", "00:00")).split(":")[:2])
    weekday = str(out.get("weekday", ""))
    asks = check.asks or "date"
    said = {
        "date": (day in stated_dates, day.isoformat()),
        "time": (
            any(abs(t - (hour * 60 + minute)) <= 1 for t in _times(draft)),
            f"{hour:02d}:{minute:02d}",
        ),
        "weekday": (weekday.lower() in draft.lower(), weekday),
        "year": (str(day.year) in draft, str(day.year)),
        "month": (
            calendar.month_name[day.month].lower() in draft.lower(),
            calendar.month_name[day.month],
        ),
    }
    ok, value = said[asks]
    if ok:
        return f"confirmed with current_time ({where}): the {asks} is {value}"
    return (
        f"the fact-check asked current_time for {where}: the {asks} there is {value} (the "
        f"draft does not state {value}); answer with that {asks}"
    )
