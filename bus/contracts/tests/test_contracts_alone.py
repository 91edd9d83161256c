"""The wire models stand alone: importing every one of them loads pydantic and nothing else."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import agentbus_contracts

#: What pydantic itself brings along (its core, its typing helpers).
PYDANTIC = {
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
}


def _installed_packages_loaded_by(code: str) -> set[str]:
    """The top-level modules from site-packages a fresh interpreter holds after ``code``."""
    probe = (
        "import json, sys\n"
        f"{code}\n"
        "files = {n: getattr(m, '__file__', None) or '' for n, m in sys.modules.items()}\n"
        "print(json.dumps([n for n, f in files.items() if 'site-packages' in f]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in json.loads(done.stdout)}


def test_every_module_of_the_contracts_loads_only_pydantic() -> None:
    names = [
        m.name for m in pkgutil.iter_modules(agentbus_contracts.__path__, "agentbus_contracts.")
    ]
    assert "agentbus_contracts.events" in names and "agentbus_contracts.runs" in names

    loaded = _installed_packages_loaded_by("\n".join(f"import {name}" for name in names))
    loaded -= _installed_packages_loaded_by("pass")  # what the interpreter starts with

    assert "pydantic" in loaded
    assert loaded - {"agentbus_contracts"} <= PYDANTIC
