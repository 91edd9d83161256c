"""Schemathesis hooks for `tests/fuzz/test_openapi.py` (loaded through ``SCHEMATHESIS_HOOKS``).

The stateful phase fills a path parameter from an earlier answer by the links it infers,
and a link can yield an empty value (an inferred source the answer did not have). The
path then has an empty segment (``/api/v1/runs//resume``), which reaches the route of
another operation (``/api/v1/runs/{run_id}``) and its 405: a request no client of the
documented operation sends. An empty id is sent as ``0`` instead, an id that exists
nowhere, so the operation's own handler answers it (a documented 404).
"""

from __future__ import annotations

from typing import Any

import schemathesis

#: An id no resource has.
ABSENT_ID = "0"


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Send an empty path parameter as an id that does not exist."""
    params: dict[str, Any] = case.path_parameters or {}
    for name, value in params.items():
        if value in ("", None):
            params[name] = ABSENT_ID
