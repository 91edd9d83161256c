"""The verifier's reply check: what it accepts, the verdict schema accepts (its quotes
optional, as the verifier reads a reply from a server that honours no schema)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agents.roles.verifier import VERDICT_SCHEMA, verdict_fits

_SCHEMA = jsonschema.Draft202012Validator({**VERDICT_SCHEMA, "required": ["verdict", "reasons"]})


@pytest.mark.parametrize(
    "doc",
    [
        {"verdict": "pass", "reasons": []},
        {"verdict": "needs_revision", "reasons": ["the total is wrong"]},
        {"verdict": "fail", "reasons": ["a", "b", "c", "d", "e"]},
        {"verdict": "fail", "reasons": ["x"], "draft_says": "17 days", "evidence_says": "27 days"},
        {"verdict": "pass", "reasons": [], "evidence_says": ""},
        {"claims": ["same", "differs", "absent"], "verdict": "pass", "reasons": []},
        {"claims": [], "verdict": "fail", "reasons": ["x"]},
    ],
)
def test_a_verdict_the_schema_takes_is_read(doc: dict[str, Any]) -> None:
    assert _SCHEMA.is_valid(doc)
    assert verdict_fits(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"verdict": "pass"},
        {"reasons": []},
        {"verdict": "maybe", "reasons": []},
        {"verdict": "pass", "reasons": "fine"},
        {"verdict": "pass", "reasons": [1]},
        {"verdict": "pass", "reasons": ["a", "b", "c", "d", "e", "f"]},
        {"verdict": "pass", "reasons": [], "note": "extra"},
        {"verdict": "pass", "other": []},
        {"verdict": True, "reasons": []},
        {"verdict": "fail", "reasons": [], "draft_says": 17},
        {"verdict": "fail", "reasons": [], "evidence_says": "x" * 241},
        {"verdict": "fail", "reasons": [], "draft_says": "x" * 161},
        {"claims": ["maybe"], "verdict": "pass", "reasons": []},
        {"claims": "same", "verdict": "pass", "reasons": []},
        {"claims": ["same"] * 5, "verdict": "pass", "reasons": []},
        ["pass", []],
        "pass",
    ],
)
def test_a_reply_the_schema_refuses_is_never_read(doc: Any) -> None:
    assert not _SCHEMA.is_valid(doc)
    assert not verdict_fits(doc)
