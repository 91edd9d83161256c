"""The offline model through the whole bus: 23 × 19 with the calculator."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.llm.local import LocalLLM
from bus.transcript import fold
from tests.integration.agents.system import StartSystem


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_local_model_calls_the_calculator_and_answers_437(
    start_system: StartSystem, local_model_dir: Path
) -> None:
    llm = LocalLLM(local_model_dir)
    system = await start_system(llm)
    events = await system.ask("What is 23 × 19?", deadline_s=240)
    calls = [e for e in events if e.type == "tool_call"]
    results = [e for e in events if e.type == "tool_result"]
    assert [c.tool for c in calls] == ["calculator"]
    assert results[0].status == "ok" and results[0].result["result"] == 437
    transcript = fold(events)
    assert transcript.status == "done"
    assert "437" in transcript.answer
