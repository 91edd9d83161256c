"""Each role's handler, built from the settings: the model, the tools, the sources."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog
from redis.asyncio import Redis

from agents.budget import metered
from agents.deps import AgentDeps, tool_definitions
from agents.graph import next_role
from agents.llm.budgeted import BudgetedLLM
from agents.llm.observed import ObservedLLM
from agents.llm.ports import LLM
from agents.roles.critic import make_critic
from agents.roles.finalizer import make_finalizer
from agents.roles.gather import make_retrieval_router
from agents.roles.intake import make_intake
from agents.roles.planner import make_planner
from agents.roles.remember import make_memory
from agents.roles.researcher import make_researcher
from agents.roles.team_agent import make_team_agent
from agents.roles.verifier import make_verifier
from agents.settings import AgentSettings
from agents.sources import MEMORY, WEB, Source, memory_source, web_source
from agents.understanding.claims.choose import claim_check
from agents.understanding.memory.choose import memory_extractor
from agents.understanding.memory.ports import MemoryExtractor
from api import signing
from api.compose.errors import ConfigError, UnknownRole
from api.compose.faults import fault
from api.compose.graph import choose_extractor, graph_index, graph_search
from api.compose.settings import AppSettings
from api.compose.tenant_policies import StoredTenantPolicies
from api.compose.tenant_tools import TenantTools
from bus import tenant_versions
from bus.fence import Fence, erasure_key
from bus.keys import Role
from bus.noop import handle_noop
from bus.runtime.worker import Handler
from bus.store import Stores
from gateway.call_context import GatewayDeps
from gateway.egress.private_services import parse_private_hosts
from gateway.errors import GatewayError
from gateway.mcp.hub import McpHub
from gateway.plugins import load_plugins
from gateway.ports import Resolver
from gateway.registry import ToolRegistry
from gateway.service_token import ServiceTokens
from gateway.settings import GatewaySettings
from gateway.tenants import DeploymentPolicies
from gateway.tools import builtin_tools
from gateway.tools.query_graph import QueryGraph
from gateway.tools.search_docs import DocsSearch, SearchDocs, in_process, over_the_bus
from gateway.worker import make_gateway_handler
from retrieval.edge_backup import make_snapshot_handler
from retrieval.gather_source import DOCUMENTS, documents_source
from retrieval.graph.search import GraphSearch
from retrieval.graph.source import GRAPH, graph_source
from retrieval.remote import RemoteSearch, make_search_handler
from retrieval.stack import Retrieval
from retrieval.worker import make_retrieval_handler

_log = structlog.get_logger("api.roles")

#: Roles `agentbus up` runs in one process.
#: Every role a run passes through (single, multi, custom modes and teams).
RUN_ROLES = (
    Role.INTAKE,
    Role.PLANNER,
    Role.RETRIEVAL,
    Role.RESEARCHER,
    Role.GATEWAY,
    Role.CRITIC,
    Role.VERIFIER,
    Role.FINALIZER,
    Role.MEMORY,
    Role.AGENT,
)
UP_ROLES = (*RUN_ROLES, Role.NOOP, Role.RECORDER)


def make_llm(settings: AgentSettings) -> LLM:
    """The chat model the settings choose (loaded lazily on first use), priced, counted and
    traced per call (`ObservedLLM`)."""
    return ObservedLLM(_chosen_llm(settings), settings.llm_prices)


def _chosen_llm(settings: AgentSettings) -> LLM:
    if settings.llm == "scripted":
        from agents.llm.scripted import ScriptedLLM

        return ScriptedLLM(
            token_delay=settings.llm_token_delay_s, latency=settings.llm_latency_s, record=False
        )
    if settings.llm == "openai":
        from agents.llm.openai_compat import OpenAICompatConfig, OpenAICompatLLM

        model = settings.default_model()
        if not (settings.llm_base_url and model):
            raise ConfigError(
                "AGENTBUS_LLM=openai needs AGENTBUS_LLM_BASE_URL and AGENTBUS_LLM_MODEL "
                "(or AGENTBUS_LLM_MODELS)",
                hint="e.g. AGENTBUS_LLM_BASE_URL=http://127.0.0.1:8080/v1",
            )
        return OpenAICompatLLM(
            OpenAICompatConfig(
                base_url=settings.llm_base_url,
                api_key=settings.llm_api_key,
                model=model,
                think_param=settings.llm_think_param,
            )
        )
    from agents.llm.local import LocalLLM
    from agents.llm.weights import LOCAL_MODELS

    spec = LOCAL_MODELS[settings.llm_local_model]
    draft = (
        "ngram"
        if settings.llm_draft_model == "ngram"
        else LOCAL_MODELS.get(settings.llm_draft_model)
    )
    return LocalLLM(
        settings.data_dir / "models",
        spec=spec,
        n_ctx=settings.llm_context_tokens,
        n_threads=settings.llm_threads,
        n_parallel=settings.llm_parallel,
        draft=None if draft is None or draft == spec else draft,
        draft_max=settings.llm_draft_max,
        fold_answer=settings.llm_fold_answer,
    )


def make_registry(
    settings: GatewaySettings | None = None,
    search: DocsSearch | None = None,
    *,
    top_k: int = 5,
    graph: GraphSearch | None = None,
) -> ToolRegistry:
    """The gateway's tools: built-ins, ``search_docs`` (given a way to search),
    ``query_graph`` (given the graph walk), then plugins.

    Args:
        settings: names the plugin tools; None loads none.
        search: how ``search_docs`` searches (`over_the_bus`, `in_process`); None: no tool.
        top_k: the chunks ``search_docs`` returns unless the model asks for a number.
        graph: the knowledge-graph walk ``query_graph`` runs; None: no tool.
    """
    try:
        plugins = load_plugins(settings.tool_plugins) if settings is not None else []
        docs: list[SearchDocs | QueryGraph] = []
        if search is not None:
            docs.append(SearchDocs(search, default_top_k=top_k))
        if graph is not None:
            docs.append(QueryGraph(graph, default_top_k=graph.config.top_k))
        return ToolRegistry([*builtin_tools(), *docs, *plugins])
    except GatewayError as e:
        raise ConfigError(e.message, hint=e.hint) from e


def gateway_policies(settings: GatewaySettings) -> DeploymentPolicies:
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


@dataclass
class Roles:
    """Builds each role's handler on demand, so a gateway worker never loads a model.

    It holds the whole deployment's settings and gives each package only its part.
    ``resolver`` and ``connect_override`` reach the gateway's egress client (tests point
    them at a loopback server; the SSRF guard still checks every address). With
    ``redis``, ``search_docs`` sends its searches to the retrieval role over the bus (any
    process may run the gateway); without it but with ``retrieval`` it searches the store
    this process holds; with neither there is no ``search_docs``.
    """

    settings: AppSettings
    stores: Stores
    registry: ToolRegistry | None = None
    llm: LLM | None = None
    mcp: McpHub = field(default_factory=McpHub)
    sources: dict[str, Source] = field(default_factory=lambda: {})
    retrieval: Retrieval | None = None
    gather_budget_s: float = 5.0
    resolver: Resolver | None = None
    connect_override: Mapping[str, str] | None = None
    redis: Redis | None = None
    clock: Callable[[], datetime] | None = None
    """What the agents take for now (the date in their prompts); None: the real clock."""
    tools: ToolRegistry = field(init=False)
    _graph: GraphSearch | None = field(init=False, default=None)
    _catalogue: TenantTools | None = field(init=False, default=None)
    _tenant_policies: StoredTenantPolicies | None = field(init=False, default=None)
    _service_tokens: ServiceTokens | None = field(init=False, default=None)
    _fence: Fence | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # A stdio MCP server's sandbox never shows the data folder or the store.
        self.mcp.hide(self.settings.bus.private_paths())
        self._graph = graph_search(self.settings.retrieval, self.stores)
        # Plugin tools are named in the settings, so the default registry is built here.
        if self.registry is not None:
            self.tools = self.registry
        else:
            search: DocsSearch | None = None
            if self.redis is not None:
                search = over_the_bus(RemoteSearch(self.redis, self.settings.bus))
            elif self.retrieval is not None:
                search = in_process(self.retrieval.searcher)
            top_k = self.settings.retrieval.retrieval_top_k
            self.tools = make_registry(
                self.settings.gateway, search, top_k=top_k, graph=self._graph
            )
        if self.retrieval is not None:
            self.sources = {DOCUMENTS: documents_source(self.retrieval.searcher), **self.sources}
        if self._graph is not None:
            self.sources = {GRAPH: graph_source(self._graph), **self.sources}

    def _memory_extractor(self) -> MemoryExtractor:
        """The memory step's extractor; its model call is not metered (the run has ended)."""
        if self.llm is None:
            self.llm = make_llm(self.settings.agents)
        llm = self.llm.inner if isinstance(self.llm, BudgetedLLM) else self.llm
        agents = self.settings.agents
        return memory_extractor(
            agents.memory_extractor, llm, adapter=agents.llm, local_model=agents.llm_local_model
        )

    def _agent_deps(self) -> AgentDeps:
        if self.llm is None:
            self.llm = make_llm(self.settings.agents)
        if not isinstance(self.llm, BudgetedLLM):  # every model call within the budgets
            agents = self.settings.agents
            self.llm = BudgetedLLM(
                self.llm, agents.llm_prices, reserve_tokens=agents.llm_reserve_tokens
            )
        if self._catalogue is None:
            policies = self.tenant_policies()
            self._catalogue = TenantTools(
                self.tools,
                policies,
                self.mcp,
                documents=self.stores.documents,
                documents_ttl_s=self.settings.api.api_key_cache_s,  # as the starter's
                versions=policies.version_of,
            )
        deps = AgentDeps(
            llm=self.llm,
            tools=tool_definitions(self.tools),
            catalogue=self._catalogue,
            runs=self.stores.runs,
            conversations=self.stores.conversations,
            sources={
                MEMORY: memory_source(self.stores.conversations, self.stores.memories),
                WEB: web_source(self._gateway_deps(), self.tenant_policies()),
                **self.sources,
            },
            gather_budget_s=self.gather_budget_s,
            checkpoints=self.stores.checkpoints,
            summaries=self.stores.summaries,
            context_window=self.settings.agents.context_window(),
            fault=fault,  # the test seam: inert unless a test armed it (api.compose.faults)
            fence=self.fence(),
            claims=claim_check(self.settings.agents.claim_check, self.llm),
        )
        return deps if self.clock is None else dataclasses.replace(deps, clock=self.clock)

    def _gateway_deps(self) -> GatewayDeps:
        deps = GatewayDeps(
            registry=self.tools,
            connect_override=self.connect_override,
            private_hosts=parse_private_hosts(self.settings.gateway.tool_private_hosts),
            service_tokens=self.service_tokens(),
            fault=fault,  # the test seam, as the agents'
        )
        return deps if self.resolver is None else dataclasses.replace(deps, resolver=self.resolver)

    def fence(self) -> Fence:
        """The erasure fence every step's commit checks (`bus.fence`): its key derives from
        the deployment's signing key, as every process of the deployment has it."""
        if self._fence is None:
            master = signing.master_key(self.settings.api.signing_key, self.settings.bus.data_dir)
            self._fence = Fence(erasure_key(master))
        return self._fence

    def service_tokens(self) -> ServiceTokens:
        """The signer of the tokens tools send to private services (the deployment's
        signing key, as the API's ``/.well-known/agentbus-service-keys`` publishes it)."""
        if self._service_tokens is None:
            master = signing.master_key(self.settings.api.signing_key, self.settings.bus.data_dir)
            self._service_tokens = ServiceTokens(master)
        return self._service_tokens

    def tenant_policies(self) -> StoredTenantPolicies:
        """Each tenant's gateway policy: its stored preferences over the deployment's (one
        instance per process, so its per-tenant cache serves every role)."""
        if self._tenant_policies is None:
            deployment = gateway_policies(self.settings.gateway)
            redis = self.redis
            version = None if redis is None else functools.partial(tenant_versions.current, redis)
            store = self.stores.tenant_settings
            policies = StoredTenantPolicies(deployment, store, version=version)
            store.on_change(policies.forget)  # a change made in this process, at once
            if redis is not None:  # and any process's, through the version
                bump = functools.partial(
                    tenant_versions.bump, redis, shards=self.settings.bus.shards
                )
                store.on_change(bump)
            self._tenant_policies = policies
        return self._tenant_policies

    def retrieval_handler(self, retrieval: Retrieval | None) -> Handler:
        """The retrieval role's handler: gather and merge, and with the store's parts the
        ``documents`` source, ingest batches (their facts too, when the knowledge graph is
        on) and the searches sent over the bus."""
        deps = self._agent_deps()
        if retrieval is None:
            return make_retrieval_router(deps.sources, deps.gather_budget_s)
        sources = {DOCUMENTS: documents_source(retrieval.searcher), **deps.sources}
        choice = choose_extractor(self.settings.retrieval, deps.llm)
        graph = graph_index(self.settings.retrieval, self.stores, choice)
        if graph is not None:
            _log.info("graph_extractor", extractor=choice.label, reason=choice.reason)
        return make_retrieval_router(
            sources,
            deps.gather_budget_s,
            ingest=make_retrieval_handler(retrieval.ingestor.with_graph(graph)),
            search=make_search_handler(retrieval.searcher),
            snapshot=make_snapshot_handler(retrieval.store),
        )

    def handler(self, role: Role) -> Handler:
        """The handler of one role; the roles that call a model are metered
        (`agents.budget.metered`): a spent budget ends the run there."""
        handler = self._handler(role)
        if role in (
            Role.INTAKE,
            Role.PLANNER,
            Role.RESEARCHER,
            Role.CRITIC,
            Role.VERIFIER,
            Role.AGENT,
        ):
            return metered(handler, run_ttl_s=self.settings.bus.run_ttl_s)
        return handler

    def _handler(self, role: Role) -> Handler:
        match role:
            case Role.NOOP:
                return handle_noop
            case Role.INTAKE:
                return make_intake(self._agent_deps())
            case Role.RESEARCHER:
                return make_researcher(self._agent_deps())
            case Role.FINALIZER:
                return make_finalizer(self._agent_deps())
            case Role.MEMORY:
                return make_memory(
                    self._memory_extractor(), self.tenant_policies().settings_of, fault=fault
                )
            case Role.GATEWAY:
                # Audit rows leave with each step's commit; the recorder appends them.
                tools = self._gateway_deps()
                policies = self.tenant_policies()
                return make_gateway_handler(tools, policies, self.mcp, route=next_role)
            case Role.PLANNER:
                return make_planner(self._agent_deps())
            case Role.CRITIC:
                return make_critic(self._agent_deps())
            case Role.VERIFIER:
                return make_verifier(self._agent_deps())
            case Role.AGENT:
                return make_team_agent(self._agent_deps())
            case Role.RETRIEVAL:
                return self.retrieval_handler(self.retrieval)
            case _:
                raise UnknownRole(
                    f"no handler for role {role!r} in this build",
                    hint=f"available: {', '.join(UP_ROLES)}",
                )
