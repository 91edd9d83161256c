"""``agentbus eval``: evaluations on data the project ships (retrieval, answers, judges,
citations)."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer

from api.cli.common import run_async, settings
from api.evals.answer_runs import eval_answers
from api.evals.judge_runs import eval_judges
from retrieval.errors import RetrievalError

app = typer.Typer(help="Evaluations on data the project ships.", no_args_is_help=True)
app.command("answers")(eval_answers)
app.command("judges")(eval_judges)


@app.command("retrieval")
@run_async
async def eval_retrieval(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per method.")] = False,
    reranker: Annotated[
        str, typer.Option(help="Reranker for the hybrid+rerank row: nanoranker | none.")
    ] = "nanoranker",
) -> None:
    """recall@5, MRR@10, nDCG@10 of dense, keyword, hybrid and hybrid+rerank search."""
    from retrieval.eval.runner import evaluate, table
    from retrieval.rerankers import make_reranker

    try:
        scores, info = await evaluate(settings().retrieval, reranker=make_reranker(reranker))
    except RetrievalError as e:
        typer.echo(f"error [{e.code}]: {e}", err=True)
        raise typer.Exit(2) from e
    if as_json:
        for score in scores:
            typer.echo(json.dumps({**score.as_dict(), **info}))
    else:
        typer.echo(table(scores, info))


@app.command("graph")
@run_async
async def eval_graph(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per condition.")] = False,
    extractor: Annotated[
        str, typer.Option(help="How facts are extracted: rules | model (the chat model).")
    ] = "rules",
    top_k: Annotated[int, typer.Option(min=1, max=20, help="Passages per source.")] = 5,
    answers: Annotated[
        bool,
        typer.Option(
            "--answers", help="Ask the questions in multi mode instead, with and without it."
        ),
    ] = False,
) -> None:
    """Two-hop questions: is each needed fact in what the researcher is given, with the
    knowledge graph and without it (and the extractor's ms and facts per chunk); with
    ``--answers``, what the configured model answers (AGENTBUS_LLM)."""
    from api.evals.graph_set import evaluate_graph, table
    from retrieval.ports import FactExtractor

    s = settings()
    if answers:
        from api.compose.roles import make_llm
        from api.evals.graph_answers import answer_set, answers_table

        outcomes = await answer_set(make_llm(s.agents))
        if as_json:
            for o in outcomes:
                typer.echo(json.dumps(dataclasses.asdict(o)))
        else:
            typer.echo(answers_table(outcomes))
        return
    chosen: FactExtractor | None = None
    if extractor == "model":
        from agents.fact_extractor import ModelExtractor
        from api.compose.roles import make_llm

        chosen = ModelExtractor(make_llm(s.agents))
    elif extractor != "rules":
        typer.echo(f"error: unknown extractor {extractor!r} (rules | model)", err=True)
        raise typer.Exit(2)
    try:
        result = await evaluate_graph(s, extractor=chosen, top_k=top_k)
    except RetrievalError as e:
        typer.echo(f"error [{e.code}]: {e}", err=True)
        raise typer.Exit(2) from e
    if as_json:
        for score in result.scores:
            typer.echo(json.dumps({**score.as_dict(), **result.info}))
    else:
        typer.echo(table(result))


@app.command("citations")
def eval_citations(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per half.")] = False,
) -> None:
    """Does the citation check touch citations only? Each half of the shipped answers,
    whole and streamed in random pieces: how many come back exactly as expected, and how
    many were changed other than by removing an invented citation (exit 1 if any)."""
    from api.evals.citation_set import load_citation_set, score

    cases = load_citation_set().cases
    changed = 0
    for half in ("dev", "test"):
        result = score(cases, half)
        changed += result.changed
        if as_json:
            typer.echo(json.dumps(dataclasses.asdict(result)))
            continue
        line = f"{half}: {result.exact}/{result.cases} exact, {result.changed} changed"
        missed = f"; not as expected: {', '.join(result.failed)}" if result.failed else ""
        typer.echo(line + " beyond removing an invented citation" + missed)
    if changed:
        raise typer.Exit(1)
