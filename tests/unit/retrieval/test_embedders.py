"""Every embedder adapter passes the same contract; plus adapter-specific behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from api.compose.settings import AppSettings
from retrieval.embedders import make_embedder
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.embedders.local_onnx import MiniLMEmbedder, token_batches, tokenizer_path
from retrieval.embedders.openai_compat import OpenAIEmbedder
from retrieval.errors import ConfigError, EmbedderFailed
from retrieval.ports import Embedder
from tests.contracts.embedder import EmbedderContract
from tests.unit.retrieval.fake_embeddings_server import DIM, EmbeddingsServer, embeddings_server


class TestHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder(128)


_MINILM = MiniLMEmbedder()  # loaded once for the module (~0.3 s)


class TestMiniLMEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return _MINILM


def test_token_batches_group_similar_lengths_within_the_padded_budget() -> None:
    lengths = [150, 10, 140, 12, 11, 145, 9, 300]
    groups = token_batches(lengths, max_tokens=320, max_texts=3)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        assert len(group) <= 3
        assert len(group) == 1 or len(group) * max(lengths[i] for i in group) <= 320
    # Shortest first: the short texts together; each group is padded only to its own
    # longest text.
    assert groups == [[6, 1, 4], [3, 2], [5, 0], [7]]


async def test_many_texts_of_mixed_lengths_embed_as_they_would_alone() -> None:
    texts = [("word " * n).strip() for n in (3, 200, 7, 90, 1, 150, 40, 5)] * 3
    together = await _MINILM.embed(texts)
    for text, vector in zip(texts[:8], together, strict=False):
        alone = (await _MINILM.embed([text]))[0]
        assert sum(a * b for a, b in zip(vector, alone, strict=True)) > 0.999


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    with embeddings_server() as s:
        yield s


class TestOpenAIEmbedder(EmbedderContract):
    @pytest.fixture
    async def embedder(self, server: EmbeddingsServer) -> AsyncIterator[Embedder]:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client = OpenAIEmbedder(base, "test-model", DIM, api_key="sk-test", batch_size=50)
        yield client
        await client.aclose()


def test_shipped_tokenizer_is_present() -> None:
    assert tokenizer_path().is_file()


async def test_minilm_ranks_a_paraphrase_above_keyword_noise() -> None:
    q = await _MINILM.embed_query("How do plants make food from light?")
    good, bad = await _MINILM.embed(
        ["Photosynthesis turns sunlight into chemical energy.", "The light bulb was on."]
    )
    assert sum(a * b for a, b in zip(q, good, strict=True)) > sum(
        a * b for a, b in zip(q, bad, strict=True)
    )


async def test_openai_sends_model_key_and_batches(server: EmbeddingsServer) -> None:
    base = f"http://127.0.0.1:{server.server_address[1]}/v1/"
    client = OpenAIEmbedder(base, "m1", DIM, api_key="sk-x", batch_size=2)
    try:
        await client.embed(["a", "b", "c"])
    finally:
        await client.aclose()
    assert [len(r["input"]) for r in server.requests] == [2, 1]
    assert {r["model"] for r in server.requests} == {"m1"}
    assert server.requests[0]["auth"] == "Bearer sk-x"


async def test_openai_errors_are_embedder_failures(server: EmbeddingsServer) -> None:
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.fail = True
    client = OpenAIEmbedder(base, "m1", DIM)
    with pytest.raises(EmbedderFailed, match="500"):
        await client.embed(["a"])
    server.fail = False
    wrong = OpenAIEmbedder(base, "m1", DIM + 1)
    with pytest.raises(EmbedderFailed, match="dimensions"):
        await wrong.embed(["a"])
    await client.aclose()
    await wrong.aclose()


def test_openai_needs_url_model_and_size(make_settings: Callable[..., AppSettings]) -> None:
    with pytest.raises(ConfigError, match="EMBEDDING_DIM"):
        make_embedder(make_settings(embedder="openai", embedding_base_url="http://x/v1").retrieval)
    assert make_embedder(make_settings(embedder="hashing", embedding_dim=32).retrieval).dim == 32
    assert make_embedder(make_settings().retrieval).name == "all-MiniLM-L6-v2-int8"
