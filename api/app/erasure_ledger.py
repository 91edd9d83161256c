"""The erasure ledger: every erasure, by the user's mark, in a file that outlives restores.

A backup taken before an erasure still holds the user. ``agentbus restore`` therefore
replays the ledger (`api.app.erasure_replay`): every erasure that had not finished when the
backup began is carried out again on the restored data. The ledger lives in the data folder
beside the store (``erasures.jsonl``, mode 0600) and a restore never replaces it: it keeps
what happened after the backup. A backup carries a copy, which a restore adds to it
(entries are keyed by the erasure's id), so a data folder rebuilt from a backup alone still
knows the erasures up to it.

Each line is one `LedgerLine`: an erasure ``started``, then ``done``. It names the user by
their mark (`bus.fence`), never by their id; only the deployment's erasure key matches a
mark to a user.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

#: The ledger's file name in the data folder (and in a backup).
LEDGER_FILE = "erasures.jsonl"


class LedgerLine(BaseModel):
    """One step of one erasure."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    user: str
    by: str
    state: Literal["started", "done"]
    at: AwareDatetime


class Erased(BaseModel):
    """One erasure as the ledger knows it: when it started and (None: never) finished."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    user: str
    by: str
    started_at: datetime
    done_at: datetime | None


def _append(path: Path, lines: Iterable[LedgerLine]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write("".join(line.model_dump_json() + "\n" for line in lines))
        out.flush()
        os.fsync(out.fileno())


def read_lines(path: Path) -> list[LedgerLine]:
    """Every line of the ledger at ``path`` (none when it does not exist); a torn last
    line (a crash mid-write) is skipped."""
    if not path.is_file():
        return []
    found: list[LedgerLine] = []
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(LedgerLine.model_validate_json(text))
        except ValidationError:
            continue
    return found


def erasures(lines: Iterable[LedgerLine]) -> list[Erased]:
    """The erasures the lines tell of, in the order they started."""
    started: dict[str, LedgerLine] = {}
    done: dict[str, datetime] = {}
    for line in lines:
        if line.state == "started":
            started.setdefault(line.id, line)
        else:
            done[line.id] = max(line.at, done.get(line.id, line.at))
    return [
        Erased(
            id=s.id,
            tenant_id=s.tenant_id,
            user=s.user,
            by=s.by,
            started_at=s.at,
            done_at=done.get(s.id),
        )
        for s in sorted(started.values(), key=lambda s: s.at)
    ]


class ErasureLedger:
    """Appends to, and reads, the ledger file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def record(self, line: LedgerLine) -> None:
        """Append one line, flushed to disk before it returns."""
        await asyncio.to_thread(_append, self.path, [line])

    def merge(self, other: Path) -> int:
        """Add the lines of the ledger at ``other`` that this one lacks; how many."""
        have = {(line.id, line.state) for line in read_lines(self.path)}
        new = [line for line in read_lines(other) if (line.id, line.state) not in have]
        if new:
            _append(self.path, new)
        return len(new)

    def erasures(self) -> list[Erased]:
        """Every erasure recorded, in the order they started."""
        return erasures(read_lines(self.path))
