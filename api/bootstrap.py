"""The composition root: settings → broker, store, model, tools, role handlers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from faststream.redis import RedisBroker
from redis.asyncio import Redis

from agents.deps import AgentDeps
from agents.finalizer import make_finalizer
from agents.intake import make_intake
from agents.llm.ports import LLM
from agents.llm.ports import ToolSpec as LLMToolSpec
from agents.researcher import make_researcher
from bus import broker as bus_broker
from bus.commands import Command
from bus.embedded import EmbeddedRedis
from bus.errors import BusError
from bus.events import RunStatus
from bus.keys import Role
from bus.noop import handle_noop
from bus.runtime.worker import Handler, RunEndHook, Worker
from bus.settings import Settings
from bus.store import ConversationStore, RunStore, make_engine
from bus.store import RunStatus as StoreStatus
from bus.store.migrate import upgrade_async
from gateway.context import GatewayDeps
from gateway.egress.policy import EgressPolicy
from gateway.registry import ToolRegistry
from gateway.tools import builtin_tools
from gateway.worker import make_gateway_handler

#: Roles `agentbus up` runs in one process.
UP_ROLES = (Role.INTAKE, Role.RESEARCHER, Role.GATEWAY, Role.FINALIZER, Role.NOOP)


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


@contextlib.asynccontextmanager
async def open_store(settings: Settings, *, migrate: bool = False) -> AsyncIterator[Stores]:
    """The state store (migrated to head first when ``migrate``)."""
    url = settings.resolved_database_url()
    if migrate:
        await upgrade_async(url)
    engine = make_engine(url)
    try:
        yield Stores(RunStore(engine), ConversationStore(engine))
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


def make_registry() -> ToolRegistry:
    """The gateway's tools."""
    return ToolRegistry(builtin_tools())


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
    registry: ToolRegistry = field(default_factory=make_registry)
    llm: LLM | None = None

    def _agent_deps(self) -> AgentDeps:
        if self.llm is None:
            self.llm = make_llm(self.settings)
        return AgentDeps(
            llm=self.llm,
            tools=llm_tools(self.registry),
            runs=self.stores.runs,
            conversations=self.stores.conversations,
        )

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
                s = self.settings
                egress = EgressPolicy.from_settings(s.egress_enabled, s.allowed_egress_hosts)
                return make_gateway_handler(GatewayDeps(registry=self.registry), egress)
            case _:
                raise UnknownRole(
                    f"no handler for role {role!r} in this build",
                    hint=f"available: {', '.join(UP_ROLES)}",
                )


def run_end_recorder(runs: RunStore) -> RunEndHook:
    """A hook that records a run's final status in the store (idempotent)."""

    async def record(command: Command, status: RunStatus) -> None:
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
) -> list[Worker]:
    """One worker per role, each wired to its handler and the run-end recorder."""
    hook = run_end_recorder(handlers.stores.runs)
    return [
        Worker(
            role, handlers.handler(role), redis, settings, concurrency=concurrency, on_run_end=hook
        )
        for role in roles
    ]
