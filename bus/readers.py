"""Every contract one process writes and another (maybe of the next or previous release) reads.

A contract is a model, its current version and the upcasters from each earlier version
(`bus.upcasters`). Readers decode through `Contract.read_json` / `Contract.read`:

- the current version with no unknown field validates once (the hot path, as before);
- an older version is upcast to the current shape first;
- a field a newer release added is dropped and logged once per contract and field, never
  refused (`tolerant`), so release N reads what N+1 writes during a rolling upgrade.

Input from outside agentbus (REST bodies, ``runs.questions``) is not tolerant: an unknown
field there is refused with a clear error (see docs/upgrades.md for why).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import structlog
from pydantic import BaseModel, ValidationError

from agentbus_contracts.versions import Upcaster, read_tolerant, upcast
from bus import upcasters
from bus.commands import COMMAND_SCHEMA_VERSION, SCHEMA_VERSION, Command, Question
from bus.ledger import LedgerRecord
from bus.run_state import RUN_STATE_VERSION, RunState

M = TypeVar("M", bound=BaseModel)
log = structlog.get_logger("bus.readers")
_noted: set[tuple[str, str]] = set()

#: What a checkpoint without ``state_version`` holds (0.2.0 wrote none).
UNVERSIONED_STATE = 2


def note_unknown(contract: str, path: str) -> None:
    """Log, once per process, a field of ``contract`` that a newer release added."""
    if (contract, path) not in _noted:
        _noted.add((contract, path))
        log.info("unknown field ignored", contract=contract, field=path)


@dataclass(frozen=True)
class Contract(Generic[M]):
    """How to read one contract across versions.

    Attributes:
        name: the contract's name in logs and docs.
        model: today's model.
        current: today's version.
        chain: upcasters by the version they read (k -> k+1).
        tolerant: drop unknown fields (False for input from outside agentbus).
    """

    name: str
    model: type[M]
    current: int
    chain: Mapping[int, Upcaster] = field(default_factory=lambda: {})
    tolerant: bool = True

    def read_json(self, raw: str | bytes) -> M:
        """Decode ``raw``: the hot path first, then upcast and tolerate.

        Raises:
            ValidationError: not a JSON object, or invalid in this version.
            ValueError: a version this reader cannot read (`VersionTooNew`).
        """
        try:
            return self.model.model_validate_json(raw)
        except ValidationError:
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                raise  # not a JSON object: the original error
        return self.read(cast("dict[str, Any]", doc))

    def read(self, doc: Mapping[str, Any], version: int | None = None) -> M:
        """Validate a decoded document of ``version`` (default: the one it declares)."""
        found = doc.get("schema_version", self.current) if version is None else version
        current = upcast(
            dict(doc),
            contract=self.name,
            version=found if isinstance(found, int) else self.current,
            current=self.current,
            chain=self.chain,
        )
        if not self.tolerant:
            return self.model.model_validate(current)
        return read_tolerant(
            self.model.model_validate, current, contract=self.name, note=note_unknown
        )


COMMAND = Contract("command", Command, COMMAND_SCHEMA_VERSION, {1: upcasters.command_v1_to_v2})
"""Role-stream commands (and the queued turns holding one)."""

RUN_STATE = Contract("run_state", RunState, RUN_STATE_VERSION, {1: upcasters.run_state_v1_to_v2})
"""A run's working state as a checkpoint keeps it (its version is the checkpoint's)."""

QUESTION = Contract("question", Question, SCHEMA_VERSION, tolerant=False)
"""``runs.questions`` entries: external input, so an unknown field is refused."""

LEDGER_RECORD = Contract("ledger_record", LedgerRecord, 1)
"""The store writes a step's commit carries to the recorder."""


def checkpoint_state(state: Mapping[str, Any], version: int | None) -> RunState:
    """The run state a checkpoint holds, in today's shape (``version`` None: 0.2.0's)."""
    return RUN_STATE.read(state, UNVERSIONED_STATE if version is None else version)
