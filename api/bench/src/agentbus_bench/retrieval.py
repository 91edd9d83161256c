"""Retrieval benchmark: ingest synthetic chunks into the vector store, time hybrid queries.

Figures: ``embed_texts_per_s`` (the embedder alone), ``ingest_chunks_per_s`` (embed +
keyword vector + upsert, end to end through the Ingestor), ``query_p50_ms`` /
``query_p99_ms`` (hybrid: query embedding, dense + keyword prefetch with the tenant/ACL
filter, RRF; no reranker). With the embedded store (Qdrant Edge) the queries are timed
twice: ``scan_*`` right after the ingest, while new points are scanned, and then, once the
HNSW build the collection's size calls for is done (``index_s``), ``query_*``. The JSON
names the store and the embedder used.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

from agentbus_evals.retrieval.runner import eval_dir
from retrieval.edge_store import EdgeStore
from retrieval.ingest import prepare
from retrieval.models import Access, Document, Section
from retrieval.search import Searcher
from retrieval.settings import RetrievalSettings
from retrieval.stack import open_retrieval

TENANT = "bench"
CHUNKS_PER_DOC = 100
WORDS_PER_CHUNK = 110  # ~750 characters: the size the chunker produces by default


def _vocabulary() -> list[str]:
    # English words from the shipped eval documents, so chunks tokenize like real text
    # (~150 word pieces per chunk; random letter strings would hit the 256 cap).
    text = " ".join(p.read_text() for p in sorted((eval_dir() / "docs").glob("*.md")))
    return sorted({w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)})


def _chunk_text(rng: random.Random, words: list[str]) -> str:
    sentences: list[str] = []
    for _ in range(WORDS_PER_CHUNK // 11):
        sentence = " ".join(rng.choice(words) for _ in range(11))
        sentences.append(sentence.capitalize() + ".")
    return " ".join(sentences)


def _documents(total: int, rng: random.Random, words: list[str]) -> list[Document]:
    docs: list[Document] = []
    for d in range(0, total, CHUNKS_PER_DOC):
        n = min(CHUNKS_PER_DOC, total - d)
        # One section per chunk, each under the chunk cap: one chunk per section.
        sections = tuple(Section(f"part {i}", _chunk_text(rng, words)) for i in range(n))
        docs.append(
            Document(f"bench/doc-{d // CHUNKS_PER_DOC}.md", f"doc {d}", "markdown", sections)
        )
    return docs


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def _time_queries(
    search: Searcher, rng: random.Random, words: list[str], queries: int
) -> list[float]:
    access = Access.of(TENANT, ["staff"])
    latencies: list[float] = []
    for _ in range(queries):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6)))
        t0 = time.perf_counter()
        await search.search(query, access, top_k=5, method="hybrid")
        latencies.append((time.perf_counter() - t0) * 1000)
    return latencies


async def main(*, chunks: int, queries: int, embedder: str, as_json: bool) -> dict[str, object]:
    """Run the benchmark and print its figures."""
    rng = random.Random(7)
    words = _vocabulary()
    docs = _documents(chunks, rng, words)
    with tempfile.TemporaryDirectory(prefix="agentbus-bench-") as tmp:
        settings = RetrievalSettings(data_dir=Path(tmp), embedder=embedder, reranker="none")  # type: ignore[arg-type]
        async with open_retrieval(settings) as r:
            edge = r.store if isinstance(r.store, EdgeStore) else None
            if edge is not None:
                edge.indexer.quiet_s = float("inf")  # no build until the scan is timed
            sample = [_chunk_text(rng, words) for _ in range(256)]
            await r.embedder.embed(sample[:8])  # load the model outside the timings
            started = time.perf_counter()
            await r.embedder.embed(sample)
            embed_rate = len(sample) / (time.perf_counter() - started)
            prepared = [prepare(d, tenant=TENANT, acl=["staff"], chunking=r.chunking) for d in docs]
            stored = sum(len(p.chunks) for p in prepared)
            started = time.perf_counter()
            await r.ingestor.ingest_all(
                prepared, tenant=TENANT, batch_size=settings.ingest_batch_chunks
            )
            ingest_s = time.perf_counter() - started
            scan = await _time_queries(r.searcher, rng, words, queries)
            index_s = 0.0
            if edge is not None and not edge.indexer.idle:
                started = time.perf_counter()
                edge.indexer.quiet_s = 0.0
                await edge.indexer.wait_idle()
                index_s = time.perf_counter() - started
            latencies = await _time_queries(r.searcher, rng, words, queries) if index_s else scan
    result: dict[str, object] = {
        "store": "edge" if edge is not None else "server",
        "embedder": r.embedder.name,
        "chunks": stored,
        "embed_texts_per_s": round(embed_rate, 1),
        "ingest_chunks_per_s": round(stored / ingest_s, 1),
        "queries": queries,
        "scan_p50_ms": round(statistics.median(scan), 2),
        "scan_p99_ms": round(_pct(scan, 0.99), 2),
        "index_s": round(index_s, 1),
        "query_p50_ms": round(statistics.median(latencies), 2),
        "query_p99_ms": round(_pct(latencies, 0.99), 2),
    }
    if as_json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:22} {value}")
    return result
