"""A team document from YAML or JSON text (JSON is YAML), every shape fault named."""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import ValidationError

from agents.teams.document import TeamDocument
from agents.teams.faults import TeamFault, TeamInvalid, from_loc


class _Loader(yaml.SafeLoader):
    """YAML 1.2's booleans: ``on``, ``off``, ``yes`` and ``no`` stay words (an edge's
    ``on:`` is a key, not ``True``)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(  # pyright: ignore[reportUnknownMemberType]
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def parse_team(text: str) -> TeamDocument:
    """The document ``text`` holds.

    Raises:
        TeamInvalid: it is not YAML, not a mapping, or not a team's shape (each fault with
            its JSON pointer).
    """
    try:
        data: Any = yaml.load(text, Loader=_Loader)  # a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise TeamInvalid(
            [TeamFault(pointer="", code="not_yaml", message=f"not YAML or JSON{where}")]
        ) from e
    return team_from_data(data)


def team_from_data(data: Any) -> TeamDocument:
    """The document a decoded mapping holds (see :func:`parse_team`)."""
    if not isinstance(data, dict):
        raise TeamInvalid(
            [TeamFault(pointer="", code="not_a_mapping", message="a team is a mapping")]
        )
    try:
        return TeamDocument.model_validate(data)
    except ValidationError as e:
        faults = [
            TeamFault(pointer=from_loc(err["loc"]), code=err["type"], message=err["msg"])
            for err in e.errors(include_url=False)
        ]
        raise TeamInvalid(faults) from e
