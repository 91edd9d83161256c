"""``agentbus eval``: evaluations on data the project ships (retrieval, answers, judges,
citations).

Each evaluation's module is imported when its subcommand runs.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from agents.llm.weights import LOCAL_MODELS
from api.cli.common import run_async, settings
from api.cli.lazy_coercion import Group

app = typer.Typer(cls=Group, help="Evaluations on data the project ships.", no_args_is_help=True)

#: The scripted model's name and the shipped answer sets, as ``agentbus_evals`` names them;
#: spelled here so that printing them imports no evaluation (a test keeps them equal).
SCRIPTED = "scripted"
SETS = ("standard", "hard")
#: Each answer run's deadline unless ``--deadline`` says otherwise (seconds).
DEADLINE_S = 600


def _half(half: str) -> Literal["dev", "test"] | None:
    """The half an eval runs on (None: all), or a usage error naming the choices."""
    halves: dict[str, Literal["dev", "test"] | None] = {"dev": "dev", "test": "test", "all": None}
    if half not in halves:
        raise typer.BadParameter(f"unknown half {half!r}; choose dev, test or all")
    return halves[half]


@app.command("answers")
@run_async
async def answers(
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=f"A model to evaluate (repeatable): {', '.join(LOCAL_MODELS)} or {SCRIPTED}. "
            "Default: every local model."
        ),
    ] = None,
    questions: Annotated[
        Path | None, typer.Option(help="Another question file (default: the shipped set).")
    ] = None,
    question_set: Annotated[
        str,
        typer.Option("--set", help=f"The shipped set to ask: {' or '.join(SETS)} (harder)."),
    ] = "standard",
    mode: Annotated[
        str, typer.Option(help="single (the researcher alone) or multi (with the judges).")
    ] = "single",
    accuracy: Annotated[
        str, typer.Option(help="Multi mode: standard (the critic) or accurate (+ verifier).")
    ] = "standard",
    limit: Annotated[
        int, typer.Option(min=0, help="Ask only the first N questions, kinds in turn (0: all).")
    ] = 0,
    per_kind: Annotated[
        int, typer.Option(min=0, help="Ask only the first N questions of each kind (0: all).")
    ] = 0,
    context: Annotated[
        bool,
        typer.Option(
            help="Runs search the set's documents as a tenant with documents gets it: single "
            "mode before the first model call, multi mode in the planner's gather and the "
            "judge's re-query (--no-context: the tools alone)."
        ),
    ] = True,
    deadline: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="SECONDS",
            help="Each run's deadline: a run still going then ends as timed out (raise it "
            "for a slow model on a loaded host).",
        ),
    ] = DEADLINE_S,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per model (with each outcome).")
    ] = False,
    half: Annotated[
        str,
        typer.Option(
            help="all, or the hard set's test (only run; the figures docs give) or dev "
            "(what the judges' rules were written against) half."
        ),
    ] = "all",
) -> None:
    """Share answered correctly, tool-choice accuracy and (multi mode) how the judges did, of
    each local model on the shipped tool-needing questions, asked through the whole system."""
    from agentbus_evals.answer_runs import eval_answers

    await eval_answers(
        model=model,
        questions=questions,
        question_set=question_set,
        mode=mode,
        accuracy=accuracy,
        limit=limit,
        per_kind=per_kind,
        context=context,
        deadline_s=deadline,
        as_json=as_json,
        half=_half(half),
    )


@app.command("claims")
@run_async
async def claims(
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=f"rules, or a model to check with (repeatable): {', '.join(LOCAL_MODELS)}. "
            "Default: rules and every local model."
        ),
    ] = None,
    cases: Annotated[
        Path | None, typer.Option(help="Another triples file (default: the judges' drafts).")
    ] = None,
    half: Annotated[
        str, typer.Option(help="test (only run; the figures docs give), dev or all.")
    ] = "test",
    limit: Annotated[
        int, typer.Option(min=0, help="Check only the first N drafts, kinds in turn (0: all).")
    ] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per model (with each outcome).")
    ] = False,
) -> None:
    """Catch rate (wrong drafts flagged) and false alarms (right drafts flagged) of the
    claim check: the rules alone, and each model alone and with the rules' findings."""
    from agentbus_evals.claim_runs import RULES, chosen_triples, evaluate_claims

    chosen_half = _half(half)
    names = model or [RULES, *LOCAL_MODELS]
    if bad := [n for n in names if n != RULES and n not in LOCAL_MODELS]:
        raise typer.BadParameter(f"unknown model {bad[0]!r}; choose rules or {list(LOCAL_MODELS)}")
    judge_set, chosen = chosen_triples(cases, chosen_half)
    chosen = chosen[:limit] if limit else chosen
    failed = False
    for name in names:
        row = await evaluate_claims(name, judge_set, chosen, progress=True)
        failed |= "error" in row
        if as_json:
            typer.echo(json.dumps(row))
        elif "error" in row:
            typer.echo(f"{name}: {row['error']}: {row['message']} ({row['hint']})")
        else:
            for checker, r in row["checkers"].items():
                typer.echo(
                    f"{row['model']} {checker} ({half} half, {row['drafts']} drafts): caught "
                    f"{r['caught']} ({r['catch_by_kind']}), false alarms {r['false_alarms']}, "
                    f"unreadable {r['unreadable']}, mean {r['mean_s']} s/draft, load "
                    f"{row['loadavg_before']} -> {row['loadavg_after']}"
                )
    if failed:
        raise typer.Exit(1)


@app.command("judges")
@run_async
async def judges(
    model: Annotated[
        list[str] | None,
        typer.Option(
            help=f"A model to judge with (repeatable): {', '.join(LOCAL_MODELS)} or {SCRIPTED}. "
            "Default: every local model."
        ),
    ] = None,
    cases: Annotated[
        Path | None, typer.Option(help="Another triples file (default: the shipped set).")
    ] = None,
    per_kind: Annotated[
        int, typer.Option(min=0, help="Judge only the first N drafts of each kind (0: all).")
    ] = 0,
    judge: Annotated[
        list[str] | None, typer.Option(help="critic or verifier (repeatable; default both).")
    ] = None,
    half: Annotated[
        str,
        typer.Option(
            help="test (only run; the figures docs give), dev (what the rules were written "
            "against) or all."
        ),
    ] = "test",
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Write each judge's approvals (and the right ones) on the whole test half "
            "to the shipped precision table that decides whose approval verifies.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per model (with each outcome).")
    ] = False,
) -> None:
    """Catch rate (wrong drafts flagged), false alarms (right drafts flagged), precision
    (approved drafts that were right) and verified-yes runs that were right, of the critic
    and the verifier, per model, on shipped right and wrong-on-purpose drafts."""
    from agentbus_evals.judge_runs import eval_judges

    chosen_half = _half(half)
    await eval_judges(
        model=model,
        cases=cases,
        per_kind=per_kind,
        judge=judge,
        as_json=as_json,
        half=chosen_half,
        save=record,
    )


@app.command("retrieval")
@run_async
async def eval_retrieval(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per method.")] = False,
    reranker: Annotated[
        str, typer.Option(help="Reranker for the hybrid+rerank row: nanoranker | none.")
    ] = "nanoranker",
) -> None:
    """recall@5, MRR@10, nDCG@10 of dense, keyword, hybrid and hybrid+rerank search."""
    from agentbus_evals.retrieval.runner import evaluate, table
    from retrieval.errors import RetrievalError
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
    from agentbus_evals.graph_set import evaluate_graph, table
    from retrieval.errors import RetrievalError
    from retrieval.ports import FactExtractor

    s = settings()
    if answers:
        from agentbus_evals.graph_answers import answer_set, answers_table
        from api.compose.roles import make_llm

        outcomes = await answer_set(make_llm(s.agents))
        if as_json:
            for o in outcomes:
                typer.echo(json.dumps(dataclasses.asdict(o)))
        else:
            typer.echo(answers_table(outcomes))
        return
    chosen: FactExtractor | None = None
    if extractor == "model":
        from agents.understanding.fact_extractor import ModelExtractor
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


@app.command("facts")
@run_async
async def eval_facts(
    extractor: Annotated[
        list[str] | None,
        typer.Option(
            help=f"rules, {', '.join(LOCAL_MODELS)} or configured (AGENTBUS_LLM) (repeatable). "
            "Default: rules and every local model."
        ),
    ] = None,
    half: Annotated[
        str,
        typer.Option(
            help="test (the figures docs give), dev (what rules and prompt were "
            "written against) or all."
        ),
    ] = "test",
    show: Annotated[
        bool, typer.Option(help="Print each passage's wrong and missed facts.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per extractor (with each passage).")
    ] = False,
) -> None:
    """Knowledge-graph fact extraction: the share of extracted facts a reader agrees with
    (precision), of a reader's facts found (recall), and the ingest seconds per document, of
    each extractor on the shipped passages (five languages)."""
    from agentbus_evals.fact_runs import extractors, run_extractors

    chosen_half = _half(half)
    chosen = extractors(extractor or ["rules", *LOCAL_MODELS])
    await run_extractors(chosen, chosen_half, show=show, as_json=as_json)


@app.command("citations")
def eval_citations(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per half.")] = False,
) -> None:
    """Does the citation check touch citations only? Each half of the shipped answers,
    whole and streamed in random pieces: how many come back exactly as expected, and how
    many were changed other than by removing an invented citation (exit 1 if any)."""
    from agentbus_evals.citation_set import load_citation_set, score

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


@app.command("memory")
@run_async
async def eval_memory(
    extractor: Annotated[
        list[str] | None,
        typer.Option(
            help=f"rules, {SCRIPTED} (the reference: the set's own facts) or a local model "
            f"({', '.join(LOCAL_MODELS)}), repeatable. Default: all of them."
        ),
    ] = None,
    half: Annotated[
        str,
        typer.Option(
            help="test (only run; the figures docs give), dev (what the rules and the prompt "
            "were written against) or all."
        ),
    ] = "test",
    statements: Annotated[
        str,
        typer.Option(
            help="all, keep (only those with facts to keep) or negatives (only those that "
            "should keep nothing)."
        ),
    ] = "all",
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Only the first N statements: languages in turn, and in each language the "
            "statements to keep and the negatives in turn (a before/after pair on the same "
            "statements).",
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress", help="Each statement's facts as it is read.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON line per extractor (with each outcome).")
    ] = False,
) -> None:
    """Memory extraction on the shipped statements (five languages, with requests,
    questions, hypotheticals, third parties, negations and corrections): statements kept
    right of those that should be kept, stored facts that are right, and facts stored from
    a request or a question, per extractor."""
    from agentbus_evals.memory_runs import eval_memory as run

    chosen_half = _half(half)
    chosen: dict[str, Literal["all", "keep", "negatives"]] = {
        "all": "all",
        "keep": "keep",
        "negatives": "negatives",
    }
    if statements not in chosen:
        raise typer.BadParameter(
            f"unknown statements {statements!r}; choose all, keep or negatives"
        )
    await run(
        extractor,
        chosen_half,
        as_json=as_json,
        progress=progress,
        statements=chosen[statements],
        limit=limit,
    )
