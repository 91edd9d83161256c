"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, over httpx."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from retrieval.errors import ConfigError, EmbedderFailed


class OpenAIEmbedder:
    """Calls ``/embeddings`` in batches; vectors are re-normalised (some servers do not).

    Args:
        base_url: endpoint root including ``/v1``.
        model: the model name to send.
        dim: the vector size the model returns (checked on every response).
        api_key: bearer token, if the server wants one.
        batch_size: texts per request.
        timeout_s: per-request timeout.
        transport: an httpx transport (tests); the default opens real connections.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not base_url or not model or dim < 1:
            raise ConfigError(
                "the openai embedder needs a base URL, a model name and a vector size",
                hint="set AGENTBUS_EMBEDDING_BASE_URL, AGENTBUS_EMBEDDING_MODEL and "
                "AGENTBUS_EMBEDDING_DIM (e.g. 1536 for text-embedding-3-small)",
            )
        self._model = model
        self._dim = dim
        self.batch_size = batch_size
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout_s,
            transport=transport,
        )

    @property
    def name(self) -> str:
        """Model id."""
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        """Vector size."""
        return self._dim

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        try:
            resp = await self._client.post(
                "embeddings", json={"model": self._model, "input": texts}
            )
            resp.raise_for_status()
            body: dict[str, Any] = resp.json()
            data = sorted(body["data"], key=lambda d: int(d["index"]))
            vectors = [[float(x) for x in d["embedding"]] for d in data]
        except httpx.HTTPStatusError as e:
            raise EmbedderFailed(
                f"embeddings endpoint answered {e.response.status_code}: {e.response.text[:200]}"
            ) from e
        except httpx.HTTPError as e:
            raise EmbedderFailed(f"embeddings endpoint unreachable: {e!r}") from e
        except (KeyError, TypeError, ValueError) as e:
            raise EmbedderFailed(f"embeddings endpoint sent an unexpected body: {e!r}") from e
        if len(vectors) != len(texts):
            raise EmbedderFailed(f"asked for {len(texts)} embeddings, got {len(vectors)}")
        for v in vectors:
            if len(v) != self._dim:
                raise EmbedderFailed(f"the endpoint returned {len(v)} dimensions, not {self._dim}")
        return [_unit(v) for v in vectors]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        out: list[list[float]] = []
        items = list(texts)
        for start in range(0, len(items), self.batch_size):
            out.extend(await self._batch(items[start : start + self.batch_size]))
        return out

    async def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return (await self._batch([text]))[0]


def _unit(v: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v] if norm > 0 else v
