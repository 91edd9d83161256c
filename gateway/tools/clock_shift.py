"""A clock time plus or minus a duration written with its unit: the calculator's arrival time.

``20:00 + 12 h`` is 08:00 the next day, ``22:10 + 3 h 20 min`` 01:30 the next day,
``09:00 - 45 min`` 08:15. The duration must say its unit (``h``, ``hours``, ``min``,
``minutes``): ``20:00 + 12`` stays refused, since 12 could be hours, minutes or nothing at
all, and a sum read as plain numbers (1212) is the trap a small model falls into. The
result is a clock time with how many days it moved (``+1 day``), never a count of minutes.
"""

from __future__ import annotations

import re
from typing import Any

from bus import written_times

MINUTES_A_DAY = 24 * 60
_SIGN = re.compile(r"\s*([-+])\s*")


def _term(text: str, at: int) -> tuple[float, int] | None:
    """(signed minutes, end) of ``+ 12 h`` / ``- 45 min`` at ``at``; None if it is not one."""
    sign = _SIGN.match(text, at)
    if sign is None:
        return None
    hours = written_times.DURATION.match(text, sign.end())
    if hours is not None:
        minutes, end = written_times.duration_minutes(hours), hours.end()
    elif (alone := written_times.MINUTES.match(text, sign.end())) is not None:
        minutes, end = float(alone[1]), alone.end()
    else:
        return None
    return (minutes if sign[1] == "+" else -minutes), end


def shifted(expression: str) -> dict[str, Any] | None:
    """The calculator's answer to a clock time plus or minus durations with units, or None
    when the expression is not that form (the calculator reads it as arithmetic)."""
    text = expression.strip()
    clock = written_times.CLOCK.match(text)
    if clock is None:
        return None
    start = written_times.clock_minutes(clock)
    if start is None:
        return None
    total, at = start, clock.end()
    while at < len(text):
        term = _term(text, at)
        if term is None:
            return None
        total, at = total + term[0], term[1]
    if at == clock.end():
        return None  # a lone clock time: the calculator refuses it
    days, minute = divmod(total, MINUTES_A_DAY)
    days = int(days)
    hours, rest = divmod(minute, 60)
    rest_text = f"{int(rest):02d}" if rest == int(rest) else f"{rest:05.2f}"
    moved = "" if days == 0 else f" ({days:+d} day{'s' if abs(days) != 1 else ''})"
    result = int(minute) if minute == int(minute) else minute
    return {
        "expression": expression,
        "result": result,
        "unit": "time",
        "text": f"{int(hours):02d}:{rest_text}{moved}",
        "days": days,
    }
