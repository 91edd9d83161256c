"""``agentbus bench``: the benchmarks (``api/bench/``); each prints its figures.

The benchmark modules are imported when their command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.lazy_coercion import Group

if TYPE_CHECKING:
    from agentbus_bench.deployment import Deployment

app = typer.Typer(
    cls=Group, help="Benchmarks; each prints its figures (one JSON line with --json)."
)


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"agentbus_bench.{name}")


RedisUrl = Annotated[
    str | None,
    typer.Option(
        help="Redis (a node of it with --redis-cluster) to run on; default: a temporary "
        "embedded one. The benchmark adds streams and keys there and leaves them."
    ),
]
RedisCluster = Annotated[
    bool,
    typer.Option(
        help="Talk to Redis as a cluster: --redis-url names any node; without --redis-url a "
        "temporary 3-master cluster is started from the machine's redis-server."
    ),
]
ClusterPort = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=55_000,
        help="First of the 3 ports of the temporary cluster (+10000 for its bus); default 7101.",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="One JSON line.")]
ApiKey = Annotated[
    str | None,
    typer.Option(help="Key for --url (default: AGENTBUS_API_KEY or the local key)."),
]
TokenDelay = Annotated[
    float, typer.Option(min=0, help="Scripted model's per-token delay (temporary system).")
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        help="State store, postgresql+asyncpg://USER@HOST/DB (migrated to head by `agentbus "
        "up`); default: SQLite in the temporary data folder."
    ),
]


def _deployment(
    redis_url: str | None,
    redis_cluster: bool,
    database_url: str | None,
    cluster_port: int | None = None,
) -> Deployment:
    """The parts to run on, or a usage error (exit 2) naming what is wrong."""
    deployment = _load("deployment").Deployment(
        redis_url=redis_url,
        redis_cluster=redis_cluster,
        database_url=database_url,
        cluster_port=cluster_port,
    )
    if problem := deployment.problem():
        raise typer.BadParameter(problem)
    return deployment


@app.command()
def hop(
    redis_url: RedisUrl = None,
    redis_cluster: RedisCluster = False,
    cluster_port: ClusterPort = None,
    hops: Annotated[int, typer.Option(min=1, help="Steps per run.")] = 20,
    latency_runs: Annotated[int, typer.Option(min=1, help="Sequential runs (latency).")] = 200,
    runs: Annotated[int, typer.Option(min=1, help="Concurrent runs (throughput).")] = 500,
    concurrency: Annotated[
        int, typer.Option(min=1, help="Worker steps in flight (per process).")
    ] = 16,
    processes: Annotated[
        int,
        typer.Option(min=1, help="Worker processes: this one and N-1 `agentbus worker noop`."),
    ] = 1,
    as_json: AsJson = False,
) -> None:
    """No-op role chain over a real Redis: hops/s and per-hop latency (no database is
    touched, so there is no --database-url)."""
    _load("hop").main(
        redis_url=redis_url,
        hops=hops,
        latency_runs=latency_runs,
        runs=runs,
        concurrency=concurrency,
        as_json=as_json,
        deployment=_deployment(redis_url, redis_cluster, None, cluster_port),
        processes=processes,
    )


@app.command()
def turn(
    mode: Annotated[str, typer.Option(help="single | multi")] = "single",
    accuracy: Annotated[str, typer.Option(help="standard | accurate (multi)")] = "standard",
    runs: Annotated[int, typer.Option(min=1, help="Runs in the throughput phase.")] = 1000,
    concurrency: Annotated[
        int,
        typer.Option(min=1, help="Runs in flight at once (and `up --concurrency`, at least 8)."),
    ] = 32,
    processes: Annotated[
        int, typer.Option(min=1, help="`agentbus up --processes` (worker processes).")
    ] = 1,
    model_latency: Annotated[
        float,
        typer.Option(min=0, help="Seconds the scripted model waits before each call's answer."),
    ] = 0.0,
    latency_runs: Annotated[
        int | None,
        typer.Option(min=0, help="Runs one at a time first (p50/p99); default min(runs, 200)."),
    ] = None,
    redis_url: RedisUrl = None,
    redis_cluster: RedisCluster = False,
    cluster_port: ClusterPort = None,
    database_url: DatabaseUrl = None,
    as_json: AsJson = False,
) -> None:
    """Whole runs through `agentbus up` with the scripted model: runs/s, turn latency (alone
    and under load), runs not done, peak RSS of each process."""
    deployment = _deployment(redis_url, redis_cluster, database_url, cluster_port)
    _load("turn").main(
        mode=mode,
        accuracy=accuracy,
        runs=runs,
        concurrency=concurrency,
        processes=processes,
        as_json=as_json,
        deployment=deployment,
        model_latency=model_latency,
        latency_runs=latency_runs,
    )


@app.command()
def peer(
    runs: Annotated[int, typer.Option(min=1, help="Runs in each throughput phase.")] = 1000,
    concurrency: Annotated[int, typer.Option(min=1, help="Runs in flight at once.")] = 32,
    rounds: Annotated[
        int, typer.Option(min=1, help="Rounds of agentbus, LangGraph in memory, on Postgres.")
    ] = 2,
    postgres_url: Annotated[
        str,
        typer.Option(
            help="LangGraph's Postgres saver (the database is created if missing; its "
            "checkpoint tables are emptied); unreachable: that row is skipped."
        ),
    ] = "postgresql://postgres@127.0.0.1:5432/bench_peer",
    as_json: AsJson = False,
) -> None:
    """The turn of `bench turn --mode multi --accuracy accurate` in agentbus and in LangGraph
    (in-memory and Postgres savers), alternating: runs/s, p50 alone, CPU per run, ratios.
    Needs the peer extra (uv sync --extra peer)."""
    try:
        peer_bench = _load("peer")
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in ("langgraph", "langchain_core", "psycopg"):
            raise
        typer.echo(f"bench peer needs the peer extra (uv sync --extra peer): {e}", err=True)
        raise typer.Exit(2) from e
    peer_bench.main(
        runs=runs,
        concurrency=concurrency,
        rounds=rounds,
        postgres_url=postgres_url,
        as_json=as_json,
    )


@app.command()
def relay(
    clients: Annotated[int, typer.Option(min=1, help="Concurrent websocket clients.")] = 200,
    url: Annotated[
        str | None,
        typer.Option(help="A running API; default: start a temporary one with its workers."),
    ] = None,
    api_key: ApiKey = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds a client may take.")] = 120.0,
    token_delay: TokenDelay = 0.01,
    processes: Annotated[
        int, typer.Option(min=1, help="`agentbus up --processes` (temporary system).")
    ] = 1,
    stagger: Annotated[
        float,
        typer.Option(
            min=0,
            help="Spread the asks evenly over this many seconds (a separate figure; "
            "default 0: every client asks at once, the burst).",
        ),
    ] = 0.0,
    redis_url: RedisUrl = None,
    redis_cluster: RedisCluster = False,
    cluster_port: ClusterPort = None,
    database_url: DatabaseUrl = None,
    as_json: AsJson = False,
) -> None:
    """Websocket clients each asking one question: lost/duplicated events, relay latency."""
    deployment = _deployment(redis_url, redis_cluster, database_url, cluster_port)
    if url is not None and (deployment.describe() != "embedded+sqlite" or processes != 1):
        raise typer.BadParameter(
            "--url measures a running API: --processes, --redis-url, --redis-cluster, "
            "--cluster-port and --database-url are for the temporary system"
        )
    _load("relay").main(
        url=url,
        clients=clients,
        api_key=api_key,
        timeout_s=timeout,
        token_delay_s=token_delay,
        as_json=as_json,
        deployment=deployment,
        processes=processes,
        stagger_s=stagger,
    )


@app.command()
def api(
    runs: Annotated[int, typer.Option(min=1, help="Runs posted in the burst phase.")] = 1000,
    concurrency: Annotated[int, typer.Option(min=1, help="POSTs in flight at once.")] = 1000,
    sequential: Annotated[
        int, typer.Option(min=0, help="Runs posted one at a time first (latency).")
    ] = 200,
    mode: Annotated[str, typer.Option(help="single | multi (multi runs accurate)")] = "single",
    url: Annotated[
        str | None,
        typer.Option(help="A running API; default: start a temporary `agentbus up`."),
    ] = None,
    api_key: ApiKey = None,
    token_delay: TokenDelay = 0.0,
    as_json: AsJson = False,
) -> None:
    """POST /api/v1/runs then follow each run's events to done: POST latency, accepted/s,
    time to first answer token, resets and store-lock errors."""
    _load("api").main(
        url=url,
        api_key=api_key,
        mode=mode,
        sequential=sequential,
        runs=runs,
        concurrency=concurrency,
        token_delay_s=token_delay,
        as_json=as_json,
    )


@app.command()
def page(
    redis_url: Annotated[
        str | None, typer.Option(help="Redis to use; default: a temporary embedded one.")
    ] = None,
    token_delay: Annotated[
        float, typer.Option(min=0, help="Seconds the scripted model waits per token.")
    ] = 0.01,
    as_json: AsJson = False,
) -> None:
    """The web page in headless chromium: socket-to-DOM time per event (p50/p99)."""
    _load("page").main(redis_url=redis_url, token_delay=token_delay, as_json=as_json)


@app.command("retrieval")
def bench_retrieval(
    chunks: Annotated[int, typer.Option(min=100, help="Synthetic chunks to ingest.")] = 10_000,
    queries: Annotated[int, typer.Option(min=10, help="Hybrid queries to time.")] = 200,
    embedder: Annotated[
        str, typer.Option(help="local (MiniLM, real) | hashing (model-free, for a quick run).")
    ] = "local",
    as_json: AsJson = False,
) -> None:
    """Ingest chunks/s and hybrid query p50/p99 on the configured store (synthetic chunks)."""
    import asyncio  # here, not at the top: a tenth of the time to print a help

    asyncio.run(
        _load("retrieval").main(chunks=chunks, queries=queries, embedder=embedder, as_json=as_json)
    )


@app.command("local")
def bench_local(
    model: Annotated[
        list[str] | None,
        typer.Option(help="A local model (repeatable); default: every installed one."),
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option(help="single | multi (multi accurate), repeatable; default: both."),
    ] = None,
    concurrency: Annotated[
        list[int] | None,
        typer.Option(min=1, help="Questions in flight at once, repeatable; default: 1 and 4."),
    ] = None,
    questions: Annotated[
        int, typer.Option(min=0, help="Ask only the first N questions, kinds in turn (0: all).")
    ] = 0,
    parallel: Annotated[
        list[int] | None,
        typer.Option(
            min=1,
            help="The model's slots, repeatable (1: one slot, the old adapter); default: "
            "AGENTBUS_LLM_PARALLEL.",
        ),
    ] = None,
    draft: Annotated[
        list[str] | None,
        typer.Option(help="Draft (none | ngram | qwen2.5-coder-0.5b), repeatable; default: none."),
    ] = None,
    threads: Annotated[
        list[int] | None,
        typer.Option(min=1, help="AGENTBUS_LLM_THREADS, repeatable; default: the setting's."),
    ] = None,
    fold: Annotated[
        list[str] | None,
        typer.Option(
            help="on | off, repeatable: after a tool result, decide and answer in one "
            "generation (off: a decision, then an answer); default: AGENTBUS_LLM_FOLD_ANSWER."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per configuration.")
    ] = False,
) -> None:
    """The shipped answer questions through the whole system with each local model, single
    and multi accurate, at concurrency 1 and 4: per call kind prefill, cached and decoded
    tokens, decode tokens/s, first token; per run total, model and other seconds."""
    from agents.errors import LLMError
    from agents.llm.weights import LOCAL_MODELS, WeightsSpec, locate_parts
    from api.compose.settings import AppSettings

    def installed(spec: WeightsSpec) -> bool:
        try:
            locate_parts(spec)
        except LLMError:
            return False
        return True

    names = model or [n for n, spec in LOCAL_MODELS.items() if installed(spec)]
    drafts = ("none", "ngram")
    unknown = [n for n in [*names, *(draft or [])] if n not in LOCAL_MODELS and n not in drafts]
    if unknown:
        raise typer.BadParameter(f"unknown model {unknown[0]!r}; choose from {list(LOCAL_MODELS)}")
    modes = mode or ["single", "multi"]
    if bad := [m for m in modes if m not in ("single", "multi")]:
        raise typer.BadParameter(f"unknown mode {bad[0]!r}; choose single or multi")
    if bad := [f for f in fold or [] if f not in ("on", "off")]:
        raise typer.BadParameter(f"unknown --fold {bad[0]!r}; choose on or off")
    agents = AppSettings.load().agents
    local = _load("local")
    configs = [
        local.Config(model=n, parallel=p, draft=d if d != n else "none", threads=t, fold=f == "on")
        for n in names
        for p in parallel or [agents.llm_parallel]
        for d in draft or ["none"]
        for t in threads or [agents.llm_threads]
        for f in fold or ["on" if agents.llm_fold_answer else "off"]
    ]
    local.main(
        configs=configs,
        modes=modes,
        concurrencies=concurrency or [1, 4],
        questions=questions,
        as_json=as_json,
    )


@app.command()
def cli(
    runs: Annotated[int, typer.Option(min=1, help="Fresh processes per figure.")] = 10,
    as_json: AsJson = False,
) -> None:
    """How fast the command line starts: `--help`, and each `--api-url` command to its request."""
    import asyncio

    asyncio.run(_load("cli").main(runs=runs, as_json=as_json))


@app.command()
def fairness(
    flood: Annotated[int, typer.Option(min=1, help="Runs tenant A posts at once.")] = 1000,
    questions: Annotated[
        int, typer.Option(min=1, help="Questions tenant B asks in each phase.")
    ] = 20,
    interval: Annotated[float, typer.Option(min=0, help="Seconds between B's questions.")] = 0.2,
    latency: Annotated[
        float, typer.Option(min=0, help="Scripted model's seconds before each call.")
    ] = 0.5,
    concurrency: Annotated[int, typer.Option(min=1, help="Steps in flight per role.")] = 8,
    processes: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    post_concurrency: Annotated[int, typer.Option(min=1, help="A's POSTs in flight.")] = 50,
    as_json: AsJson = False,
) -> None:
    """Tenant A floods while tenant B asks one question every --interval: B's time to first
    answer token and to done (p50, p99) during the flood against B alone, and the ratios."""
    _load("fairness").main(
        flood=flood,
        questions=questions,
        interval_s=interval,
        latency_s=latency,
        concurrency=concurrency,
        processes=processes,
        post_concurrency=post_concurrency,
        as_json=as_json,
    )


@app.command()
def conversation(
    turns: Annotated[int, typer.Option(min=4, help="Turns of the one conversation.")] = 1000,
    model: Annotated[
        str, typer.Option(help="scripted (agentbus's own cost) or local (the offline model).")
    ] = "scripted",
    window: Annotated[
        int | None,
        typer.Option(
            min=1024,
            help="The model's context window in tokens; default: AGENTBUS_LLM_CONTEXT_TOKENS.",
        ),
    ] = None,
    every: Annotated[int, typer.Option(min=1, help="Turns per printed bucket.")] = 100,
    as_json: AsJson = False,
) -> None:
    """One conversation of --turns turns through the whole system: time per turn and the
    size of what the answering model was given, per bucket of turns; the summaries written;
    whether the last turn recalls a fact stated in turn 3."""
    if model not in ("scripted", "local"):
        raise typer.BadParameter(f"unknown model {model!r}; choose scripted or local")
    _load("conversation").main(
        model=model, turns=turns, window=window, every=every, as_json=as_json
    )
