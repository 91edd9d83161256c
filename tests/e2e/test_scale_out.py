"""Every role as separate processes on the embedded defaults, the gateway twice.

``agentbus up`` owns the embedded Redis and the embedded vector store (it runs the
retrieval role); two ``agentbus worker gateway`` processes and one process per other role
join it. Their ``search_docs`` calls and multi-mode gather steps reach the store over the
bus; a second retrieval process is refused with a clear error instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, processes, spawn
from tests.support import wait_for

OTHER_ROLES = ["intake", "planner", "researcher", "critic", "verifier", "finalizer", "recorder"]
DOC = "# Billing\n\nInvoices are sent on the first working day of each month.\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gateway_steps(port: int) -> float:
    """Gateway steps a worker process committed, from its Prometheus metrics."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in body.splitlines()
        if line.startswith("agentbus_messages_total{") and 'role="gateway"' in line
    )


@pytest.mark.timeout(600)
async def test_two_gateways_and_every_role_apart_share_runs_with_search_and_gather(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_EMBEDDER="hashing"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "billing.md").write_text(DOC)
    ports = [_free_port(), _free_port()]
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        for n, port in enumerate(ports):
            gateway_env = {**env, "AGENTBUS_METRICS_PORT": str(port)}
            procs.append(spawn(["worker", "gateway"], gateway_env, tmp_path / f"gateway{n}.log"))
        for role in OTHER_ROLES:
            procs.append(spawn(["worker", role], env, tmp_path / f"{role}.log"))

        # The store belongs to `up`: a second retrieval process says so and exits.
        second = spawn(["worker", "retrieval"], env, tmp_path / "retrieval.log")
        procs.append(second)
        assert await asyncio.to_thread(second.wait, 120) == 2
        assert "error [qdrant_locked]" in (tmp_path / "retrieval.log").read_text()

        ingested = json.loads(await cli(["ingest", "--json", str(tmp_path / "docs")], env))
        assert ingested["status"] == "done" and ingested["embedded"] == 1

        async def both_gateways_searched() -> bool:
            calls = [
                cli(["tools", "call", "search_docs", '{"query": "when are invoices sent"}'], env)
                for _ in range(8)
            ]
            for out in await asyncio.gather(*calls):
                outcome = json.loads(out)
                assert outcome["status"] == "ok", outcome
                [found] = outcome["result"]["results"]
                assert found["source"].endswith("docs/billing.md")
            steps = [await asyncio.to_thread(_gateway_steps, p) for p in ports]
            return all(s > 0 for s in steps)

        await wait_for(both_gateways_searched, within=180, interval=0.5)

        async def multi_run() -> list[dict[str, object]]:
            out = await cli(
                ["ask", "--json", "--mode", "multi", "--sources", "documents", "23 × 19?"], env
            )
            return [json.loads(line) for line in out.splitlines()]

        for events in await asyncio.gather(*(multi_run() for _ in range(4))):
            assert events[-1]["type"] == "done" and events[-1]["status"] == "done"
            # The evidence gather (and the judge's re-check) searched the documents.
            merges = [e for e in events if e["type"] == "citations" and e["agent"] == "merge"]
            assert merges
            for merged in merges:
                kinds = {c["source_kind"] for c in merged["items"]}  # type: ignore[union-attr]
                assert kinds == {"documents"}
