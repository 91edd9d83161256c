"""What the CLI's commands are given: the use case each one calls, built here on a state
store (and a Redis connection) this module opens, so that a command names neither.

Most are async context managers: the store stays open while the command uses what they
yield, and is closed after. ``page_login_url`` and ``list_documents`` do one thing on a
store they open and close; ``state_store`` is for the commands that are composition roots
themselves (``api``, ``up``, ``worker``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.compose.connection import connect
from bus.store import open_store

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from agentbus_contracts.events import ClientEvent
    from api.app.audit_reads import OperatorAudit
    from api.app.erasure import Erasure
    from api.app.keys import OperatorKeys
    from api.app.memories import MemoryBook
    from api.app.ports import CancelRun, JobFollow
    from api.app.schedules import ScheduleBook
    from api.app.starter import RunStarter
    from api.app.teams import TeamBook
    from api.app.tenant_settings import SettingsBook
    from api.app.tool_calls import ToolCalls
    from api.compose.graph import ExtractorChoice
    from api.compose.resumes import BusResumes
    from api.compose.settings import AppSettings
    from bus.retention_passes import Retention
    from bus.store import Stores
    from retrieval.ingest import Ingestor, PreparedDocument


@asynccontextmanager
async def team_book(s: AppSettings) -> AsyncGenerator[TeamBook | None]:
    """The teams' use cases (None without the teams table's store)."""
    from api.compose.teams import team_book as book_of

    async with open_store(s.bus) as stores:
        yield book_of(s, stores)


@asynccontextmanager
async def memory_book(s: AppSettings) -> AsyncGenerator[MemoryBook | None]:
    """The long-term memories' use cases (None without the memories' store)."""
    from api.app.memories import MemoryBook

    async with open_store(s.bus) as stores:
        yield None if stores.memories is None else MemoryBook(stores.memories)


@asynccontextmanager
async def schedule_book(s: AppSettings) -> AsyncGenerator[ScheduleBook | None]:
    """The schedules' use cases, without a run starter (the running APIs start the runs)."""
    from api.compose.schedules import schedule_book as book_of

    async with open_store(s.bus) as stores:
        yield book_of(s, stores, None)


@asynccontextmanager
async def erasure(s: AppSettings) -> AsyncGenerator[Erasure | None]:
    """A user's erasure (None without the erasure store)."""
    from api.compose.erasure import erasure_of

    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        yield erasure_of(s, stores, conn.redis)


@asynccontextmanager
async def retention(s: AppSettings) -> AsyncGenerator[Retention | None]:
    """The retention passes (None without the retention store)."""
    from api.compose.retention import retention_of

    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        yield retention_of(s.bus, stores, conn.redis)


@asynccontextmanager
async def settings_book(s: AppSettings) -> AsyncGenerator[SettingsBook]:
    """The tenants' settings, read and written."""
    from api.app.tenant_settings import SettingsBook
    from api.compose.starter import defaults_of

    async with open_store(s.bus) as stores:
        yield SettingsBook(stores.tenant_settings, defaults_of(s))


@asynccontextmanager
async def operator_keys(s: AppSettings) -> AsyncGenerator[OperatorKeys]:
    """Every tenant's API keys, with the deployment's signing master."""
    import functools

    from api import signing
    from api.app.keys import OperatorKeys

    master = functools.partial(signing.master_key, s.api.signing_key, s.bus.data_dir)
    async with open_store(s.bus) as stores:
        yield OperatorKeys(stores.keys, signing_master=master)


@asynccontextmanager
async def resumes(s: AppSettings) -> AsyncGenerator[BusResumes]:
    """Resumes of paused runs, published to their next role."""
    from api.compose.edge import allow_always_hook
    from api.compose.resumes import BusResumes

    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        assert stores.checkpoints is not None
        yield BusResumes(
            stores.checkpoints, stores.runs, conn.redis, s.bus, allow_always_hook(stores)
        )


async def page_login_url(s: AppSettings, port: int) -> str | None:
    """A one-time link that signs the web page in with the local admin key (None: no
    usable key), for the API on ``port``."""
    from api.compose.local_key import page_login_url as url_of

    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        return await url_of(s.api, conn.redis, stores.keys, host=s.api.api_host, port=port)


@dataclass(frozen=True, slots=True)
class LocalRuns:
    """Runs started, followed, cancelled and resumed on this machine's bus (``agentbus
    ask`` without ``--api-url``).

    Attributes:
        starter: the API's own run starter (same defaults, limits and checks).
        resumes: continues a run paused at a gate.
        cancel: asks a run to stop.
    """

    starter: RunStarter
    resumes: BusResumes
    cancel: CancelRun
    _redis: Redis

    def events(self, run_id: str, shard: int) -> AsyncIterator[tuple[str, ClientEvent]]:
        """The run's events from its start until its ``done``, with their stream ids."""
        from bus.publish import read_events

        return read_events(self._redis, run_id, shard)


@asynccontextmanager
async def local_runs(s: AppSettings) -> AsyncGenerator[LocalRuns]:
    """Runs on this machine's bus, with the state store open while they are followed."""
    import functools

    from api.compose.edge import allow_always_hook
    from api.compose.resumes import BusResumes
    from api.compose.starter import make_starter
    from bus.publish import request_cancel

    async with connect(s.bus) as conn, open_store(s.bus) as stores:
        assert stores.checkpoints is not None
        yield LocalRuns(
            starter=make_starter(s, conn.redis, stores),
            resumes=BusResumes(
                stores.checkpoints, stores.runs, conn.redis, s.bus, allow_always_hook(stores)
            ),
            cancel=functools.partial(request_cancel, conn.redis, settings=s.bus),
            _redis=conn.redis,
        )


@asynccontextmanager
async def tool_calls(s: AppSettings) -> AsyncGenerator[ToolCalls]:
    """Tool calls through the gateway, on this machine's bus."""
    import functools

    from api.app.tool_calls import ToolCalls
    from bus import keys
    from bus.publish import publish, read_events

    async with connect(s.bus) as conn:
        yield ToolCalls(
            functools.partial(publish, conn.redis, settings=s.bus),
            functools.partial(read_events, conn.redis),
            shard_of=functools.partial(keys.shard_of, shards=s.bus.shards),
            run_deadline_s=s.bus.run_deadline_s,
        )


def state_store(s: AppSettings, *, migrate: bool = False) -> AbstractAsyncContextManager[Stores]:
    """The state store, open while the context lasts (migrated to head first when
    ``migrate``), for a command that is a composition root itself (``api``, ``up``,
    ``worker``): it hands the store to the wiring, never to a use case of its own."""
    return open_store(s.bus, migrate=migrate)


async def list_documents(
    s: AppSettings, docs: Sequence[PreparedDocument], *, tenant: str, subject: str
) -> None:
    """List ingested documents in the catalogue the web page shows (what its uploads
    record), each with the size of its file.

    Raises:
        StoreError: the store failed (the documents are searchable all the same).
    """
    import contextlib
    from pathlib import Path

    from redis.exceptions import RedisError

    from api.catalogue import record_documents
    from bus import tenant_versions
    from bus.errors import RedisUnavailable

    def size(source: str) -> int:
        path = Path(source)
        return path.stat().st_size if path.is_file() else 0

    async with open_store(s.bus) as stores:
        if stores.documents is not None:
            sized = [(d, size(d.source)) for d in docs]
            await record_documents(
                stores.documents, sized, tenant=tenant, subject=subject, job_id="cli"
            )
    # The processes that cache "has documents" read it again (`bus.tenant_versions`); with
    # no Redis to reach (none configured, or down), their caches expire within
    # ``api_key_cache_s``.
    with contextlib.suppress(RedisUnavailable, RedisError, OSError):
        async with connect(s.bus) as conn:
            await tenant_versions.bump(conn.redis, tenant, shards=s.bus.shards)


@asynccontextmanager
async def direct_ingestor(
    s: AppSettings, choice: ExtractorChoice | None
) -> AsyncGenerator[Ingestor]:
    """An ingestor over the vector store, opened in this process, that stores facts with
    ``choice``'s extractor in the state store. The embedded state store is migrated first,
    as `agentbus up` migrates it (the facts need their tables, even before `up` ever ran);
    a configured database is migrated by its operator."""
    from api.compose.graph import graph_index
    from retrieval.stack import open_retrieval

    embedded = s.bus.database_url is None
    async with (
        open_retrieval(s.retrieval) as r,
        open_store(s.bus, migrate=embedded) as stores,
    ):
        yield r.ingestor.with_graph(graph_index(s.retrieval, stores, choice))


@asynccontextmanager
async def job_follow(s: AppSettings) -> AsyncGenerator[JobFollow]:
    """Ingest jobs published on this machine's bus and followed to their end."""
    from api.streams.ingest_jobs import RedisIngestJobs

    async with connect(s.bus) as conn:
        yield RedisIngestJobs(conn.redis, s.bus)


@asynccontextmanager
async def operator_audit(s: AppSettings) -> AsyncGenerator[OperatorAudit | None]:
    """Any tenant's audit log (None without the audit store)."""
    from api.app.audit_reads import OperatorAudit

    async with open_store(s.bus) as stores:
        yield None if stores.audit is None else OperatorAudit(stores.audit)
