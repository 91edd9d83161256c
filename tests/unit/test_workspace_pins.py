"""The distributions of this repository pin one another at the versions they declare: a
server that pins one client version while the client says another installs neither."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]

#: A requirement on one of the workspace's distributions, pinned exactly.
PIN = re.compile(r"^\s*(agentbus(?:-[a-z]+)?)\s*==\s*([^\s;,]+)")


def _projects() -> dict[str, dict[str, Any]]:
    """Each workspace distribution's ``[project]`` table, by name (the root and its members)."""
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = [ROOT, *(ROOT / m for m in root["tool"]["uv"]["workspace"]["members"])]
    tables = [tomllib.loads((f / "pyproject.toml").read_text())["project"] for f in folders]
    return {t["name"]: t for t in tables}


def _requirements(project: dict[str, Any]) -> list[str]:
    """Its dependencies and every extra's."""
    found: list[str] = list(project.get("dependencies", []))
    for listed in project.get("optional-dependencies", {}).values():
        found += listed
    return found


def test_each_pin_on_a_workspace_distribution_is_its_declared_version() -> None:
    projects = _projects()
    versions = {name: str(p["version"]) for name, p in projects.items()}
    pins = [
        (name, m.group(1), m.group(2))
        for name, project in projects.items()
        for requirement in _requirements(project)
        if (m := PIN.match(requirement))
    ]

    assert {"agentbus", "agentbus-contracts", "agentbus-client"} <= set(versions)
    assert len(pins) >= 6  # the server's, the client's, the bench's and the evals' pins
    assert [(by, on, v) for by, on, v in pins if versions.get(on) != v] == []
