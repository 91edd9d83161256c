"""An example side-effecting tool that honours the gateway's idempotency key.

``AGENTBUS_TOOL_PLUGINS=gateway.examples.ledger:tools`` with ``AGENTBUS_LEDGER_FILE`` naming
a file adds ``ledger_append``: it appends one line, ``KEY<TAB>ENTRY``, to the file, at most
once per idempotency key. A second call with a key already in the file appends nothing and
answers as the first did. Lines are written under an exclusive lock (``flock``) and synced
to disk (``fsync``) before the tool returns, so any number of gateway processes on one
host share the file and a process killed after the tool returned cannot lose the line.

This is the contract `gateway.spec.ToolSpec.takes_idempotency_key` asks of a tool: apply
each key at most once, and answer a repeated key as the first call was answered. The
gateway then runs the tool again, with the same key, when a call's first outcome was lost
(its gateway died mid-call), which makes the call exactly once as the ledger sees it.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any

from gateway.errors import ConfigInvalid, ToolError
from gateway.ports import Caller, EgressClient, Tool
from gateway.spec import Risk, ToolSpec

#: The environment variable naming the ledger file.
LEDGER_FILE_ENV = "AGENTBUS_LEDGER_FILE"


def append_once(path: Path, key: str, entry: str) -> int:
    """Append ``KEY<TAB>ENTRY`` unless ``key`` is in the file; the key's line number (1-based)."""
    with path.open("a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        f.seek(0)
        lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            if line.split("\t", 1)[0] == key:
                return number
        f.write(f"{key}\t{entry}\n")
        f.flush()
        os.fsync(f.fileno())
        return len(lines) + 1


class LedgerAppend:
    """``ledger_append``: one ledger line per idempotency key (see the module)."""

    spec = ToolSpec(
        name="ledger_append",
        description="Append an entry to the ledger (once per call, however often it is retried).",
        input_schema={
            "type": "object",
            "properties": {"entry": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["entry"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"entry": {"type": "string"}, "line": {"type": "integer"}},
            "required": ["entry", "line"],
        },
        risk=Risk.MEDIUM,
        side_effects=True,
        takes_idempotency_key=True,
    )

    def __init__(self, path: Path) -> None:
        self.path = path

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Refused: without the gateway's key the tool could not apply a call only once."""
        raise ToolError(
            "ledger_append runs only through the gateway (it needs a call's idempotency key)"
        )

    async def run_as(
        self, caller: Caller, args: dict[str, Any], net: EgressClient | None
    ) -> dict[str, Any]:
        """Append the entry once for the call's idempotency key."""
        key = caller.idempotency_key
        if not key:
            raise ToolError("ledger_append needs the gateway's idempotency key")
        entry = " ".join(str(args["entry"]).split())  # one line, whatever the model sent
        line = await asyncio.to_thread(append_once, self.path, key, entry)
        return {"entry": entry, "line": line}


def tools() -> list[Tool]:
    """The plugin factory: ``ledger_append`` on the file ``AGENTBUS_LEDGER_FILE`` names.

    Raises:
        ConfigInvalid: the variable is not set.
    """
    name = os.environ.get(LEDGER_FILE_ENV, "").strip()
    if not name:
        raise ConfigInvalid(f"gateway.examples.ledger needs {LEDGER_FILE_ENV} (a file path)")
    return [LedgerAppend(Path(name))]
