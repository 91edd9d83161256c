"""Role modules import the graph and the shared modules, never another role."""

from __future__ import annotations

import ast
from pathlib import Path

import agents

AGENTS = Path(agents.__file__).parent
#: Modules that hold a role's handler (a ``make_*`` factory of a bus role).
ROLES = {
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


def _imports(path: Path) -> set[str]:
    """Every ``agents.*`` module a file imports, as module names under ``agents``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from agents import critic` imports a module; `from agents.x import y` module x.
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "agents" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_the_role_list_covers_every_handler_module() -> None:
    factories = {
        path.stem
        for path in AGENTS.glob("*.py")
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("make_")
            and node.returns is not None
            and ast.unparse(node.returns) == "Handler"
            for node in ast.parse(path.read_text()).body
        )
    }
    assert factories == ROLES


def test_no_role_module_imports_another_role() -> None:
    offenders = {role: sorted((_imports(AGENTS / f"{role}.py") & ROLES) - {role}) for role in ROLES}
    assert {role: peers for role, peers in offenders.items() if peers} == {}


def test_the_scan_sees_a_peer_import(tmp_path: Path) -> None:
    peer = tmp_path / "x.py"
    peer.write_text("from agents.researcher import AGENT\nfrom agents import critic, graph\n")
    assert _imports(peer) >= {"researcher", "critic", "graph"}
