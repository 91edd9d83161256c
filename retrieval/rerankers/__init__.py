"""Reranker adapters (the port is `retrieval.ports.Reranker`)."""

from __future__ import annotations

from retrieval.errors import ConfigError
from retrieval.ports import Reranker
from retrieval.rerankers.noop import NoopReranker


def make_reranker(name: str) -> Reranker:
    """The reranker called ``name`` (``none`` or ``nanoranker``).

    Raises:
        ConfigError: an unknown name.
    """
    if name == "none":
        return NoopReranker()
    if name == "nanoranker":
        from retrieval.rerankers.nano import NanoReranker

        return NanoReranker()
    raise ConfigError(f"unknown reranker {name!r}; choose none or nanoranker")
