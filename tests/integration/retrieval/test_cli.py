"""The command-line side: ingest (direct and over the bus), eval and bench entry points."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import structlog
import typer
from redis.asyncio import Redis
from typer.testing import CliRunner

from agentbus_bench import retrieval as bench
from agentbus_evals import command as eval_cmd
from agentbus_evals.retrieval.runner import evaluate, table
from api.cli import ingest as ingest_cmd
from api.cli import ingest_run
from api.compose.settings import AppSettings
from bus import keys
from bus.runtime.worker import Worker
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.loaders import load_path
from retrieval.models import Access
from retrieval.rerankers.noop import NoopReranker
from retrieval.stack import chunking_config, open_retrieval
from retrieval.worker import make_retrieval_handler
from tests.support import running


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    # The CLI configures structlog to print to the sys.stderr CliRunner swaps in and then
    # closes; later tests in this process would log into a closed file.
    yield
    structlog.reset_defaults()


app = typer.Typer()
app.command()(ingest_cmd.ingest)
app.add_typer(eval_cmd.app, name="eval")


def _docs(folder: Path) -> Path:
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nAlpha particles are helium nuclei.")
    (folder / "b.html").write_text("<title>Beta</title><p>Beta decay emits electrons.</p>")
    return folder


def test_direct_ingest_is_idempotent_and_reports_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _docs(tmp_path / "docs")
    monkeypatch.setenv("AGENTBUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTBUS_EMBEDDER", "hashing")
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", str(docs), "--direct", "--json", "--acl", "physics"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout.strip().splitlines()[-1])
    assert report | {"status": "done"} == report
    assert (report["documents"], report["embedded"], report["failed"]) == (2, 2, 0)
    again = json.loads(
        runner.invoke(app, ["ingest", str(docs), "--direct", "--json", "--acl", "physics"])
        .stdout.strip()
        .splitlines()[-1]
    )
    assert (again["embedded"], again["unchanged"]) == (0, 2)
    missing = runner.invoke(app, ["ingest", str(tmp_path / "nope.md"), "--direct"])
    assert missing.exit_code == 2 and "document_unreadable" in missing.output


async def test_ingest_over_the_bus_follows_the_job_to_done(
    real_redis: Redis, make_settings: Callable[..., AppSettings], tmp_path: Path
) -> None:
    from tests.conftest import TEST_REDIS_URL

    settings = make_settings(redis_url=TEST_REDIS_URL, embedder="hashing")
    docs = [
        prepare(
            load_path(p), tenant="t9", acl=["lab"], chunking=chunking_config(settings.retrieval)
        )
        for p in sorted(_docs(tmp_path / "docs").iterdir())
    ]
    async with open_retrieval(settings.retrieval, embedder=HashingEmbedder(384)) as r:
        worker = Worker(
            keys.Role.RETRIEVAL,
            make_retrieval_handler(r.ingestor),
            real_redis,
            settings.bus,
            lane=keys.INGEST_LANE,
        )
        async with running([worker], real_redis):
            counts, status = await asyncio.wait_for(
                ingest_run._via_bus(settings, docs, "t9", False, 60),  # pyright: ignore[reportPrivateUsage]
                30,
            )
        assert status == "done"
        assert (counts["total"], counts["done"], counts["embedded"]) == (2, 2, 2)
        hits = await r.searcher.search("beta decay", Access.of("t9", ["lab"]), method="keyword")
        assert [h.chunk.title for h in hits] == ["Beta"]


async def test_eval_scores_every_method_on_the_shipped_questions(
    make_settings: Callable[..., AppSettings],
) -> None:
    scores, info = await evaluate(
        make_settings().retrieval, embedder=HashingEmbedder(256), reranker=NoopReranker()
    )
    assert [s.method for s in scores] == ["dense", "keyword", "hybrid", "hybrid+rerank"]
    assert info["documents"] >= 12 and info["questions"] >= 30
    keyword = scores[1]
    assert keyword.recall_at_5 > 0.6 and 0 < keyword.mrr_at_10 <= 1
    assert "recall@5" in table(scores, info)


async def test_bench_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    result = await bench.main(chunks=150, queries=10, embedder="hashing", as_json=True)
    line = json.loads(capsys.readouterr().out.strip())
    assert line == result
    assert {"ingest_chunks_per_s", "query_p50_ms", "query_p99_ms", "embedder"} <= set(line)
    assert line["embedder"] == "hashing-384" and line["chunks"] == 150


@pytest.mark.slow
async def test_eval_with_the_local_models(make_settings: Callable[..., AppSettings]) -> None:
    scores, info = await evaluate(make_settings().retrieval)
    assert info["embedder"] == "all-MiniLM-L6-v2-int8" and info["reranker"] == "nanoranker"
    by_method = {s.method: s for s in scores}
    assert by_method["hybrid"].recall_at_5 >= 0.9
    assert by_method["dense"].ndcg_at_10 >= 0.8
