"""The command line imports a command's module only when that command runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from api.cli.main import COMMANDS, load

HEAVY = ("fastapi", "sqlalchemy", "qdrant_edge", "qdrant_client", "onnxruntime", "redis", "bus")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_summary_is_the_commands_own_first_help_line(name: str) -> None:
    command = load(name)
    own = (command.short_help or command.help or "").strip().splitlines()[0]
    assert COMMANDS[name].summary == own


def test_help_imports_no_part_of_the_system() -> None:
    probe = (
        "import sys\n"
        "from api.cli.main import app\n"
        "try:\n"
        "    app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert "ask" in done.stdout and "bench" in done.stdout
    loaded = set(done.stderr.split())
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_an_unknown_command_is_refused_with_usage() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "api.cli.main", "nope"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "No such command" in done.stderr
