"""Check 8, output size: results over the tool's byte limit are cut and marked truncated.

The cut keeps the result's shape so the model can still read it: the longest strings are
shortened first (ending in a visible marker), then trailing list items are dropped. The
output schema was checked before the cut, so a cut result may break a minLength/minItems;
`truncated` on the outcome tells the reader why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bus.json_values import is_array, is_object
from gateway.errors import OutputInvalid

MARK = "…[truncated]"
_MAX_ROUNDS = 1_000


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON.

    Raises:
        OutputInvalid: the value is not plain JSON (NaN, a datetime, a set...).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise OutputInvalid(f"the tool returned a value that is not plain JSON: {e}") from e
    return len(text.encode("utf-8"))


def _entries(value: Any) -> Iterable[tuple[str | int, Any]]:
    # The (key, item) pairs of a JSON object, or the (index, item) pairs of a JSON array.
    if is_object(value):
        return value.items()
    items: list[Any] = value
    return enumerate(items)


def _longest_string(
    value: Any, best: tuple[Any, str | int, int] | None = None
) -> tuple[Any, str | int, int] | None:
    # Returns (container, key, length) of the longest string value anywhere in `value`.
    for key, item in _entries(value):
        if isinstance(item, str):
            if best is None or len(item) > best[2]:
                best = (value, key, len(item))
        elif isinstance(item, dict | list):
            best = _longest_string(item, best)
    return best


def _longest_list(value: Any, best: list[Any] | None = None) -> list[Any] | None:
    if is_array(value) and value and (best is None or len(value) > len(best)):
        best = value
    for _, item in _entries(value):
        if isinstance(item, dict | list):
            best = _longest_list(item, best)
    return best


def _drop_tail(items: list[Any], excess: int) -> None:
    # Drop just enough trailing items to remove `excess` bytes (each costs its size + a comma).
    freed, drop = 0, 0
    while freed < excess and drop < len(items):
        drop += 1
        freed += json_size(items[-drop]) + 1
    del items[len(items) - drop :]


def cap_output(result: dict[str, Any], limit: int) -> tuple[dict[str, Any], bool]:
    """`result` cut to at most `limit` bytes of JSON, and whether it was cut.

    Raises:
        OutputInvalid: the result is not plain JSON.
    """
    if json_size(result) <= limit:
        return result, False
    value: dict[str, Any] = json.loads(json.dumps(result))  # a private copy to cut
    for _ in range(_MAX_ROUNDS):
        excess = json_size(value) - limit
        if excess <= 0:
            return value, True
        leaf = _longest_string(value)
        if leaf is not None and leaf[2] > len(MARK):
            container, key, length = leaf
            # Every character is at least one byte, so cutting `excess` characters frees
            # at least `excess` bytes.
            keep = max(0, length - excess - len(MARK))
            container[key] = container[key][:keep] + MARK
            continue
        longest = _longest_list(value)
        if longest is None:
            break
        _drop_tail(longest, excess)
    return {}, True
