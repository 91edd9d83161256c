"""A fault of a team document: where it is (a JSON pointer), a stable code, what is wrong;
and the error that refuses a team with its faults."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agents.errors import AgentError


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


class TeamInvalid(AgentError):
    """A team document was refused: ``faults`` names each fault at its place."""

    code = "team_invalid"
    hint = "fix each fault at the place its JSON pointer names, then apply the team again"

    def __init__(self, faults: list[TeamFault]) -> None:
        shown = "; ".join(f"{f.pointer or '/'}: {f.message}" for f in faults[:5])
        more = f" (+{len(faults) - 5} more)" if len(faults) > 5 else ""
        super().__init__(f"the team has {len(faults)} fault(s): {shown}{more}")
        self.faults = faults
