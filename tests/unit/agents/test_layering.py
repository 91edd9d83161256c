"""Every role's handler lives in the roles room, and the room holds nothing else.

That no role imports another, and that nothing else in `agents` imports a role, import-linter
checks (the contracts on `agents.roles` in pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import agents

AGENTS = Path(agents.__file__).parent
ROLES = AGENTS / "roles"


def _holds_a_handler(path: Path) -> bool:
    """Whether a module defines a handler factory: a top-level ``make_*`` returning ``Handler``."""
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("make_")
        and node.returns is not None
        and ast.unparse(node.returns) == "Handler"
        for node in ast.parse(path.read_text()).body
    )


def test_every_handler_module_is_a_role_in_the_roles_room() -> None:
    handlers = {str(p.relative_to(AGENTS)) for p in AGENTS.rglob("*.py") if _holds_a_handler(p)}
    roles = {str(p.relative_to(AGENTS)) for p in ROLES.glob("*.py") if p.name != "__init__.py"}
    assert handlers == roles


def test_the_roles_room_holds_every_bus_role() -> None:
    assert {p.stem for p in ROLES.glob("*.py")} - {"__init__"} == {
        "intake",
        "planner",
        "researcher",
        "critic",
        "verifier",
        "finalizer",
        "gather",
        "remember",
        "team_agent",
    }


def test_a_handler_outside_the_room_is_seen(tmp_path: Path) -> None:
    stray = tmp_path / "stray.py"
    stray.write_text("def make_stray(deps: AgentDeps) -> Handler:\n    ...\n")
    assert _holds_a_handler(stray)
