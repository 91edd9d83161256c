"""pyright resolves every import as Python does: no execution environment's root shadows one.

Each ``[[tool.pyright.executionEnvironments]]`` root is also the first place pyright looks
for an absolute import made by a file under it. Under the root ``api``, ``import http``
would be checked against ``api/http`` instead of the standard library, and under
``gateway`` ``import mcp`` against ``gateway/mcp``: the types would be wrong without a word.
"""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyright() -> dict[str, object]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return doc["tool"]["pyright"]


def _roots() -> list[Path]:
    environments = _pyright().get("executionEnvironments", [])
    assert isinstance(environments, list)
    return [ROOT / str(env["root"]) for env in environments if isinstance(env, dict)]


def _checked_files() -> list[Path]:
    include = _pyright()["include"]
    assert isinstance(include, list)
    files = {path for top in include for path in (ROOT / str(top)).rglob("*.py")}
    return sorted(p for p in files if ".venv" not in p.parts)


def _absolute_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    names.discard("__future__")
    return names


def _python_location(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(spec.origin).resolve() if spec.origin else None


def _shadowed(root: Path, name: str) -> Path | None:
    # What pyright finds for `name` at the root, when Python would find something else.
    for candidate in (root / name, root / f"{name}.py"):
        if candidate.exists() and candidate.resolve() != _python_location(name):
            return candidate
    return None


def test_the_rule_sees_a_shadowing_root() -> None:
    assert _shadowed(ROOT / "api", "http") == ROOT / "api" / "http"
    assert _shadowed(ROOT / "gateway", "mcp") == ROOT / "gateway" / "mcp"
    assert _shadowed(ROOT / "api" / "client" / "src", "agentbus_client") is None


def test_no_execution_root_shadows_an_import_of_its_files() -> None:
    roots = _roots()
    assert roots, "pyproject.toml declares no pyright execution environments"
    wrong: list[str] = []
    for path in _checked_files():
        # pyright gives a file the first environment whose root holds it.
        root = next((r for r in roots if path.is_relative_to(r)), None)
        if root is None:
            continue
        for name in sorted(_absolute_imports(path)):
            shadow = _shadowed(root, name)
            if shadow is not None:
                wrong.append(
                    f"{path.relative_to(ROOT)}: `{name}` is {shadow.relative_to(ROOT)} to pyright"
                )
    assert not wrong, "\n".join(wrong)
