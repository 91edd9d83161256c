"""The fuzz report's count of cases that reached an operation's handler."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fuzz import reach

DOC = {
    "paths": {
        "/api/v1/runs": {"get": {}, "post": {}},
        "/api/v1/runs/search": {"get": {}},
        "/api/v1/runs/{run_id}": {"get": {}},
    }
}


def entry(method: str, path: str, status: int, body: object = None) -> dict[str, object]:
    text = json.dumps(body) if body is not None else ""
    return {
        "request": {"method": method, "url": f"http://127.0.0.1:1{path}?x=1"},
        "response": {"status": status, "content": {"text": text}},
    }


def test_cases_turned_away_before_the_handler_do_not_count_as_reached(tmp_path: Path) -> None:
    entries = [
        entry("GET", "/api/v1/runs/r1", 404, {"code": "run_not_found"}),  # looked up: reached
        entry("GET", "/api/v1/runs/r1", 401, {"code": "unauthorized"}),
        entry("GET", "/api/v1/runs/r1", 429, {"code": "rate_limited"}),
        entry("GET", "/api/v1/runs/search", 422, {"code": "invalid_request"}),
        entry("GET", "/api/v1/runs/search", 422, {"code": "model_not_allowed"}),
        entry("POST", "/api/v1/runs", 403, {"code": "admin_only"}),
        entry("GET", "/elsewhere", 200),
    ]
    har = tmp_path / "report.har"
    har.write_text(json.dumps({"log": {"entries": entries}}))
    ops = reach.operations(DOC)
    table = reach.count(har, ops)
    by_label = {op.label: (n["reached"], n["cases"]) for op, n in table.items()}
    assert by_label == {
        "GET /api/v1/runs": (0, 0),
        "POST /api/v1/runs": (0, 1),
        "GET /api/v1/runs/search": (1, 2),  # the literal path, not /runs/{run_id}
        "GET /api/v1/runs/{run_id}": (1, 3),
    }
    assert reach.unreached({"user": table}) == ["GET /api/v1/runs", "POST /api/v1/runs"]
    assert "GET /api/v1/runs/{run_id}" in reach.render({"user": table})
