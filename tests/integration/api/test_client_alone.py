"""The client installs alone: a fresh venv with only ``api/client`` and the wire models it
decodes (``bus/contracts``), the tests of both passing there.

The venv gets the two distributions' own builds and the pins ``uv.lock`` gives their
dependencies, from uv's cache (offline, as ``make install`` left it): none of the server's
packages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.uv_runs import REPO, run_ok, uv

CLIENT = REPO / "api" / "client"
CONTRACTS = REPO / "bus" / "contracts"

#: Top-level modules a client process must never load (the server's, and its heavy deps).
SERVER_MODULES = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "qdrant_client",
    "qdrant_edge",
    "onnxruntime",
    "redis",
    "faststream",
    "bus",
    "api",
    "agents",
    "gateway",
    "retrieval",
)

_PROBE = """
import json, sys
import agentbus_client
from agentbus_client import AgentbusClient, AsyncAgentbusClient, EventStream, RetryRules
import agentbus_contracts
from agentbus_client.models import Run, parse_event
from agentbus_client.models.events import Done
assert Run is agentbus_contracts.Run and Done is agentbus_contracts.events.Done
banned = set(sys.argv[1].split(","))
loaded = sorted({m.split(".")[0] for m in sys.modules} & banned)
files = [agentbus_client.__file__, agentbus_contracts.__file__]
print(json.dumps({"loaded": loaded, "files": files}))
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the client and the contracts (built, not editable) alone.

    ``uv sync --package`` installs the pins ``uv.lock`` gives the client, by the wheel URLs
    the lock names: ``make install`` left those in uv's cache, so it works offline on a
    machine whose cache never saw a package index page (``uv pip install -r`` needs them).
    """
    env = tmp_path_factory.mktemp("client-alone") / "venv"
    run_ok(
        uv(), "sync", "--frozen", "--offline", "--quiet", "--package", "agentbus-client",
        "--extra", "test", "--no-editable", env={"UV_PROJECT_ENVIRONMENT": str(env)},
    )  # fmt: skip
    return env


def test_the_client_s_venv_holds_none_of_the_server_s_packages(venv: Path) -> None:
    listed = json.loads(
        run_ok(uv(), "pip", "list", "--format", "json", "--python", venv / "bin" / "python")
    )
    names = {p["name"].lower().replace("_", "-") for p in listed}

    assert {"agentbus-client", "agentbus-contracts", "httpx", "pydantic", "websockets"} <= names
    assert names.isdisjoint({"agentbus", "fastapi", "sqlalchemy", "qdrant-client", "redis"})
    assert names.isdisjoint({"onnxruntime", "qdrant-edge-py", "faststream", "uvicorn"})


def test_importing_the_client_loads_no_server_module(venv: Path) -> None:
    probe = run_ok(venv / "bin" / "python", "-c", _PROBE, ",".join(SERVER_MODULES), cwd=venv)
    found = json.loads(probe)

    assert found["loaded"] == []
    # the installed copies, not the checkout's
    assert all(Path(file).is_relative_to(venv) for file in found["files"])


@pytest.mark.parametrize("folder", [CLIENT, CONTRACTS], ids=["client", "contracts"])
def test_the_distributions_own_tests_pass_in_its_venv(venv: Path, folder: Path) -> None:
    out = run_ok(venv / "bin" / "pytest", "-q", "-p", "no:cacheprovider", cwd=folder)
    assert " passed" in out and "failed" not in out and "error" not in out
