"""The sandbox tests on a host without bubblewrap: skipped on a developer's machine, failed
under CI, so a CI run that could not install it never passes with the sandbox untested."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.integration.gateway import test_mcp_sandbox

MODULE = str(Path(test_mcp_sandbox.__file__).resolve())


async def _pytest(**env: str) -> tuple[int, str]:
    """The sandbox module's tests, run as on a host without bubblewrap, with ``env``."""
    base = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pytest",
        MODULE,
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-cov",
        env={**base, "AGENTBUS_TEST_NO_BWRAP": "1", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_without_bubblewrap_the_sandbox_tests_fail_under_ci_and_skip_elsewhere() -> None:
    ci_code, ci_out = await _pytest(CI="true")
    dev_code, dev_out = await _pytest()

    assert ci_code == 1, ci_out
    assert "bubblewrap is not installed and CI is set" in ci_out
    assert " skipped" not in ci_out.splitlines()[-1]
    assert dev_code == 0, dev_out
    assert " skipped" in dev_out.splitlines()[-1] and "failed" not in dev_out.splitlines()[-1]
