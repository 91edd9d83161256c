"""What ships never loads the tests, not even by name: an import-linter contract sees
``import`` statements, this reads the source for loads by a string (``importlib``,
``__import__``, ``runpy``, a spec from a file path)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The folders whose code ships (each distribution's package), tests and benchmarks' data aside.
PRODUCT = ("bus", "retrieval", "gateway", "agents", "api", "migrations")
SHIPPED_TESTS = ("api/client/tests", "bus/contracts/tests")
#: Calls that load a module or a file named by a string.
LOADERS = {
    "import_module",
    "__import__",
    "find_spec",
    "run_module",
    "run_path",
    "spec_from_file_location",
    "SourceFileLoader",
}


def _names_a_test(node: ast.expr) -> bool:
    """A string (or an f-string's leading text) that names the tests package or folder."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    value = node.value.removeprefix("./")
    return value == "tests" or value.startswith(("tests.", "tests/"))


def _loads_of_tests(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that load something of the tests by name."""
    found: list[int] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in LOADERS and any(_names_a_test(arg) for arg in node.args):
            found.append(node.lineno)
    return found


def _product_files() -> list[Path]:
    files = [path for folder in PRODUCT for path in (ROOT / folder).rglob("*.py")]
    shipped_tests = [ROOT / folder for folder in SHIPPED_TESTS]
    return [f for f in files if not any(f.is_relative_to(t) for t in shipped_tests)]


def test_the_rule_sees_a_load_by_name() -> None:
    code = (
        "import importlib, runpy\n"
        "importlib.import_module('tests.bench.page')\n"
        "runpy.run_path(f'tests/{name}.py')\n"
        "importlib.import_module('agentbus_bench.page')\n"
    )
    assert _loads_of_tests(ast.parse(code)) == [2, 3]


def test_no_product_module_loads_the_tests_by_name() -> None:
    files = _product_files()
    assert (
        len(files) > 100
        and ROOT / "api" / "bench" / "src" / "agentbus_bench" / "command.py" in files
    )

    loads = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in files
        for line in _loads_of_tests(ast.parse(path.read_text(), str(path)))
    }

    assert loads == set()
