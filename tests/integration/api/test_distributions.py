"""What each distribution ships: the runtime wheel holds no benchmark, evaluation or data
set of theirs; those ship in agentbus-bench and agentbus-evals, whose entry points give
``agentbus bench`` and ``agentbus eval`` back to the command line.

Each wheel is built as a user's install builds it (uv, offline: ``make install`` left the
build backend in uv's cache).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.uv_runs import REPO, run_ok, uv


def _wheel(package: str, out: Path) -> zipfile.ZipFile:
    run_ok(uv(), "build", "--offline", "--quiet", "--wheel", "--package", package, "--out-dir", out)
    (built,) = out.glob(f"{package.replace('-', '_')}-*.whl")
    return zipfile.ZipFile(built)


def _entry_points(wheel: zipfile.ZipFile) -> str:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    return wheel.read(name).decode()


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wheels")


def test_the_runtime_wheel_holds_no_benchmark_or_evaluation(out: Path) -> None:
    names = _wheel("agentbus", out).namelist()
    assert "api/cli/main.py" in names and "agents/checks/judge_trust.py" in names
    beside = [
        n
        for n in names
        if n.startswith(("api/bench/", "api/evals/", "agentbus_bench/", "agentbus_evals/"))
        or n.endswith("_eval.json")
    ]
    assert beside == []


def test_the_benchmarks_ship_with_their_command(out: Path) -> None:
    wheel = _wheel("agentbus-bench", out)
    assert "agentbus_bench/turn.py" in wheel.namelist()
    assert "[agentbus.commands]\nbench = agentbus_bench.command:app" in _entry_points(wheel)


def test_the_evaluations_ship_with_their_command_and_data(out: Path) -> None:
    wheel = _wheel("agentbus-evals", out)
    names = wheel.namelist()
    data = {p.name for p in (REPO / "api" / "evals" / "src" / "agentbus_evals" / "data").iterdir()}
    assert {f"agentbus_evals/data/{n}" for n in data} <= set(names)
    assert "agentbus_evals/retrieval/questions.json" in names
    assert "[agentbus.commands]\neval = agentbus_evals.command:app" in _entry_points(wheel)
