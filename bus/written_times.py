"""Clock times, dates and durations as text writes them: the one definition every package
reads them with (the calculator that computes with them, the judges that compare them).

Dates written in words ("10 March 2026", "March 10, 2026", "10 de março de 2026", "le 3
avril 2026") are read by dateparser, in the languages of :data:`LANGUAGES`: a run of words
between a day and a year is a date only when dateparser reads its word as a month.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

#: A clock time: ``14:05``, ``9:30:15``, ``2:30 pm`` (hours, minutes, seconds, half of day).
CLOCK = re.compile(
    r"(?<![\d.:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])(\s*[ap]\.?m\.?(?![a-z]))?",
    re.IGNORECASE,
)
#: An ISO date: ``2026-03-10`` (year, month, day).
ISO_DATE = re.compile(r"(?<![\d.])(\d{4})-(\d{2})-(\d{2})(?![\d:])")
#: A duration in hours, with minutes or not: ``3 hours 45 minutes``, ``2.5 h``, ``1 hr``.
DURATION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:hours?|hrs?|h)\b\.?(?:\s*(?:and|,)?\s*(\d+)\s*(?:minutes?|mins?|m)\b)?",
    re.IGNORECASE,
)
#: A duration in minutes alone: ``45 minutes``, ``90 min``.
MINUTES = re.compile(r"(?<![\d:.])(\d+(?:\.\d+)?)\s*(?:minutes?|mins?)\b", re.IGNORECASE)
#: The languages a date written in words is read in.
LANGUAGES = ("en", "pt", "es", "fr", "de", "it", "nl")
# A day, a word (the month, checked by dateparser) and a year, in either order.
_WRITTEN_DATE = re.compile(
    r"\b\d{1,2}(?:st|nd|rd|th|º|er|\.)?\s+(?:(?:de|of)\s+)?[^\W\d_]{3,}\.?,?\s+(?:de\s+)?\d{4}\b"
    r"|\b[^\W\d_]{3,}\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b"
)


def clock_minutes(match: re.Match[str]) -> float | None:
    """Minutes since midnight of a :data:`CLOCK` match; None when it is no clock time
    (``25:00``, ``13:00 pm``)."""
    hours, minutes, seconds = int(match[1]), int(match[2]), int(match[3] or 0)
    half = (match[4] or "").strip().lower().replace(".", "")
    if (half and not 1 <= hours <= 12) or (not half and hours > 24) or minutes > 59 or seconds > 59:
        return None
    if half:
        hours = hours % 12 + (12 if half == "pm" else 0)
    return hours * 60 + minutes + seconds / 60


def duration_minutes(match: re.Match[str]) -> float:
    """Minutes of a :data:`DURATION` match."""
    return float(match[1]) * 60 + (int(match[2]) if match[2] else 0)


def iso_date(match: re.Match[str]) -> dt.date | None:
    """The date of an :data:`ISO_DATE` match; None when it names no day (``2026-02-30``)."""
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def written_dates(text: str) -> Iterator[tuple[int, dt.date]]:
    """(where, date) of each date the text writes in words."""
    import dateparser  # loads its language data: only a text with a date candidate pays

    for match in _WRITTEN_DATE.finditer(text):
        parsed = dateparser.parse(
            match.group(0).rstrip(".,"),
            languages=list(LANGUAGES),
            settings={"STRICT_PARSING": True, "RETURN_AS_TIMEZONE_AWARE": False},
        )
        if parsed is not None:
            yield match.start(), parsed.date()


def dates_in_order(text: str) -> list[dt.date]:
    """The dates a text states (ISO or in words), in the order it states them."""
    found = [(m.start(), d) for m in ISO_DATE.finditer(text) if (d := iso_date(m)) is not None]
    found += list(written_dates(text))
    return [d for _, d in sorted(found, key=lambda p: p[0])]


def dates(text: str) -> set[dt.date]:
    """The dates a text states (ISO or in words)."""
    return set(dates_in_order(text))
