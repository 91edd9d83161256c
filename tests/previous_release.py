"""The previous release, built from git and the uv cache, for the rolling-upgrade test.

Its sources are the tagged commit's tree (``git archive``: nothing is registered in the
repository, unlike a worktree, and a deleted cache folder leaves nothing stale behind),
unpacked into a cache folder keyed by the commit, with a venv made offline from the uv
cache (``uv sync --frozen --offline``, no extras: the scripted model needs none). A later
run reuses it.
"""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The release this one upgrades from, and its commit for a clone without the tag.
PREVIOUS_TAG = "v0.2.0"
PREVIOUS_COMMIT = "b813fbcebcc6369d7abaefa54fa3ee4a1f77c08e"
_READY = ".agentbus-release-ready"


class ReleaseUnavailable(RuntimeError):
    """The previous release cannot be built here (no git history, no uv, a cold cache)."""


def previous_commit() -> str:
    """The tag's commit, or the pinned hash when the clone has no tag."""
    found = _git("rev-parse", "--verify", "--quiet", f"{PREVIOUS_TAG}^{{commit}}", check=False)
    return found.strip() or PREVIOUS_COMMIT


def cache_root() -> Path:
    """Where built releases are kept (``AGENTBUS_TEST_RELEASES`` or the user's cache)."""
    given = os.environ.get("AGENTBUS_TEST_RELEASES")
    if given:
        return Path(given)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agentbus" / "releases"


def previous_release() -> Path:
    """The previous release's ``agentbus`` program, built once per commit."""
    commit = previous_commit()
    home = cache_root() / commit
    program = home / ".venv" / "bin" / "agentbus"
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f"{commit}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test sessions build it once
        if not (home / _READY).exists():
            shutil.rmtree(home, ignore_errors=True)  # a build that was cut short
            _build(commit, home)
            (home / _READY).write_text(commit + "\n")
    return program


def _build(commit: str, home: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise ReleaseUnavailable(f"git archive {commit}: {archive.stderr.decode().strip()}")
    home.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(home, filter="data")
    uv = _uv()
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_OFFLINE": "1"}
    env.pop("VIRTUAL_ENV", None)
    synced = subprocess.run(
        [uv, "sync", "--frozen", "--offline", "--python", sys.executable, "--no-progress"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if synced.returncode != 0:
        raise ReleaseUnavailable(f"uv sync of {commit} failed: {synced.stderr.strip()[-2000:]}")


def _uv() -> str:
    local = REPO / ".tools" / "bin" / "uv"  # what `make install` bootstraps
    found = str(local) if local.exists() else shutil.which("uv")
    if found is None:
        raise ReleaseUnavailable("uv is not installed (make install bootstraps it)")
    return found


def _git(*args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise ReleaseUnavailable(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
