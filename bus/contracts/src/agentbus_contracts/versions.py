"""Reading a message another version wrote: older versions upcast, unknown fields dropped.

During a rolling upgrade a release N process reads what N+1 wrote and the reverse. The
models stay strict where they are made (``extra="forbid"`` catches a misspelt field in the
writer), and readers go through here instead of validating directly:

- a document of an older ``schema_version`` is rewritten by an upcaster chain (version k to
  k+1, one function each) into the current shape before it is validated;
- a field the reader does not know (one a later release added) is dropped and logged once
  per contract and field, never refused.

Only a document that fails for another reason raises. The fast path (a current document
with no unknown field) validates once, as before.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from pydantic import ValidationError

T = TypeVar("T")
Doc = dict[str, Any]
Upcaster = Callable[[Doc], Doc]
"""Rewrites a document of version k into version k+1 (a new dict; the input is not reused)."""

Note = Callable[[str, str], None]
"""Called with (contract, dotted field path) for an unknown field a reader dropped."""

_log = logging.getLogger("agentbus.contracts")
_noted: set[tuple[str, str]] = set()

#: A document nests unknown fields in at most this many places before it is refused.
_MAX_PASSES = 8


def log_once(contract: str, path: str) -> None:
    """Log (info) the first time a contract's reader drops an unknown field."""
    if (contract, path) in _noted:
        return
    _noted.add((contract, path))
    _log.info("ignoring unknown field %s of %s (written by a newer release)", path, contract)


class VersionTooNew(ValueError):
    """A document of a later version than the reader's, which no upcaster can read."""


def upcast(
    doc: Doc,
    *,
    contract: str,
    version: int,
    current: int,
    chain: Mapping[int, Upcaster],
) -> Doc:
    """``doc`` (of ``version``) rewritten into the ``current`` shape through ``chain``.

    Raises:
        VersionTooNew: ``version`` is above ``current`` (the reader is older than the writer
            by a breaking change: the procedure in docs/upgrades.md rules that out).
        ValueError: no upcaster leads from ``version`` to ``current``.
    """
    if version > current:
        raise VersionTooNew(f"{contract} version {version} is newer than this reader's {current}")
    while version < current:
        step = chain.get(version)
        if step is None:
            raise ValueError(f"{contract} version {version} cannot be read (no upcaster)")
        doc = step(doc)
        version += 1
    return doc


def read_tolerant(
    validate: Callable[[Any], T], doc: Any, *, contract: str, note: Note = log_once
) -> T:
    """``validate(doc)``, with the fields it refuses as unknown dropped (each noted).

    Raises:
        ValidationError: ``doc`` is invalid for a reason other than unknown fields.
    """
    try:
        return validate(doc)
    except ValidationError as first:
        error = first
    doc = copy.deepcopy(doc)
    for _ in range(_MAX_PASSES):
        removed = _drop_unknown(doc, error)
        if not removed:
            raise error
        for path in removed:
            note(contract, path)
        try:
            return validate(doc)
        except ValidationError as again:
            error = again
    raise error


def _drop_unknown(doc: Any, error: ValidationError) -> list[str]:
    removed: list[str] = []
    for item in error.errors():
        if item["type"] != "extra_forbidden":
            continue
        path = _remove(doc, item["loc"])
        if path is not None:
            removed.append(path)
    return removed


def _remove(doc: Any, loc: tuple[int | str, ...]) -> str | None:
    # A location may hold a union's tag (a discriminator value, a validator's name) that
    # is not a key of the document: such parts are skipped. List indexes are left out of
    # the path, so a field is noted once however many items carry it.
    node = doc
    names: list[str] = []
    for part in loc[:-1]:
        if isinstance(node, list) and isinstance(part, int):
            items = cast("list[Any]", node)
            if part >= len(items):
                return None
            node = items[part]
        elif isinstance(node, dict) and part in node:
            names.append(str(part))
            node = cast("dict[Any, Any]", node)[part]
    last = loc[-1]
    if not isinstance(node, dict) or last not in node:
        return None
    del cast("dict[Any, Any]", node)[last]
    return ".".join([*names, str(last)])
