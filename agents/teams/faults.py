"""A fault of a team document: where it is (a JSON pointer), a stable code, what is wrong."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict


class TeamFault(BaseModel):
    """One reason a team cannot be stored, at its place in the document (RFC 6901)."""

    model_config = ConfigDict(frozen=True)

    pointer: str
    code: str
    message: str


def pointer(*parts: str | int) -> str:
    """The JSON pointer of a place in the document (``pointer("edges", 3, "to")``)."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "".join(f"/{p}" for p in escaped)


def from_loc(loc: Sequence[str | int]) -> str:
    """The pointer of a pydantic error location."""
    return pointer(*loc)
