"""current_time: the current date and time in an IANA timezone (UTC by default)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.errors import InvalidArgument
from gateway.ports import EgressClient
from gateway.spec import Risk, ToolSpec


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as e:
        # ValueError: a path-like key such as "../etc/passwd", which zoneinfo refuses.
        raise InvalidArgument(
            f"unknown timezone {name!r}; use an IANA name such as 'UTC', 'Europe/Paris' "
            "or 'America/New_York'"
        ) from e


class CurrentTime:
    """Tells the current time; the clock is injectable so tests are deterministic.

    Args:
        clock: returns an aware datetime; the real UTC clock by default.
    """

    spec = ToolSpec(
        name="current_time",
        description=(
            "Get the current date and time. Optionally pass an IANA timezone name "
            "(e.g. 'Europe/Paris'); the default is UTC."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 64,
                    "description": "IANA timezone name, e.g. 'America/New_York'. Default UTC.",
                }
            },
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "timezone": {"type": "string"},
                "iso": {"type": "string"},
                "date": {"type": "string"},
                "time": {"type": "string"},
                "weekday": {"type": "string"},
                "utc_offset": {"type": "string"},
                "unix": {"type": "number"},
            },
            "required": ["timezone", "iso", "date", "time", "weekday", "utc_offset", "unix"],
            "additionalProperties": False,
        },
        risk=Risk.LOW,
        timeout_s=2.0,
        max_output_bytes=1_024,
    )

    def __init__(self, clock: Callable[[], datetime] = _utc_now) -> None:
        self._clock = clock

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """The current time in ``args.get("timezone", "UTC")``."""
        name = args.get("timezone", "UTC")
        now = self._clock().astimezone(_zone(name))
        offset = now.strftime("%z")
        return {
            "timezone": name,
            "iso": now.isoformat(timespec="seconds"),
            "date": now.date().isoformat(),
            "time": now.strftime("%H:%M:%S"),
            "weekday": now.strftime("%A"),
            "utc_offset": f"{offset[:3]}:{offset[3:]}",
            "unix": now.timestamp(),
        }
