"""What the kill-point and chaos tests share: the environment of gateway processes with the
side-effecting tools under test, and how a test counts their downstream effects.

Four side-effecting tools, each writing one line per real effect to a file (fsync'd):

| tool | kind | idempotency key | file |
|---|---|---|---|
| ``append_line`` | plugin (`effects_plugin`) | no | ``effects.log`` |
| ``ledger_append`` | plugin (`gateway.examples.ledger`) | yes | ``ledger.tsv`` |
| ``calc__ledger_note`` | MCP stdio (`mcp_server`) | no | ``mcp.tsv`` |
| ``calc__ledger_append`` | MCP stdio (`mcp_server`) | yes (argument) | ``mcp.tsv`` |
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bus import keys
from bus.ledger import LedgerRecord
from tests.conftest import TEST_REDIS_URL
from tests.integration.gateway import mcp_server
from tests.integration.gateway.mcp_server import SANDBOX

SERVER = str(Path(mcp_server.__file__).resolve())
PLUGINS = "tests.integration.gateway.effects_plugin:tools,gateway.examples.ledger:tools"


@dataclass(frozen=True)
class EffectTool:
    """A side-effecting tool under test: its name, whether it takes a key, its arguments."""

    name: str
    keyed: bool
    file: str

    def arguments(self, marker: str) -> dict[str, Any]:
        """Arguments that write ``marker`` (one line per real effect)."""
        return {"text": marker} if self.name == "append_line" else {"entry": marker}

    def effects(self, folder: Path, marker: str) -> int:
        """How many times the downstream saw the call that wrote ``marker``."""
        path = folder / self.file
        if not path.exists():
            return 0
        lines = path.read_text().splitlines()
        return sum(1 for line in lines if line.rsplit("\t", 1)[-1] == marker)


TOOLS = (
    EffectTool("append_line", keyed=False, file="effects.log"),
    EffectTool("ledger_append", keyed=True, file="ledger.tsv"),
    EffectTool("calc__ledger_note", keyed=False, file="mcp.tsv"),
    EffectTool("calc__ledger_append", keyed=True, file="mcp.tsv"),
)


def gateway_env(tmp_path: Path, db: str) -> dict[str, str]:
    """The environment of gateway (and agent) processes with the tools above."""
    effects = tmp_path / "effects"
    effects.mkdir(exist_ok=True)
    effects.chmod(0o777)  # the MCP server's sandbox runs it as nobody under a root gateway
    servers = [
        {
            "name": "calc",
            "command": [sys.executable, SERVER],
            "env": {"MCP_LEDGER_FILE": str(effects / "mcp.tsv")},
            "risk": "MEDIUM",
            "tools": ["ledger_append", "ledger_note"],
            "idempotency_key_arg": "idempotency_key",
            "sandbox": {**SANDBOX, "write_paths": [str(effects)]},
        }
    ]
    return {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_CLAIM_IDLE_MS": "1000",
        "AGENTBUS_HEARTBEAT_MS": "200",
        "AGENTBUS_READ_BLOCK_MS": "100",
        "AGENTBUS_RETRY_BACKOFF_MS": "20",
        "AGENTBUS_TOOL_PLUGINS": PLUGINS,
        "AGENTBUS_TEST_EFFECTS_DIR": str(effects),
        "AGENTBUS_LEDGER_FILE": str(effects / "ledger.tsv"),
        "AGENTBUS_MCP_SERVERS": json.dumps(servers),
        "AGENTBUS_TENANT": "t1",
    }


def armed(point: str, tool: str, once: Path) -> dict[str, str]:
    """Environment that makes a gateway SIGKILL itself at ``point`` for ``tool``, once."""
    return {
        "AGENTBUS_TEST_FAULTS": "1",
        "AGENTBUS_FAULT_POINT": point,
        "AGENTBUS_FAULT_TOOL": tool,
        "AGENTBUS_FAULT_ONCE": str(once),
    }


async def audit_records(redis: Redis, shard: int = 0) -> list[dict[str, Any]]:
    """The audit rows committed steps sent to the recorder (their ``entry``), in order."""
    stream = keys.role_stream(keys.Role.RECORDER, shard)
    rows: list[dict[str, Any]] = []
    for _, fields in await redis.xrange(stream):
        record = LedgerRecord.model_validate_json(fields[b"data"])
        if record.kind == "audit":
            rows.append(record.data["entry"])
    return rows
