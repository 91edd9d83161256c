"""The composition root: settings → broker, store, model, tools, role handlers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from faststream.redis import RedisBroker
from redis.asyncio import Redis

from agents.critic import make_critic
from agents.deps import AgentDeps
from agents.finalizer import make_finalizer
from agents.gates import AllowAlways
from agents.gather import Source, make_retrieval_router
from agents.intake import make_intake
from agents.llm.ports import LLM
from agents.llm.ports import ToolSpec as LLMToolSpec
from agents.planner import make_planner
from agents.researcher import make_researcher
from agents.sources import WEB, memory_source, web_source
from agents.verifier import make_verifier
from api import limits
from api.tenant_policies import StoredTenantPolicies
from bus import broker as bus_broker
from bus import wire
from bus.commands import Command, RunResult
from bus.embedded import EmbeddedRedis
from bus.errors import BusError
from bus.events import RunStatus
from bus.keys import Role
from bus.noop import handle_noop
from bus.runtime.recorder import Applier, Recorder
from bus.runtime.runner import Consumer
from bus.runtime.worker import Handler, RunEndHook, Worker
from bus.settings import Settings
from bus.store import (
    ApiKeyStore,
    AuditEntry,
    AuditStore,
    CheckpointStore,
    ConversationStore,
    RunStore,
    TenantSettingsStore,
    WebhookSecretStore,
    make_engine,
)
from bus.store import RunStatus as StoreStatus
from bus.store.migrate import upgrade_async
from gateway.audit import AUDIT_KIND, make_audit_applier
from gateway.context import GatewayDeps
from gateway.errors import GatewayError
from gateway.mcp.hub import McpHub
from gateway.plugins import load_plugins
from gateway.registry import ToolRegistry
from gateway.tenants import DeploymentPolicies
from gateway.tools import builtin_tools
from gateway.tools.search_docs import SearchDocs
from gateway.webhooks.worker import WebhookWorker
from gateway.worker import make_gateway_handler
from retrieval.gather_source import DOCUMENTS, documents_source
from retrieval.stack import Retrieval, open_retrieval
from retrieval.worker import make_retrieval_handler

#: Roles `agentbus up` runs in one process.
UP_ROLES = (
    Role.INTAKE,
    Role.PLANNER,
    Role.RETRIEVAL,
    Role.RESEARCHER,
    Role.GATEWAY,
    Role.CRITIC,
    Role.VERIFIER,
    Role.FINALIZER,
    Role.NOOP,
    Role.RECORDER,
)


class UnknownRole(BusError):
    """A worker was asked for a role this build has no handler for."""

    code = "unknown_role"


class ConfigError(BusError):
    """A setting is missing or inconsistent."""

    code = "config_error"


@dataclass
class Connection:
    """A connected broker and the Redis client the runtime uses."""

    broker: RedisBroker
    redis: Redis
    url: str


@contextlib.asynccontextmanager
async def connect(settings: Settings, *, embedded: bool = False) -> AsyncIterator[Connection]:
    """Connect to Redis; with ``embedded`` and no URL, start the embedded server first."""
    server: EmbeddedRedis | None = None
    if embedded and not settings.redis_url:
        server = EmbeddedRedis(settings.data_dir)
        url = server.start()
    else:
        url = bus_broker.resolve_redis_url(settings)
    broker = bus_broker.make_broker(url)
    try:
        redis = await bus_broker.connect(broker)
        yield Connection(broker, redis, url)
    finally:
        await broker.stop()
        if server:
            server.stop()


@dataclass
class Stores:
    """The state store's repositories."""

    runs: RunStore
    conversations: ConversationStore
    keys: ApiKeyStore
    tenant_settings: TenantSettingsStore
    audit: AuditStore | None = None
    checkpoints: CheckpointStore | None = None
    webhook_secrets: WebhookSecretStore | None = None


@contextlib.asynccontextmanager
async def maybe_retrieval(settings: Settings, needed: bool) -> AsyncIterator[Retrieval | None]:
    """Retrieval for the processes that search or ingest (local Qdrant: one process only)."""
    if not needed:
        yield None
        return
    async with open_retrieval(settings) as retrieval:
        yield retrieval


@contextlib.asynccontextmanager
async def open_store(settings: Settings, *, migrate: bool = False) -> AsyncIterator[Stores]:
    """The state store (migrated to head first when ``migrate``)."""
    url = settings.resolved_database_url()
    if migrate:
        await upgrade_async(url)
    engine = make_engine(url)
    try:
        yield Stores(
            runs=RunStore(engine),
            conversations=ConversationStore(engine),
            keys=ApiKeyStore(engine),
            tenant_settings=TenantSettingsStore(engine),
            audit=AuditStore(engine),
            checkpoints=CheckpointStore(engine),
            webhook_secrets=WebhookSecretStore(engine),
        )
    finally:
        await engine.dispose()


def make_llm(settings: Settings) -> LLM:
    """The chat model the settings choose (loaded lazily on first use)."""
    if settings.llm == "scripted":
        from agents.llm.scripted import ScriptedLLM

        return ScriptedLLM(token_delay=settings.llm_token_delay_s)
    if settings.llm == "openai":
        from agents.llm.openai_compat import OpenAICompatConfig, OpenAICompatLLM

        if not (settings.llm_base_url and settings.llm_model):
            raise ConfigError(
                "AGENTBUS_LLM=openai needs AGENTBUS_LLM_BASE_URL and AGENTBUS_LLM_MODEL",
                hint="e.g. AGENTBUS_LLM_BASE_URL=http://127.0.0.1:8080/v1",
            )
        return OpenAICompatLLM(
            OpenAICompatConfig(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=settings.llm_model,
            )
        )
    from agents.llm.local import LocalLLM

    return LocalLLM(settings.data_dir / "models")


def make_registry(
    settings: Settings | None = None, retrieval: Retrieval | None = None
) -> ToolRegistry:
    """The gateway's tools: built-ins, ``search_docs`` (with retrieval), then plugins."""
    try:
        plugins = load_plugins(settings.tool_plugins) if settings is not None else []
        docs = []
        if retrieval is not None:
            top_k = settings.retrieval_top_k if settings is not None else 5
            docs = [SearchDocs(retrieval.searcher, default_top_k=top_k)]
        return ToolRegistry([*builtin_tools(), *docs, *plugins])
    except GatewayError as e:
        raise ConfigError(e.message, hint=e.hint) from e


def gateway_policies(settings: Settings) -> DeploymentPolicies:
    """Every tenant's gateway policy: the deployment's egress settings and MCP servers."""
    try:
        return DeploymentPolicies.from_settings(
            egress_enabled=settings.egress_enabled,
            allowed_egress_hosts=settings.allowed_egress_hosts,
            mcp_servers=settings.mcp_servers,
        )
    except (GatewayError, ValueError) as e:
        raise ConfigError(
            str(e), hint="check AGENTBUS_ALLOWED_EGRESS_HOSTS and AGENTBUS_MCP_SERVERS"
        ) from e


def llm_tools(registry: ToolRegistry) -> list[LLMToolSpec]:
    """The registry's tools as the model sees them."""
    return [
        LLMToolSpec(name=s.name, description=s.description, parameters=s.input_schema)
        for s in registry.list()
    ]


@dataclass
class Roles:
    """Builds each role's handler on demand, so a gateway worker never loads a model."""

    settings: Settings
    stores: Stores
    registry: ToolRegistry | None = None
    llm: LLM | None = None
    mcp: McpHub = field(default_factory=McpHub)
    sources: dict[str, Source] = field(default_factory=lambda: {})
    retrieval: Retrieval | None = None
    gather_budget_s: float = 5.0
    tools: ToolRegistry = field(init=False)

    def __post_init__(self) -> None:
        # Plugin tools are named in the settings, so the default registry is built here.
        if self.registry is not None:
            self.tools = self.registry
        else:
            self.tools = make_registry(self.settings, self.retrieval)
        if self.retrieval is not None:
            self.sources = {DOCUMENTS: documents_source(self.retrieval.searcher), **self.sources}

    def _agent_deps(self) -> AgentDeps:
        if self.llm is None:
            self.llm = make_llm(self.settings)
        return AgentDeps(
            llm=self.llm,
            tools=llm_tools(self.tools),
            runs=self.stores.runs,
            conversations=self.stores.conversations,
            sources={
                "memory": memory_source(self.stores.conversations),
                WEB: web_source(GatewayDeps(registry=self.tools), self._policies()),
                **self.sources,
            },
            gather_budget_s=self.gather_budget_s,
            checkpoints=self.stores.checkpoints,
        )

    def _policies(self) -> StoredTenantPolicies:
        # Each tenant's stored preferences (PUT /api/v1/settings) overlay the deployment's.
        return StoredTenantPolicies(gateway_policies(self.settings), self.stores.tenant_settings)

    def handler(self, role: Role) -> Handler:
        """The handler of one role."""
        match role:
            case Role.NOOP:
                return handle_noop
            case Role.INTAKE:
                return make_intake(self._agent_deps())
            case Role.RESEARCHER:
                return make_researcher(self._agent_deps())
            case Role.FINALIZER:
                return make_finalizer(self._agent_deps())
            case Role.GATEWAY:
                # Audit rows leave with each step's commit; the recorder appends them.
                tools = GatewayDeps(registry=self.tools)
                ledger = self.stores.audit is not None
                return make_gateway_handler(tools, self._policies(), self.mcp, audit_ledger=ledger)
            case Role.PLANNER:
                return make_planner(self._agent_deps())
            case Role.CRITIC:
                return make_critic(self._agent_deps())
            case Role.VERIFIER:
                return make_verifier(self._agent_deps())
            case Role.RETRIEVAL:
                deps = self._agent_deps()
                ingest = make_retrieval_handler(self.retrieval.ingestor) if self.retrieval else None
                return make_retrieval_router(deps.sources, deps.gather_budget_s, ingest=ingest)
            case _:
                raise UnknownRole(
                    f"no handler for role {role!r} in this build",
                    hint=f"available: {', '.join(UP_ROLES)}",
                )


def run_end_recorder(runs: RunStore, redis: Redis | None = None) -> RunEndHook:
    """A hook that records a run's final status in the store (idempotent).

    With ``redis`` it also gives the run's concurrent-run slot back (``api.limits``): this
    hook runs however a run ends, so the quota never waits for the run's deadline. And a
    run that ends other than ``done`` answers its ``reply_to`` stream here (the finalizer
    answers for ``done``), so an external publisher never waits for a reply that won't come.
    """

    async def record(command: Command, status: RunStatus) -> None:
        if redis is not None:
            await limits.release(redis, command.tenant_id, command.run_id)
            if command.reply_to and status != "done":
                result = RunResult(
                    run_id=command.run_id,
                    tenant_id=command.tenant_id,
                    status=status,
                    stop_reason=status,
                )
                await redis.xadd(command.reply_to, {wire.DATA_FIELD: wire.encode(result)})
        if status == "done":
            return  # the finalizer records `done` together with the answer and trace
        error_code = status
        await runs.set_status(command.run_id, StoreStatus(status), error_code=error_code)

    return record


def build_workers(
    roles: Iterable[Role],
    redis: Redis,
    settings: Settings,
    handlers: Roles,
    *,
    concurrency: int = 1,
) -> list[Consumer]:
    """One worker per role, each wired to its handler and the run-end recorder.

    The ``recorder`` role is the ledger's consumer (`bus.runtime.recorder`), not a step
    worker: it writes the records steps commit (audit rows) to the store in batches. A
    process with gateway workers also sends webhooks (`gateway.webhooks`): from the same
    network position, through the same egress path.
    """
    hook = run_end_recorder(handlers.stores.runs, redis)
    workers: list[Consumer] = []
    for role in roles:
        if role == Role.RECORDER:
            workers.append(Recorder(redis, settings, ledger_appliers(handlers.stores)))
            continue
        handler = handlers.handler(role)
        workers.append(
            Worker(role, handler, redis, settings, concurrency=concurrency, on_run_end=hook)
        )
        secrets = handlers.stores.webhook_secrets
        if role == Role.GATEWAY and secrets is not None:
            workers.append(WebhookWorker(redis, settings, secrets, handlers._policies()))
    return workers


def ledger_appliers(stores: Stores) -> dict[str, Applier]:
    """How the recorder writes each kind of ledger record."""
    return {AUDIT_KIND: make_audit_applier(stores.audit)} if stores.audit is not None else {}


def allow_always_hook(stores: Stores) -> AllowAlways:
    """``egress_allow_always``: add the host to the tenant's allowlist, enable egress, audit."""

    async def persist(tenant_id: str, subject: str, run_id: str, host: str) -> None:
        record = await stores.tenant_settings.get(tenant_id)
        prefs = dict(record.settings) if record else {}
        prefs["egress_hosts"] = sorted({*(prefs.get("egress_hosts") or []), host})
        prefs["egress_enabled"] = True
        await stores.tenant_settings.put(tenant_id, prefs, updated_by=subject)
        if stores.audit is not None:
            await stores.audit.append(
                AuditEntry(
                    tenant_id=tenant_id,
                    subject=subject,
                    run_id=run_id,
                    agent="egress_gate",
                    call_id=f"allow_always:{host}",
                    tool="egress_allowlist",
                    args={"host": host},
                    status="ok",
                    code="allow_always",
                    message=f"{host} added to the tenant's egress allowlist",
                    duration_ms=0.0,
                )
            )

    return persist
