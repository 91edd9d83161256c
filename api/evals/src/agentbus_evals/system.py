"""The system an eval asks its questions of: chosen roles' workers on an embedded Redis.

Everything lives in a temporary folder (store, vector store, embedded Redis unless the
overrides name one); the agents' clock and the current_time tool are fixed to the eval's
"today", and documents are ingested for search_docs. Used by the answer and judge evals.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import tempfile
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.llm.local import LocalLLM
from agents.llm.observed import ObservedLLM
from agents.llm.ports import LLM
from api.catalogue import record_documents
from api.compose.connection import connect
from api.compose.graph import choose_extractor, graph_index
from api.compose.roles import Roles, make_llm
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus import keys
from bus.runtime.runner import Runner
from bus.store import open_store
from gateway.registry import ToolRegistry
from gateway.tools import builtin_tools
from gateway.tools.current_time import CurrentTime
from gateway.tools.search_docs import SearchDocs, in_process
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.stack import open_retrieval

TENANT = "eval"


@dataclass(frozen=True, slots=True)
class EvalSystem:
    """A running eval system: its Redis, its settings, and the workers' task."""

    redis: Any
    settings: AppSettings
    running: asyncio.Task[None]


@asynccontextmanager
async def eval_system(
    llm: LLM,
    roles: Sequence[keys.Role],
    today: dt.datetime,
    *,
    documents: Sequence[tuple[str, str]] = (),
    overrides: dict[str, Any] | None = None,
) -> AsyncGenerator[EvalSystem]:
    """Start ``roles`` with ``llm`` on a throw-away store; stop them on leaving.

    Args:
        llm: the model the agents use.
        roles: the roles to run (one worker each).
        today: the clock of the agents and of current_time.
        documents: (name, Markdown text) to ingest for search_docs.
        overrides: settings on top of the environment's (``AppSettings.load`` names).
    """

    def clock() -> dt.datetime:
        return today

    with tempfile.TemporaryDirectory(prefix="agentbus-eval-") as tmp:
        folder = Path(tmp)
        local: dict[str, Any] = {
            "data_dir": folder,
            "redis_url": None,
            "redis_cluster": False,
            "database_url": None,
            "qdrant_url": None,
            "qdrant_path": None,
            "metrics_port": None,
        }
        s = AppSettings.load(**(local | (overrides or {})))
        async with (
            open_store(s.bus, migrate=True) as stores,
            connect(s.bus, embedded=True) as conn,
            open_retrieval(s.retrieval, path=folder / "vectors") as retrieval,
        ):
            # With their knowledge-graph facts, as the retrieval role stores uploads.
            ingestor = retrieval.ingestor.with_graph(
                graph_index(s.retrieval, stores, choose_extractor(s.retrieval, None))
            )
            for name, text in documents:
                path = folder / f"{name}.md"
                path.write_text(text)
                prepared = prepare(
                    load_path(path, source=name), tenant=TENANT, chunking=retrieval.chunking
                )
                await ingestor.ingest(prepared, tenant=TENANT)
                if stores.documents is not None:  # catalogued, as an upload is
                    size = len(text.encode())
                    await record_documents(
                        stores.documents,
                        [(prepared, size)],
                        tenant=TENANT,
                        subject="eval",
                        job_id="eval",
                    )
            # The deployment's tools, with current_time on the eval's clock.
            tools = [
                CurrentTime(clock) if t.spec.name == "current_time" else t for t in builtin_tools()
            ]
            search = SearchDocs(
                in_process(retrieval.searcher), default_top_k=s.retrieval.retrieval_top_k
            )
            registry = ToolRegistry([*tools, search])
            wired = Roles(s, stores, llm=llm, registry=registry, retrieval=retrieval, clock=clock)
            workers = build_workers(tuple(roles), conn.redis, s.bus, wired, concurrency=1)
            for w in workers:
                await w.ensure_groups()
            runner = Runner(workers, conn.redis)
            running = asyncio.create_task(runner.run())
            try:
                yield EvalSystem(conn.redis, s, running)
            finally:
                runner.stop()
                await asyncio.wait_for(running, 60)


async def load_local(name: str) -> tuple[LocalLLM, LLM]:
    """The local model ``name`` as the workers get it (observed), loaded.

    Raises:
        LLMError: it cannot load (a missing package is said with its install command).
    """
    s = AppSettings.load()
    observed = make_llm(s.agents.model_copy(update={"llm": "local", "llm_local_model": name}))
    assert isinstance(observed, ObservedLLM) and isinstance(observed.inner, LocalLLM)
    await observed.inner.load()
    return observed.inner, observed
