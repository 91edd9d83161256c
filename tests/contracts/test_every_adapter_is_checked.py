"""Every adapter of a port in the product runs its port's contract suite somewhere in the tests.

Read from the source (no import): an adapter is a public class, in the folder of its port's
adapters, that defines the port's telling method; it is checked when a test module that
subclasses the suite names it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TESTS = ROOT / "tests"


@dataclass(frozen=True)
class Port:
    """A port's suite, where its adapters live, and the method only its adapters define."""

    suite: str
    modules: tuple[str, ...]
    method: str


PORTS = (
    Port("LLMContract", ("agents/llm/*.py",), "stream"),
    Port("EmbedderContract", ("retrieval/embedders/*.py",), "embed_query"),
    Port("VectorStoreContract", ("retrieval/*.py",), "ensure_collection"),
)


def adapters(port: Port) -> set[str]:
    """The public classes of the port's modules that define its method (not the port)."""
    found: set[str] = set()
    for pattern in port.modules:
        for path in ROOT.glob(pattern):
            for node in ast.parse(path.read_text()).body:
                if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                    continue
                if any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases):
                    continue  # the port itself
                methods = {
                    n.name
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                if port.method in methods:
                    found.add(node.name)
    return found


def checked(port: Port) -> set[str]:
    """Every name used in a test module that subclasses the port's suite."""
    names: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        runs_suite = any(
            isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == port.suite for b in node.bases)
            for node in ast.walk(tree)
        )
        if runs_suite:
            names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return names


@pytest.mark.parametrize("port", PORTS, ids=lambda p: p.suite)
def test_every_adapter_of_a_port_runs_its_suite(port: Port) -> None:
    found = adapters(port)
    assert len(found) >= 2  # the scan still finds them
    assert found - checked(port) == set()


def test_the_scan_finds_the_adapters_we_know() -> None:
    llm, embedder, store = (adapters(p) for p in PORTS)
    assert {"ScriptedLLM", "OpenAICompatLLM", "LocalLLM"} <= llm
    assert {"HashingEmbedder", "MiniLMEmbedder", "OpenAIEmbedder"} <= embedder
    assert {"EdgeStore", "QdrantStore"} <= store
