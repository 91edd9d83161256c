"""What ``agentbus ingest`` does, imported when it runs (``api/cli/ingest.py`` is the
command): parse and chunk the files here, then store them in this process (a Qdrant server,
or ``--direct``) or publish them as a job that ``agentbus up``'s retrieval role stores.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from api.cli.common import settings
from api.compose.settings import AppSettings

if TYPE_CHECKING:
    from api.compose.graph import ExtractorChoice
from retrieval.errors import RetrievalError
from retrieval.ingest import PreparedDocument, prepare
from retrieval.jobs import split_tasks
from retrieval.loaders import discover, load_path
from retrieval.stack import chunking_config

_console = Console(stderr=True, highlight=False)


def _fail(e: RetrievalError) -> typer.Exit:
    _console.print(f"error [{e.code}]: {e}", markup=False)
    return typer.Exit(2)


def _prepare_all(
    paths: list[Path], s: AppSettings, tenant: str, acl: list[str]
) -> tuple[list[PreparedDocument], list[str]]:
    prepared: list[PreparedDocument] = []
    failures: list[str] = []
    for path in discover(paths):
        try:
            doc = load_path(path)
            prepared.append(
                prepare(doc, tenant=tenant, acl=acl, chunking=chunking_config(s.retrieval))
            )
        except RetrievalError as e:
            failures.append(f"{path}: [{e.code}] {e.message}")
    return prepared, failures


def _progress(total: int, label: str, enabled: bool) -> Progress:
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console,
        disable=not enabled,
    )


async def _direct(
    s: AppSettings, docs: list[PreparedDocument], tenant: str, bar: bool
) -> tuple[dict[str, int], dict[str, str]]:
    totals = {
        "documents": 0,
        "embedded": 0,
        "relabelled": 0,
        "unchanged": 0,
        "deleted": 0,
        "facts": 0,
    }
    # The knowledge graph's facts go to SQL, beside the chunks.
    from api.compose.commands import direct_ingestor

    choice = await _extractor(s, bar)
    async with direct_ingestor(s, choice) as ingestor:
        with _progress(len(docs), "ingesting", bar) as progress:
            task = progress.add_task("ingest", total=len(docs))
            for doc in docs:
                result = await ingestor.ingest(
                    doc, tenant=tenant, batch_size=s.retrieval.ingest_batch_chunks
                )
                totals["documents"] += 1
                for name in ("embedded", "relabelled", "unchanged", "deleted", "facts"):
                    totals[name] += getattr(result, name)
                progress.advance(task)
    failed = getattr(choice.extractor, "failed_calls", 0) if choice else 0
    if failed:
        _console.print(f"facts: {failed} model calls failed; their chunks have no facts")
    said = {"extractor": choice.label, "extractor_reason": choice.reason} if choice else {}
    return (totals | {"failed_model_calls": failed} if failed else totals), said


async def _extractor(s: AppSettings, say: bool) -> ExtractorChoice | None:
    """The fact extractor for this ingest, said on stderr: which runs, and why (a model
    that cannot load falls back to the rules, saying so)."""
    from agents.errors import LLMError
    from agents.llm.local import LocalLLM
    from agents.llm.observed import ObservedLLM
    from api.compose.graph import ExtractorChoice, choose_extractor
    from api.compose.roles import make_llm
    from retrieval.graph.rules import RuleExtractor

    if s.retrieval.graph_extractor == "none":
        return None
    llm = None if s.retrieval.graph_extractor == "rules" else make_llm(s.agents)
    choice = choose_extractor(s.retrieval, llm)
    inner = llm.inner if isinstance(llm, ObservedLLM) else llm
    if choice.label != "rules" and isinstance(inner, LocalLLM):
        try:
            await inner.load()
        except LLMError as e:
            hint = f" ({e.hint})" if e.hint else ""
            reason = f"the model {inner.name} cannot load: {e.message}{hint}"
            choice = ExtractorChoice(RuleExtractor(), reason)
    if say:
        _console.print(f"facts: extracted by {choice.label}: {choice.reason}", markup=False)
    return choice


async def _via_bus(
    s: AppSettings,
    docs: list[PreparedDocument],
    tenant: str,
    bar: bool,
    deadline_s: float,
) -> tuple[dict[str, int], str]:
    from api.compose.commands import job_follow  # the broker wiring; only this path needs it

    tasks = split_tasks(
        docs, batch_chunks=s.retrieval.ingest_batch_chunks, max_bytes=s.bus.max_message_bytes
    )
    async with job_follow(s) as jobs:
        job = await jobs.publish(tasks, tenant=tenant, subject=s.api.subject, deadline_s=deadline_s)
        if not await jobs.consumed(job):
            _console.print(
                "no retrieval worker is consuming yet: the job waits on the stream until "
                "`agentbus up` (or `agentbus worker retrieval`) runs"
            )
        status, last = "done", "0-0"
        with _progress(job.total, f"job {job.job_id[:8]}", bar) as progress:
            task = progress.add_task("ingest", total=job.total)
            while True:
                current = await jobs.status(job.job_id)
                progress.update(task, completed=current.done)
                ended = False
                for entry_id, event in await jobs.events(job, after=last, block_ms=250):
                    last = entry_id
                    if event.type == "error":
                        _console.print(f"error [{event.code}]: {event.message}", markup=False)
                    if event.type == "done":
                        status, ended = event.status, True
                if ended:
                    current = await jobs.status(job.job_id)
                    progress.update(task, completed=current.done)
                    break
        counts = dataclasses.asdict(current)
        counts.pop("job_id")
        return {k: int(v) for k, v in counts.items()}, status


async def _catalogue(s: AppSettings, docs: list[PreparedDocument], tenant: str) -> None:
    """List the documents on the web page too (what its uploads record)."""
    from api.app.errors import BACKEND_FAILURES
    from api.compose.commands import list_documents

    try:
        await list_documents(s, docs, tenant=tenant, subject=s.api.subject)
    except BACKEND_FAILURES as e:  # the documents are stored and searchable all the same
        _console.print(f"not listed on the web page: {e}", markup=False)


async def run(
    paths: list[Path],
    *,
    tenant: str | None,
    acl: list[str] | None,
    direct: bool,
    deadline: float,
    as_json: bool,
) -> None:
    """Ingest ``paths``: here (``direct`` or a Qdrant server), else over the bus as a job."""
    s = settings()
    owner, groups = tenant or s.api.tenant, acl or []
    try:
        docs, failures = _prepare_all(paths, s, owner, groups)
        chunks = sum(len(d.chunks) for d in docs)
        if not as_json:
            _console.print(f"{len(docs)} documents, {chunks} chunks for tenant {owner!r}")
        status = "done"
        said: dict[str, str] = {}
        if not docs:
            counts: dict[str, int] = {}
        elif s.retrieval.qdrant_url or direct:
            counts, said = await _direct(s, docs, owner, not as_json)
        else:
            counts, status = await _via_bus(s, docs, owner, not as_json, deadline)
        if docs and status == "done":
            await _catalogue(s, docs, owner)
    except RetrievalError as e:
        raise _fail(e) from e
    report = {"status": status, "chunks": chunks, **counts, "failed": len(failures), **said}
    for failure in failures:
        _console.print(f"skipped {failure}", markup=False)
    if as_json:
        typer.echo(json.dumps(report))
    else:
        typer.echo(" ".join(f"{k}={v}" for k, v in report.items() if k != "extractor_reason"))
    if status != "done" or failures:
        raise typer.Exit(1)
