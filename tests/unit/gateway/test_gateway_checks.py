"""The checks that are easier to read alone: output cap and schema error messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gateway.checks.output_size import MARK, cap_output, json_size
from gateway.checks.schema_errors import describe_errors
from gateway.errors import OutputInvalid


def test_small_output_is_untouched() -> None:
    result = {"a": "b"}
    assert cap_output(result, 1_000) == (result, False)


def test_the_longest_string_is_cut_first() -> None:
    result = {"short": "keep me", "long": "x" * 5_000}
    capped, truncated = cap_output(result, 500)
    assert truncated and json_size(capped) <= 500
    assert capped["short"] == "keep me"
    assert capped["long"].endswith(MARK)
    assert result["long"] == "x" * 5_000  # the original is not modified


def test_long_lists_lose_their_tail() -> None:
    capped, truncated = cap_output({"items": list(range(10_000))}, 300)
    assert truncated and json_size(capped) <= 300
    assert capped["items"][:3] == [0, 1, 2]


def test_escapes_and_multibyte_text_are_counted_in_bytes() -> None:
    capped, _ = cap_output({"t": '"\n€' * 2_000}, 1_000)
    assert json_size(capped) <= 1_000


def test_non_json_output_is_invalid() -> None:
    with pytest.raises(OutputInvalid):
        cap_output({"when": object()}, 1_000)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=200),
    lambda children: (
        st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=8), children, max_size=8)
    ),
    max_leaves=40,
)


@settings(max_examples=60, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=6),
    limit=st.integers(256, 2_000),
)
def test_the_cap_always_holds(value: dict[str, Any], limit: int) -> None:
    capped, truncated = cap_output(value, limit)
    assert json_size(capped) <= limit
    assert truncated == (json_size(value) > limit)
    json.dumps(capped)


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "mode": {"enum": ["fast", "slow"]},
        "inner": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        ({}, "name: is required"),
        ({"name": "a"}, "name: must be at least 2 characters long (got 1)"),
        ({"name": "ab", "tags": ["a", 1]}, "tags[1]: must be of type string (got integer)"),
        ({"name": "ab", "tags": ["a", "b", "c"]}, "tags: must have at most 2 items (got 3)"),
        ({"name": "ab", "mode": "medium"}, 'mode: must be one of "fast", "slow"'),
        ({"name": "ab", "inner": {}}, "inner.n: is required"),
        ({"name": "ab", "email": "nope"}, "email: must be a valid email"),
        ({"name": "ab", "zzz": 1}, "zzz: is not an allowed field (allowed: email, inner,"),
    ],
)
def test_schema_errors_name_the_field(instance: dict[str, Any], expected: str) -> None:
    message = describe_errors(
        Draft202012Validator(
            SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
        ).iter_errors(instance)
    )
    assert message is not None and expected in message


def test_messages_do_not_echo_huge_values() -> None:
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}]}}}
    message = describe_errors(Draft202012Validator(schema).iter_errors({"a": "x" * 10_000}))
    assert message is not None and len(message) < 300


def test_at_most_five_problems_are_listed() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(9)}}
    message = describe_errors(
        Draft202012Validator(schema).iter_errors({f"f{i}": "x" for i in range(9)})
    )
    assert message is not None and message.endswith("and 4 more")
