"""The retrieval role: stores ingest batches published by `retrieval.jobs`.

Each message is one batch of one document version. The handler embeds and stores it
(idempotent: a redelivered batch finds its chunks stored and embeds nothing), stores the
facts extracted from its chunks when the ingestor has a knowledge graph (keyed by chunk,
version and place, so a redelivery writes nothing twice), records it
in the document's batch set, and the batch that completes the set deletes the document's
older versions. The batch that completes the job writes ``done`` to the job's events.
"""

from __future__ import annotations

from bus.commands import Command, IngestTask
from bus.events import Done
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler
from retrieval.ingest import Ingestor
from retrieval.jobs import doc_key, done_key, progress_key
from retrieval.models import Chunk

AGENT = "retrieval"


def make_retrieval_handler(ingestor: Ingestor) -> Handler:
    """The retrieval role's handler, wired to the process's ingestor."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, IngestTask):
            raise TypeError(f"retrieval got a {task.kind} payload")
        doc, shard, job = task.doc, command.shard, command.run_id
        chunks = [Chunk(c.position, c.heading, c.text) for c in task.chunks]
        result = await ingestor.store_batch(command.tenant_id, doc, chunks)
        ttl = ctx.settings.run_ttl_s
        batches = doc_key(job, shard, doc.doc_id)
        async with ctx.redis.pipeline(transaction=False) as pipe:
            pipe.sadd(batches, doc.batch)
            pipe.expire(batches, ttl)
            pipe.scard(batches)
            stored = (await pipe.execute())[-1]
        deleted = 0
        if stored >= doc.batches:
            # Every batch of this version is stored: drop the chunks of other versions.
            deleted = await ingestor.finish_document(command.tenant_id, doc.doc_id, doc.version)
        progress, done = progress_key(job, shard), done_key(job, shard)
        async with ctx.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(progress, "embedded", result.embedded)
            pipe.hincrby(progress, "relabelled", result.relabelled)
            pipe.hincrby(progress, "unchanged", result.unchanged)
            pipe.hincrby(progress, "facts", result.facts)
            pipe.hincrby(progress, "deleted", deleted)
            pipe.hincrby(progress, "documents", 1 if stored >= doc.batches else 0)
            pipe.sadd(done, command.step_id)
            pipe.expire(done, ttl)
            pipe.scard(done)
            pipe.hget(progress, "total")
            replies = await pipe.execute()
        finished, total = replies[-2], int(replies[-1] or 0)
        if not total or finished < total:
            return StepResult()
        # Two batches finishing together may both see the job complete: the first to
        # claim `finished` ends it; a redelivery of the winner still matches its own id.
        async with ctx.redis.pipeline(transaction=False) as pipe:
            pipe.hsetnx(progress, "finished", command.step_id)
            pipe.hget(progress, "finished")
            owner = (await pipe.execute())[-1]
        if owner is None or owner.decode() != command.step_id:
            return StepResult()
        end = Done(run_id=job, step_id=command.step_id, agent=AGENT, status="done")
        return StepResult(events=[end], finished="done")

    return handle
