"""Schemathesis over the served OpenAPI document, as five callers: a user key, an admin
key, another tenant's user key, no key, and an admin key of its own on the operations
that end the caller's key (``credentials``, which the others leave out).

Every response must be a documented status (``status_code_conformance``: each route
declares every error it answers with, ``api.http.responses``), with a body of its
documented schema, never a 5xx, and within the request timeout (a hang is a failure).
The counts of each run are printed (``-s``), and after the last a table: per operation
and caller, the cases that reached the handler (``tests/fuzz/reach.py``); every operation
must be reached by some caller. ``make fuzz`` runs it long.

Each run draws a fresh seed, printed with its counts (``AGENTBUS_FUZZ_SEED=N`` replays
one), so runs explore instead of trying the same cases. After the three stateless phases
the ``stateful`` phase chains operations: an id one answer returns (a run, a
conversation, a schedule, a key, a memory) is passed to the operations that take it, as
schemathesis infers from the schema's response bodies and path parameters, so handlers
behind an id are reached, not only their 404.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fuzz import reach
from tests.fuzz.system import FUZZ_SECONDS, System

pytestmark = [pytest.mark.connected, pytest.mark.timeout(int(FUZZ_SECONDS) + 240)]

SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance"
#: An empty id a stateful link yields is sent as one that exists nowhere.
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
REQUEST_TIMEOUT_S = 20
#: This run's seed: fresh unless ``AGENTBUS_FUZZ_SEED`` replays one.
SEED = int(os.environ.get("AGENTBUS_FUZZ_SEED") or secrets.randbelow(2**31))
PHASES = "examples,coverage,fuzzing,stateful"
#: Admin last: its fuzzed settings (rate limits, tools) then change nothing the others see.
#: ``credentials`` last of all: a fresh admin key of its own on the operations that can
#: end the caller's own key (erasure, revocation), which every other caller leaves out: a
#: key that erased or revoked itself early gets only 401 for the rest of its run, and its
#: fuzzer reaches no handler (21 operations did so in a long run).
CALLERS = ["none", "user", "other_tenant", "admin", "credentials"]
ENDS_THE_KEY = (
    r"^(DELETE /api/v1/me|DELETE /api/v1/users/\{subject\}|DELETE /api/v1/keys/\{key_id\})$"
)


#: Per caller, per operation: cases sent and cases that reached the handler.
REACHED: dict[str, dict[reach.Operation, Counter[str]]] = {}
OPERATIONS: dict[str, list[reach.Operation]] = {}


def ops(system: System) -> list[reach.Operation]:
    """The operations of the served document."""
    return reach.operations(httpx.get(f"{system.base_url}/openapi.json", timeout=30).json())


def fuzz(system: System, caller: str, report: Path) -> tuple[int, dict[str, object], str]:
    """One schemathesis run as ``caller``: its exit code, its JSON report and its output."""
    args = [
        SCHEMATHESIS,
        "run",
        f"{system.base_url}/openapi.json",
        "--checks",
        CHECKS,
        "--phases",
        PHASES,
        "--max-time",
        str(max(int(FUZZ_SECONDS), 1)),
        "--max-examples",
        "25",
        "--request-timeout",
        str(REQUEST_TIMEOUT_S),
        # One worker: hypothesis describing a filter in two threads at once once broke
        # CPython's ast.parse ("AST constructor recursion depth mismatch") in schemathesis.
        "--workers",
        "1",
        "--seed",
        str(SEED),
        "--no-color",
        "--generation-database",
        "none",
        "--report",
        "json,har",
        "--report-json-path",
        str(report),
        "--report-har-path",
        str(report.with_suffix(".har")),
    ]
    if caller == "credentials":
        key = system.key("t1", f"eraser-{SEED}", "admin")
        args += ["--header", f"Authorization: Bearer {key}"]
        args += ["--include-name-regex", ENDS_THE_KEY]
    else:
        args += ["--exclude-name-regex", ENDS_THE_KEY]
    if caller not in ("none", "credentials"):
        args += ["--header", f"Authorization: Bearer {system.keys[caller]}"]
    done = subprocess.run(
        args,
        env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)},
        capture_output=True,
        timeout=FUZZ_SECONDS + 200,
        check=False,
        text=True,
        cwd=report.parent,
    )
    doc: dict[str, object] = json.loads(report.read_text()) if report.exists() else {}
    return done.returncode, doc, done.stdout[-20_000:] + done.stderr[-5_000:]


@pytest.fixture(scope="module", autouse=True)
def reached_table() -> Iterator[None]:
    """After every caller ran (in this process): per operation, how many cases reached its
    handler, per caller; every operation must have been reached by one allowed to call it."""
    yield
    if not REACHED:
        return
    print(f"\nschemathesis, cases that reached the handler / cases sent:\n{reach.render(REACHED)}")
    if set(REACHED) == set(CALLERS):
        assert reach.unreached(REACHED) == [], reach.render(REACHED)


@pytest.mark.parametrize("caller", CALLERS)
def test_no_fuzzed_request_gets_a_server_error_or_an_undocumented_answer(
    system: System, caller: str, tmp_path: Path
) -> None:
    code, report, output = fuzz(system, caller, tmp_path / "report.json")
    cases = report.get("test_cases", {})
    print(
        f"schemathesis as {caller}, seed {SEED} (replay: AGENTBUS_FUZZ_SEED={SEED}): "
        f"{json.dumps(cases)}; failures {report.get('failures')}"
    )
    table = reach.count(tmp_path / "report.har", OPERATIONS.setdefault("ops", ops(system)))
    REACHED[caller] = table
    assert code == 0, output
    assert isinstance(cases, dict) and cases.get("generated", 0) > 0, output
    assert system.dead() == []
