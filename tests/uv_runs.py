"""The project's uv, and a command run from the tests that must succeed: what the tests
that build or install the distributions (the client alone, the wheels) share."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def uv() -> str:
    """``make install``'s uv (``.tools/bin``), else one on PATH."""
    found = REPO / ".tools" / "bin" / "uv"
    command = str(found) if found.exists() else shutil.which("uv")
    if command is None:
        pytest.fail("uv is needed (make install puts it in .tools/bin)")
    return command


def run_ok(*args: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None) -> str:
    """Run ``args`` (no downloaded Python, outside this venv); its stdout, or fail."""
    environ = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", **(env or {})}
    environ.pop("VIRTUAL_ENV", None)
    environ.pop("PYTEST_ADDOPTS", None)  # the outer run's options (e.g. --durations) are not its
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args[:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
