"""The command line imports a command's module only when that command runs, and the module
imports the system only when its command runs: every ``--help`` starts fast."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from typing import get_args

import pytest
from typer import _click as click  # pyright: ignore[reportPrivateUsage]
from typer.core import TyperGroup
from typer.testing import CliRunner

from api.cli.main import COMMANDS, PLUGIN_GROUP, Entry, Plugin, app, load

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


#: What a command's module must not import to print its help: the web framework, the SQL
#: toolkit, the vector stores, the embedder's runtime, the Redis client, the terminal
#: renderer (each a tenth of a second or more), nor `bench peer`'s LangGraph and psycopg
#: (an optional extra). Its command imports them when it runs.
SERVER_PARTS = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "qdrant_client",
    "qdrant_edge",
    "onnxruntime",
    "redis",
    "rich",
    "langgraph",
    "langchain_core",
    "psycopg",
)

#: What no ``--help`` loads, beyond the server parts: pydantic, whose import and the
#: validators typer builds with it cost two thirds of a help's time (a group's parameters
#: get theirs only for a value: ``api/cli/lazy_coercion.py``), and asyncio (a command
#: imports it when it runs).
NOT_FOR_A_HELP = (*SERVER_PARTS, "pydantic", "pydantic_core", "asyncio")

#: Every module that defines commands, and the helpers each imports.
COMMAND_MODULES = sorted(
    {e.module for e in COMMANDS.values() if isinstance(e, Entry)}
    | {ep.module for ep in entry_points(group=PLUGIN_GROUP)}
    | {"api.cli.common"}
)


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_importing_a_command_module_imports_no_server_part(module: str) -> None:
    probe = f"import sys\nimport {module}\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = {m.split(".")[0] for m in done.stdout.split()}
    assert not loaded & set(SERVER_PARTS)


def _subcommands() -> list[tuple[str, str]]:
    """Each (command, subcommand) pair of the groups, as ``agentbus COMMAND --help`` lists."""
    pairs: list[tuple[str, str]] = []
    for name in COMMANDS:
        group = load(name)
        if isinstance(group, TyperGroup):
            pairs += [(name, sub) for sub in group.list_commands(click.Context(group))]
    return pairs


#: ``agentbus NAME --help`` as the console script runs it; then what the process loaded.
_HELP_PROBE = """
import sys
from api.cli.main import app
try:
    app([sys.argv[1], "--help"])
except SystemExit as e:
    code = e.code
print(" ".join(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_prints_its_help_without_loading_a_server_part(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE, name], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    assert " ".join(COMMANDS[name].summary.split()[:3]) in " ".join(done.stdout.split())
    loaded = {m.split(".")[0] for m in done.stderr.split()}
    assert sorted(loaded & set(NOT_FOR_A_HELP)) == []


#: ``agentbus NAME SUB --help`` for each pair of argv, in one process; after each, what it
#: loaded that a help must not.
_SUB_HELP_PROBE = """
import json, sys
from api.cli.main import app
banned = set(sys.argv[1].split())
loaded = {}
for pair in json.loads(sys.argv[2]):
    try:
        app([*pair, "--help"])
    except SystemExit:
        pass
    heavy = sorted({m.split(".")[0] for m in sys.modules} & banned)
    if heavy:
        loaded[" ".join(pair)] = heavy
        break
print(json.dumps(loaded), file=sys.stderr)
"""


def test_no_subcommand_help_loads_what_a_help_must_not() -> None:
    pairs = json.dumps(_subcommands())
    done = subprocess.run(
        [sys.executable, "-c", _SUB_HELP_PROBE, " ".join(NOT_FOR_A_HELP), pairs],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {}


@pytest.mark.parametrize(("name", "sub"), _subcommands())
def test_every_subcommand_prints_its_help(name: str, sub: str) -> None:
    result = CliRunner().invoke(app, [name, sub, "--help"])
    assert result.exit_code == 0, result.output
    assert f"{name} {sub}" in result.output


def test_the_choices_a_help_prints_are_their_owners_choices() -> None:
    from agentbus_evals import answer_runs, answer_set
    from agentbus_evals import command as eval_cmd
    from agents import gates
    from api.cli import keys, retention, runs
    from bus import retention as policy
    from bus.store import KeyRole

    assert set(runs.DECISIONS) == gates.ANSWER_DECISIONS | gates.EGRESS_DECISIONS | {"more_info"}
    assert set(get_args(keys.RoleName)) == {role.value for role in KeyRole}
    assert retention.MAX_DAYS == policy.MAX_DAYS
    assert eval_cmd.SCRIPTED == answer_runs.SCRIPTED
    assert set(eval_cmd.SETS) == set(answer_set.SETS)
    assert eval_cmd.DEADLINE_S == answer_set.DEADLINE_S


def test_each_plugin_command_is_installed_by_its_extra() -> None:
    """``make install`` installs the bench and evals extras: their entry points are there."""
    plugins = {name for name, e in COMMANDS.items() if isinstance(e, Plugin)}
    assert plugins == {"bench", "eval"}
    assert plugins <= {ep.name for ep in entry_points(group=PLUGIN_GROUP)}


def test_a_plugin_command_not_installed_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "nosuch", Plugin("nosuch-extra", "Nobody installed it."))
    result = CliRunner().invoke(app, ["nosuch", "--help"])
    assert result.exit_code == 1
    assert "pip install 'agentbus[nosuch-extra]'" in result.output
