"""The browser tests' harness: the running system (`agentbus_bench.browser_system`, which
``agentbus bench page`` drives too), where screenshots go, and the skip without chromium."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentbus_bench.browser_system import CHROMIUM as CHROMIUM
from agentbus_bench.browser_system import CHROMIUM_ARGS as CHROMIUM_ARGS
from agentbus_bench.browser_system import CutProxy as CutProxy
from agentbus_bench.browser_system import System as System
from agentbus_bench.browser_system import running_system as running_system

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "browser"


def need_chromium() -> None:
    """Skip (saying how to fix it) when the browser is not installed."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
