"""Which tools take an idempotency key, and the example ledger plugin that honours one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.errors import ConfigInvalid, RegistryError, ToolError
from gateway.examples.ledger import LedgerAppend, append_once, tools
from gateway.ports import Caller, EgressClient
from gateway.registry import ToolRegistry
from gateway.spec import ToolSpec


def spec(**fields: Any) -> ToolSpec:
    return ToolSpec(
        name="t",
        description="d",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        **fields,
    )


def test_only_a_side_effecting_tool_may_take_a_key() -> None:
    assert spec(side_effects=True, takes_idempotency_key=True).takes_idempotency_key
    with pytest.raises(ValueError, match="needs side_effects"):
        spec(takes_idempotency_key=True)


class KeyedWithoutRunAs:
    spec = spec(side_effects=True, takes_idempotency_key=True)

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        return {}


def test_a_tool_that_takes_a_key_must_receive_it_through_run_as() -> None:
    with pytest.raises(RegistryError, match="no run_as"):
        ToolRegistry([KeyedWithoutRunAs()])
    assert "ledger_append" in ToolRegistry([LedgerAppend(Path("unused"))])


def test_the_ledger_appends_a_key_once_and_answers_a_repeat_with_its_line(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.tsv"
    assert append_once(ledger, "k1", "first") == 1
    assert append_once(ledger, "k2", "second") == 2
    assert append_once(ledger, "k1", "first again") == 1
    assert ledger.read_text() == "k1\tfirst\nk2\tsecond\n"


async def test_the_ledger_tool_needs_the_gateways_key(tmp_path: Path) -> None:
    tool = LedgerAppend(tmp_path / "ledger.tsv")
    with pytest.raises(ToolError, match="idempotency key"):
        await tool.run({"entry": "x"}, None)
    with pytest.raises(ToolError, match="idempotency key"):
        await tool.run_as(Caller(tenant_id="t", subject="s"), {"entry": "x"}, None)
    keyed = Caller(tenant_id="t", subject="s", idempotency_key="k" * 64)
    first = await tool.run_as(keyed, {"entry": "pay\n 5"}, None)
    assert first == await tool.run_as(keyed, {"entry": "pay\n 5"}, None)
    assert first == {"entry": "pay 5", "line": 1}
    assert (tmp_path / "ledger.tsv").read_text() == "k" * 64 + "\tpay 5\n"


def test_the_ledger_plugin_names_its_file_or_refuses_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTBUS_LEDGER_FILE", raising=False)
    with pytest.raises(ConfigInvalid, match="AGENTBUS_LEDGER_FILE"):
        tools()
    monkeypatch.setenv("AGENTBUS_LEDGER_FILE", str(tmp_path / "l.tsv"))
    [tool] = tools()
    assert isinstance(tool, LedgerAppend) and tool.path == tmp_path / "l.tsv"
