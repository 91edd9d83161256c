"""Which operations the fuzzer's cases reached: counted from schemathesis's HAR report.

A case *reached the handler* when the API did not turn it away before the operation's own
code ran: not refused for its key (401, 403), its rate (429), or its shape (400 or 422
``invalid_request``, FastAPI's validation). A 404 for an id that does not exist counts:
the handler looked it up.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_TURNED_AWAY = frozenset({401, 403, 429})


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document: ``METHOD /path/{param}``."""

    method: str
    path: str

    @property
    def label(self) -> str:
        """How the tables name it."""
        return f"{self.method.upper()} {self.path}"


def operations(doc: Mapping[str, Any]) -> list[Operation]:
    """Every operation the document declares, in its order."""
    paths: Mapping[str, Mapping[str, Any]] = doc.get("paths", {})
    return [Operation(m, p) for p, item in paths.items() for m in _METHODS if m in item]


def _matcher(ops: Iterable[Operation]) -> list[tuple[re.Pattern[str], Operation]]:
    # Literal paths before templated ones, so /runs/search is not /runs/{run_id}.
    ordered = sorted(ops, key=lambda o: (o.path.count("{"), -len(o.path)))
    out: list[tuple[re.Pattern[str], Operation]] = []
    for op in ordered:
        parts = re.split(r"(\{[^}]+\})", op.path)
        body = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
        out.append((re.compile(rf"\A{body}\Z"), op))
    return out


def reached(status: int, body: str) -> bool:
    """True when a response came from the operation's own code (see the module's doc)."""
    if status in _TURNED_AWAY:
        return False
    if status in (400, 422):
        try:
            code = json.loads(body).get("code")
        except (ValueError, AttributeError):
            return True
        return code != "invalid_request"
    return True


def count(har: Path, ops: list[Operation]) -> dict[Operation, Counter[str]]:
    """Per operation: ``cases`` sent and ``reached`` the handler, from a HAR file."""
    table: dict[Operation, Counter[str]] = {op: Counter() for op in ops}
    if not har.exists():
        return table
    match = _matcher(ops)
    entries: list[dict[str, Any]] = json.loads(har.read_text()).get("log", {}).get("entries", [])
    for entry in entries:
        request, response = entry["request"], entry["response"]
        path = urlsplit(request["url"]).path
        method = str(request["method"]).lower()
        op = next((o for rx, o in match if o.method == method and rx.match(path)), None)
        if op is None:
            continue
        table[op]["cases"] += 1
        body = str(response.get("content", {}).get("text") or "")
        if reached(int(response["status"]), body):
            table[op]["reached"] += 1
    return table


def render(tables: Mapping[str, Mapping[Operation, Counter[str]]]) -> str:
    """One row per operation, a ``reached/cases`` column per caller."""
    callers = list(tables)
    ops = list(next(iter(tables.values()), {}))
    width = max((len(op.label) for op in ops), default=10)
    lines = [f"{'operation':<{width}}  " + "  ".join(f"{c:>14}" for c in callers)]
    for op in ops:
        cells = []
        for caller in callers:
            n = tables[caller].get(op, Counter())
            cells.append(f"{n['reached']:>6}/{n['cases']:<7}")
        lines.append(f"{op.label:<{width}}  " + "  ".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)


def unreached(tables: Mapping[str, Mapping[Operation, Counter[str]]]) -> list[str]:
    """The operations no caller's case reached."""
    ops = list(next(iter(tables.values()), {}))
    return [op.label for op in ops if not any(t[op]["reached"] for t in tables.values())]
