"""Type guards for walking decoded JSON: an object's keys are strings, its values any JSON.

``isinstance(value, dict)`` tells a checker only that the keys and values are unknown;
these say what JSON guarantees, so the code that walks a reply stays typed.
"""

from __future__ import annotations

from typing import Any, TypeGuard


def is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True when `value` is a decoded JSON object."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """True when `value` is a decoded JSON array."""
    return isinstance(value, list)
