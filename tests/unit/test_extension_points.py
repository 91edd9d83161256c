"""Every extension point docs/upgrades.md names imports by that path (a move is caught),
and the names that moved still import from their old path, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

UPGRADES = Path(__file__).parents[2] / "docs" / "upgrades.md"


def documented_paths() -> list[str]:
    """The dotted paths in the table of docs/upgrades.md's "Extension points" section."""
    text = UPGRADES.read_text()
    section = text.split("## Extension points", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [p for row in rows for p in re.findall(r"`([a-z_]+(?:\.[A-Za-z_]+)+)`", row)]


def test_the_table_names_every_kind_of_extension_point() -> None:
    paths = documented_paths()
    assert len(paths) >= 30
    for root in ("gateway.spec.", "gateway.ports.", "agents.llm.ports.", "retrieval.ports."):
        assert any(p.startswith(root) for p in paths), root
    assert "agentbus_client.AgentbusClient" in paths and "bus.settings.BusSettings" in paths


@pytest.mark.parametrize("path", documented_paths())
def test_each_documented_extension_point_imports_by_its_path(path: str) -> None:
    module, _, name = path.rpartition(".")
    found = getattr(importlib.import_module(module), name)  # no warning: warnings are errors
    if inspect.isclass(found) or inspect.isfunction(found):
        assert found.__name__ == name  # the thing itself, not an alias of another


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("gateway.registry.ToolSpec", "gateway.spec.ToolSpec"),
        ("gateway.registry.Risk", "gateway.spec.Risk"),
        ("api.client.AgentbusClient", "agentbus_client.AgentbusClient"),
        ("api.client.RetryRules", "agentbus_client.RetryRules"),
    ],
)
def test_a_moved_name_still_imports_from_its_old_path_with_a_warning(old: str, new: str) -> None:
    old_module, _, name = old.rpartition(".")
    new_module = new.rpartition(".")[0]
    with pytest.warns(DeprecationWarning, match=f"{re.escape(old)} moved to {new_module}"):
        found = getattr(importlib.import_module(old_module), name)
    assert found is getattr(importlib.import_module(new_module), name)
