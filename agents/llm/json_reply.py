"""Reading a model's JSON reply tolerantly: every structured call's answer goes through here.

A model asked for a JSON object (under a schema, or only by the prompt) may still wrap it
in prose or a code fence; a server that honours no schema answers as it likes. What each
caller does with a reply that holds no object (``UNKNOWN``, a fallback, a note) is its own
business.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bus.json_values import is_object

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole reply, or the first ``{...}`` inside it."""
    for candidate in (text.strip(), *(m.group(0) for m in _OBJECT.finditer(text))):
        try:
            doc = json.loads(candidate)
        except ValueError:
            continue
        if is_object(doc):
            return doc
    return None
