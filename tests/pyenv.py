"""Python packages a test runs outside this project's venv, installed by the tests.

A client whose import name is one of this project's (openai-agents is imported as
``agents``) cannot share its venv. A folder with a ``requirements.txt`` of exact pins is
installed with pip once into a venv cached under a hash of the file; a re-run installs
nothing (as ``tests/npm.py`` does for npm packages).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentbus" / "venvs"


def installed(project: Path) -> Path:
    """The python of a venv with ``project``'s requirements, made on first use (blocking)."""
    requirements = project / "requirements.txt"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    target = CACHE / f"{project.name}-{digest}"
    python = target / "bin" / "python"
    if not python.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{project.name}-", dir=CACHE))
        try:
            # The venv is made where it stays (its scripts name their own path).
            shutil.rmtree(staging)
            subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True, timeout=120)
            pip = [str(staging / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            subprocess.run([*pip, "-r", str(requirements)], check=True, timeout=600)
            if not target.exists():  # else a concurrent run got there first: use its copy
                staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return python
